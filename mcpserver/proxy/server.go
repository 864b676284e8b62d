package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultTimeout bounds connecting to an external MCP server and listing
// its tools, unless its mount says otherwise.
const DefaultTimeout = 10 * time.Second

// A server's states, as get_instance shows them.
const (
	StateConnecting = "connecting"
	StateUp         = "up"
	StateDown       = "down"
)

// Restart backoff of a failed server.
const (
	minBackoff = 250 * time.Millisecond
	maxBackoff = 30 * time.Second
)

// Server is one mounted external MCP server: its connection, its tools,
// and the loop that keeps it connected.
type Server struct {
	pool *Pool
	// mount is the server's mount as the pool got it; its resolved prefix
	// may change since ([Pool.Set]): resolved has the current one.
	mount mount.Resolved
	log   *slog.Logger
	// sdkLog is go-sdk's logger for the server's client sessions.
	sdkLog *slog.Logger
	// redact takes the mount's secrets out of texts (see redactor); every
	// error is scrubbed with it before it is stored, logged or shown.
	redact *strings.Replacer
	// stderr is the tail of a stdio server's stderr, over its restarts.
	stderr *stderrTail

	mu       sync.Mutex
	resolved mount.Resolved
	session  *mcp.ClientSession
	tools    []*mcp.Tool // as listed by the server, by their own names
	state    string
	lastErr  string
	// proc is the running stdio server's process.
	proc *os.Process
	// outputReports limits how often its skipped output is logged.
	outputReports reportLimit

	// relist asks the relist worker to list the tools again (coalescing:
	// several tools/list_changed in a row make one relist).
	relist chan struct{}
	// restart asks the run loop to restart the server ([Pool.Restart]).
	restart chan struct{}
	// cancel stops the server alone (set when it starts: [Pool.run]);
	// firstRound says that the pool's first round waits for its first
	// connection attempt.
	cancel     context.CancelFunc
	firstRound bool
}

// ServerStatus is a server's state, as get_instance shows it.
type ServerStatus struct {
	Name  string `json:"name"`
	State string `json:"state"`
	// Error is why the server is not up; while it is up, the last thing
	// wrong with its output that agentctl skipped, keeping it (a line that
	// is not JSON, an answer over the size limit).
	Error string `json:"error,omitempty"`
	Tools int    `json:"tools"`
	// StderrTail is, while a stdio server is not up, the last lines it
	// wrote to its stderr (its processes', at most [StderrTailLines] lines
	// and [StderrTailBytes] bytes): why it failed, in its own words. Its
	// secrets are taken out (every value of the mount's env, and those of
	// secret-looking variables and flags: see stderrRedactor), and it is
	// valid UTF-8; control characters are as the server wrote them.
	StderrTail []string `json:"stderr_tail,omitempty"`
}

// Name is the server's name: its mount's.
func (s *Server) Name() string { return s.mount.Name }

// Mount is the server's mount, its prefix resolved.
func (s *Server) Mount() mount.Resolved {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resolved
}

// setResolved gives the server its mount's new resolution (its prefix).
func (s *Server) setResolved(m mount.Resolved) {
	s.mu.Lock()
	s.resolved = m
	s.mu.Unlock()
}

// stopRunning stops the server for good (it is no longer mounted): its
// connection closes and its process stops, in the background. A server
// never started has nothing to stop.
func (s *Server) stopRunning() {
	// Not up from now on: no call is routed to it while it stops.
	s.set(StateDown, nil, nil, errors.New("no longer mounted"))
	if s.cancel != nil {
		s.cancel()
	}
}

// Status returns the server's state.
func (s *Server) Status() ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := ServerStatus{Name: s.mount.Name, State: s.state, Error: s.lastErr, Tools: len(s.tools)}
	if s.state != StateUp {
		st.StderrTail = s.stderr.Lines()
	}
	return st
}

// reportOutput reports something wrong with the server's output that
// agentctl skipped, keeping the server (a line skipped: what it was, and
// what it cost): in the pool's log, in the servers' log (its stderr's
// destination) under its name, and in its [ServerStatus], which
// get_instance shows, until its state changes.
// A server that writes every request's log line to its stdout would make
// a line of each: past [reportBurst] in a [reportWindow], the rest of the
// window's are counted, and said in the next report.
func (s *Server) reportOutput(problem string) {
	problem = s.scrub(errors.New(problem)).Error()
	s.mu.Lock()
	s.lastErr = problem
	report, skipped := s.outputReports.take(time.Now())
	s.mu.Unlock()
	if !report {
		return
	}
	if skipped > 0 {
		problem += fmt.Sprintf(" (and %d more such problems since the last report, not reported one by one)", skipped)
	}
	s.log.Warn("MCP server wrote output agentctl could not read", "problem", problem)
	if w := s.pool.opts.Stderr; w != nil {
		s.pool.logMu.Lock()
		fmt.Fprintf(w, "[%s] agentctl: %s\n", s.mount.Name, problem)
		s.pool.logMu.Unlock()
	}
}

// reportBurst problems are reported in each reportWindow; the rest are
// counted.
const (
	reportBurst  = 10
	reportWindow = time.Minute
)

