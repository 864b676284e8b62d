package proxy

import (
	"context"
	"io"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Namespace is what the servers need from the endpoint that serves their
// tools.
type Namespace interface {
	// Reconcile serves the tools of the servers that are up (each
	// [Server.Tools]) and withdraws the others'. The pool calls it
	// whenever a server's tools change: it came up, went away, or listed
	// them again.
	Reconcile()
}

// Options configure a [Pool].
type Options struct {
	// Version is agentctl's version, as the servers see it.
	Version string
	// Logger receives the pool's logs; SDKLogger, those of go-sdk's client
	// sessions. nil discards them.
	Logger, SDKLogger *slog.Logger
	// Stderr receives the stdio servers' stderr, each line prefixed with
	// the server's name; nil discards it. Never the protocol's stdout.
	Stderr io.Writer
	// Dir is the working directory of the stdio servers: the instance's
	// workspace, so that a relative path among a server's arguments means a
	// path in the workspace whichever directory the client started the
	// endpoint in, on the fast lane and on the SDK path alike. Empty: the
	// endpoint's own.
	Dir string
	// WriteTimeout bounds each message the SDK path writes to a stdio
	// server: one it has not taken by then (it is not reading its input)
	// fails, and the server is stopped and started again. 0: the mount's
	// timeout, [DefaultTimeout] unless it says otherwise. (The tap's
	// messages are bounded by what its [Link] queues instead.)
	WriteTimeout time.Duration
	// MaxLine bounds one message of a stdio server's (0: [wire.MaxLine],
	// go-sdk's 16 MiB, as for the client's messages). An answer over it
	// fails its call alone.
	MaxLine int
}

// Pool is an endpoint's external servers: it keeps each connected, from
// [Pool.Start] until its context is done.
type Pool struct {
	// mu guards servers and ctx: [Pool.Set] changes the set while the
	// pool runs.
	mu      sync.Mutex
	servers []*Server
	// ctx is the context Start gave the servers (nil before Start): the
	// servers Set adds later run under it, unless the pool has stopped.
	ctx     context.Context
	stopped bool
	ns      Namespace
	opts    Options
	logMu   sync.Mutex // one line at a time into opts.Stderr

	// start makes Start run once; stop ends what it started.
	start sync.Once
	stop  context.CancelFunc

	running, pending sync.WaitGroup
	// firstRound is closed once every server has had its first connection
	// attempt (up, or failed within its timeout).
	firstRound chan struct{}
	firstOnce  sync.Once // closes firstRound: Set may empty or fill the pool before Start
	// progress routes the SDK path's progress tokens (see Server.Handler).
	progress *ProgressRoutes[progressTarget]
	// tap sees the stdio servers' lines first ([Pool.SetTap]).
	tap atomic.Value // of tapRef
}

type tapRef struct{ Tap }

// SetTap gives the pool a tap (the fast lane's: see package lane) that each
// stdio server's connection made from then on offers its lines to first,
// and that may send the server messages of its own. Set it before
// [Pool.Start].
func (p *Pool) SetTap(t Tap) { p.tap.Store(tapRef{t}) }

// currentTap is the pool's tap; nil if it has none.
func (p *Pool) currentTap() Tap {
	r, _ := p.tap.Load().(tapRef)
	return r.Tap
}

// NewPool returns the pool of the external servers among mounts (the
// other kinds are not its business), in mount order. Nothing runs until
// [Pool.Start].
func NewPool(mounts []mount.Resolved, ns Namespace, opts Options) *Pool {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.SDKLogger == nil {
		opts.SDKLogger = opts.Logger
	}
	p := &Pool{ns: ns, opts: opts, firstRound: make(chan struct{}), progress: NewProgressRoutes[progressTarget]("agentctl-")}
	for _, m := range mounts {
		if m.Kind == mount.KindServer {
			p.servers = append(p.servers, p.newServer(m))
		}
	}
	if len(p.servers) == 0 {
		p.endFirstRound()
	}
	return p
}

// endFirstRound closes firstRound, once.
func (p *Pool) endFirstRound() { p.firstOnce.Do(func() { close(p.firstRound) }) }

func (p *Pool) newServer(m mount.Resolved) *Server {
	s := &Server{pool: p, mount: m, resolved: m, state: StateConnecting, relist: make(chan struct{}, 1),
		restart: make(chan struct{}, 1), redact: redactor(m), stderr: newStderrTail(stderrRedactor(m, os.Environ()))}
	s.log = s.redactLogger(p.opts.Logger.With("mcp_server", m.Name))
	s.sdkLog = s.redactLogger(p.opts.SDKLogger)
	return s
}

// Servers returns the servers, in mount order.
func (p *Pool) Servers() []*Server {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.servers)
}

// Server returns the server mounted as name, or nil.
func (p *Pool) Server(name string) *Server {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.servers {
		if s.mount.Name == name {
			return s
		}
	}
	return nil
}

// Set makes the external servers among mounts the pool's, while it runs
// (an instance's mounts changed): a server whose mount is unchanged but
// for its resolved prefix keeps running under its new prefix; one whose
// mount changed is stopped and started again with the new one; those no
// longer mounted are stopped, and new ones started (once the pool has
// started; before, they wait for [Pool.Start]). The namespace is told at
// once ([Namespace.Reconcile]). It returns the names of the servers
// started and stopped.
func (p *Pool) Set(mounts []mount.Resolved) (started, stopped []string) {
	p.mu.Lock()
	old := map[string]*Server{}
	for _, s := range p.servers {
		old[s.mount.Name] = s
	}
	var next []*Server
	for _, m := range mounts {
		if m.Kind != mount.KindServer {
			continue
		}
		if s := old[m.Name]; s != nil {
			delete(old, m.Name)
			if reflect.DeepEqual(s.mount.Mount, m.Mount) {
				s.setResolved(m)
				next = append(next, s)
				continue
			}
			s.stopRunning()
			stopped = append(stopped, m.Name)
		}
		s := p.newServer(m)
		if p.ctx != nil && !p.stopped {
			p.run(s)
		}
		started = append(started, m.Name)
		next = append(next, s)
	}
	for _, s := range p.servers {
		if old[s.mount.Name] == s {
			s.stopRunning()
			stopped = append(stopped, s.mount.Name)
		}
	}
	p.servers = next
	p.mu.Unlock()
	p.ns.Reconcile()
	return started, stopped
}

// Restart restarts the servers named (every server when none is): each
// one's connection is closed, its process stopped, and it is started again
// at once, without the backoff of a server that failed. It returns the
// names of the servers asked to restart, in mount order; a name the pool
// does not have is left out.
func (p *Pool) Restart(names ...string) []string {
	var out []string
	for _, s := range p.Servers() {
		if len(names) == 0 || slices.Contains(names, s.mount.Name) {
			select {
			case s.restart <- struct{}{}:
			default: // already asked
			}
			out = append(out, s.mount.Name)
		}
	}
	return out
}

// Start connects the servers in the background, until ctx is done or
// [Pool.Stop]; each one's tools reach the [Namespace] as it comes up. Only
// the first call starts anything: each server runs once, with that call's
// ctx.
func (p *Pool) Start(ctx context.Context) {
	p.start.Do(func() {
		ctx, p.stop = context.WithCancel(ctx)
		p.mu.Lock()
		p.ctx = ctx
		p.startServers()
		p.mu.Unlock()
	})
}

// Stop stops the servers that Start started, as the end of its ctx does;
// [Pool.Wait] waits for them. A pool stopped before it started never starts.
func (p *Pool) Stop() {
	p.start.Do(func() {}) // waits for a Start under way
	p.mu.Lock()
	p.stopped = true // Set starts nothing more: Wait may follow
	p.mu.Unlock()
	if p.stop != nil {
		p.stop()
	}
}

// startServers starts the servers there are at Start (p.mu held): the
// first round waits for each one's first connection attempt.
func (p *Pool) startServers() {
	p.pending.Add(len(p.servers))
	for _, s := range p.servers {
		s.firstRound = true
		p.run(s)
	}
	if len(p.servers) == 0 {
		p.endFirstRound() // a Set before Start took every server away
		return
	}
	go func() {
		p.pending.Wait()
		p.endFirstRound()
	}()
}

// run starts s under the pool's context (p.mu held), until that ends or
// s is stopped alone ([Server.stopRunning]).
func (p *Pool) run(s *Server) {
	ctx, cancel := context.WithCancel(p.ctx)
	s.cancel = cancel
	p.running.Add(2)
	go func() {
		defer p.running.Done()
		s.run(ctx)
	}()
	go func() {
		defer p.running.Done()
		s.relistLoop(ctx)
	}()
}

// Wait waits until the pool has stopped (its Start context done, or
// [Pool.Stop]) and every server it ran has stopped (their processes too:
// no orphans). Until then servers may come and go ([Pool.Set]): none left
// running is not the end. A pool never started has nothing to wait for.
func (p *Pool) Wait() {
	p.mu.Lock()
	ctx := p.ctx
	p.mu.Unlock()
	if ctx == nil {
		return
	}
	<-ctx.Done()
	p.mu.Lock()
	p.stopped = true // Set starts nothing more: its Add comes before this Wait, or never
	p.mu.Unlock()
	p.running.Wait()
}

// FirstRound is closed once every server has had its first connection
// attempt: up, or failed within its timeout. Both paths wait for it before
// a client's first tools/list, so that it shows the servers that come up
// in time rather than an empty start followed by tools/list_changed, which
// not every client follows (one that does waits less: mcpserver's firstlist.go).
func (p *Pool) FirstRound() <-chan struct{} { return p.firstRound }

// Statuses returns the servers' states, in mount order.
func (p *Pool) Statuses() []ServerStatus {
	servers := p.Servers()
	out := make([]ServerStatus, len(servers))
	for i, s := range servers {
		out[i] = s.Status()
	}
	return out
}

// progressTarget is where progress of a call forwarded by the SDK path goes.
type progressTarget struct {
	session *mcp.ServerSession
	token   any
}

// forwardProgress sends a server's progress to the client whose call it is.
func (p *Pool) forwardProgress(ctx context.Context, params *mcp.ProgressNotificationParams) {
	tok, _ := params.ProgressToken.(string)
	to, ok := p.progress.Lookup(tok)
	if !ok {
		return
	}
	fwd := *params
	fwd.ProgressToken = to.token
	_ = to.session.NotifyProgress(ctx, &fwd)
}