// reportLimit lets [reportBurst] reports through in each [reportWindow].
type reportLimit struct {
	start   time.Time
	n       int // reported in the window
	skipped int // not reported since the last report
}

// take says whether a problem seen at now is reported, and how many were
// not since the last that was.
func (l *reportLimit) take(now time.Time) (report bool, skipped int) {
	if now.Sub(l.start) >= reportWindow {
		l.start, l.n = now, 0
	}
	if l.n >= reportBurst {
		l.skipped++
		return false, 0
	}
	l.n++
	skipped, l.skipped = l.skipped, 0
	return true, skipped
}

// Up reports whether the server is connected.
func (s *Server) Up() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == StateUp
}

// Tools returns the server's tools as it lists them, by their own names;
// none unless it is up. The definitions are the server's: copy one before
// changing it.
func (s *Server) Tools() []*mcp.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools
}

func (s *Server) set(state string, cs *mcp.ClientSession, tools []*mcp.Tool, err error) {
	s.mu.Lock()
	s.state, s.session, s.tools = state, cs, tools
	s.lastErr = ""
	if err != nil {
		s.lastErr = err.Error()
	}
	s.mu.Unlock()
}

func (s *Server) current() *mcp.ClientSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session
}

// run keeps the server connected until ctx is done: connect, publish its
// tools, wait for it to go away, withdraw them, back off, again.
func (s *Server) run(ctx context.Context) {
	backoff := minBackoff
	first := s.firstRound
	firstDone := func() {
		if first {
			first = false
			s.pool.pending.Done()
		}
	}
	defer firstDone()
	for {
		// A restart asked for before this attempt is this attempt.
		select {
		case <-s.restart:
		default:
		}
		s.set(StateConnecting, nil, nil, nil)
		cs, tools, err := s.connect(ctx)
		if ctx.Err() != nil {
			if cs != nil {
				cs.Close()
			}
			s.stopProcess()
			return
		}
		if err != nil {
			s.stderr.endLine()
			s.set(StateDown, nil, nil, err)
			s.log.Warn("MCP server unavailable; its tools are absent until it is up", "error", err, "retry_in", backoff)
			firstDone()
		} else {
			backoff = minBackoff
			s.set(StateUp, cs, tools, nil)
			s.pool.ns.Reconcile()
			firstDone()
			s.log.Info("MCP server connected", "tools", len(tools))
			waitErr := waitSession(ctx, cs, s.restart)
			s.stopProcess()
			if ctx.Err() != nil {
				return
			}
			if errors.Is(waitErr, errRestart) {
				s.stderr.endLine()
				s.set(StateConnecting, nil, nil, nil)
				s.pool.ns.Reconcile()
				s.log.Info("MCP server restarted on request (agentctl instance restart)")
				backoff = minBackoff
				continue
			}
			waitErr = s.scrub(orEOF(waitErr))
			why := fmt.Errorf("the server went away: %v", waitErr)
			if stopped := (*stoppedError)(nil); errors.As(waitErr, &stopped) {
				why = stopped // agentctl ended it: not reading its input
			}
			s.stderr.endLine()
			s.set(StateDown, nil, nil, why)
			s.pool.ns.Reconcile()
			s.log.Warn("MCP server went away; restarting it", "error", waitErr, "retry_in", backoff)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.restart: // asked to restart: no more waiting
			backoff = minBackoff
			continue
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// stopProcess kills what is left of the stdio server's process group once
// its session has ended (its transport has stopped the server itself).
func (s *Server) stopProcess() {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	killGroup(p)
}

// errRestart ends a session that [Pool.Restart] asked to restart.
var errRestart = errors.New("restart requested")

// waitSession waits for the session to end, or closes it when ctx is done
// (which stops a stdio server's process) or a restart is asked for.
func waitSession(ctx context.Context, cs *mcp.ClientSession, restart <-chan struct{}) error {
	done := make(chan error, 1)
	go func() { done <- cs.Wait() }()
	select {
	case err := <-done:
		return err
	case <-restart:
		cs.Close()
		<-done
		return errRestart
	case <-ctx.Done():
		cs.Close()
		<-done
		return ctx.Err()
	}
}

func orEOF(err error) error {
	if err == nil {
		return io.EOF
	}
	return err
}

// relistLoop follows the server's tools/list_changed, one listing at a
// time, until ctx is done.
func (s *Server) relistLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.relist:
			s.relistOnce(ctx)
		}
	}
}

func (s *Server) relistOnce(ctx context.Context) {
	cs := s.current()
	if cs == nil {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	tools, err := listAll(lctx, cs)
	if err != nil {
		s.log.Warn("MCP server changed its tools but listing them failed", "error", s.scrub(err))
		return
	}
	s.mu.Lock()
	if s.session == cs {
		s.tools = tools
	}
	s.mu.Unlock()
	s.pool.ns.Reconcile()
}

func (s *Server) timeout() time.Duration {
	if d := time.Duration(s.mount.Timeout); d > 0 {
		return d
	}
	return DefaultTimeout
}
