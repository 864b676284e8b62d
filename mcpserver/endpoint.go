package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/mcpserver/kb"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/agentctl/agentctl/mcpserver/proxy"
	"github.com/agentctl/agentctl/mcpserver/proxy/lane"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Store is what the built-in tools need from the instance store. The
// instance package's Store satisfies it; tests use fakes.
type Store interface {
	// AskQuestion stores an open question and returns its id.
	AskQuestion(ctx context.Context, instanceID, text string, choices []string) (string, error)
	// PollAnswer reports a question's status ([AskAnswered], [AskExpired],
	// [AskCancelled], or "open" while it waits) and its answer, if it has
	// one. A question another endpoint or agentctl closed is no longer
	// open, though this one never closed it.
	PollAnswer(ctx context.Context, instanceID, questionID string) (answer, status string, err error)
	// ExpireQuestion and CancelQuestion close an open question that got no
	// answer in time, or whose call was cancelled; false if it was no longer
	// open (an answer arrived first). The store names the states it keeps.
	ExpireQuestion(ctx context.Context, instanceID, questionID string) (bool, error)
	CancelQuestion(ctx context.Context, instanceID, questionID string) (bool, error)
	// RecordProgress stores a progress event under the canonical tool name.
	RecordProgress(ctx context.Context, instanceID, tool, status, message string, percent *float64) (int64, error)
	// Exists reports whether the instance is still in the store; get_instance
	// says so when it was deleted while the endpoint runs.
	Exists(ctx context.Context, instanceID string) (bool, error)
	// HeadlessRun reports whether a headless `agentctl instance run` of
	// the instance is under way: ask_user_question then asks where the
	// question policy says for headless runs.
	HeadlessRun(ctx context.Context, instanceID string) (bool, error)
	// RecordUnanswered stores the event that a question of tool ended
	// without an answer (the store names its status).
	RecordUnanswered(ctx context.Context, instanceID, tool, message string) error
	// OpenQuestions counts the instance's open questions, whichever
	// endpoint (process, host) asked them: the instance stays blocked
	// while one waits.
	OpenQuestions(ctx context.Context, instanceID string) (int, error)
}

// AnswerWatcher is what a store offers, beside [Store], when it can say
// that a question may have been answered (PostgreSQL's LISTEN/NOTIFY, from
// any host; SQLite's data version): ask_user_question then reads the
// answer at once instead of at its next poll. A receive means "read
// again"; a nil channel never receives.
type AnswerWatcher interface {
	WatchAnswer(ctx context.Context, questionID string) (<-chan struct{}, func())
}

// Instance describes the instance an endpoint serves, as get_instance shows it.
type Instance struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Agent     string `json:"agent"`
	Workspace string `json:"workspace"`
}

// Config is everything an endpoint needs; it comes from the instance record
// alone, never from an agent definition.
type Config struct {
	Instance   Instance
	ServerName string
	// Naming is the client's capability, snapshotted in the record.
	Naming agents.ToolNaming
	// Mounts are the instance's knowledge bases and external servers;
	// [New] checks them and resolves their prefixes with PrefixMode.
	Mounts     []mount.Mount
	PrefixMode mount.PrefixMode
	// Resolved, when set, are the mounts already resolved (an instance's
	// record, checked against the prefix contract by whoever read it):
	// taken as they are, instead of Mounts and PrefixMode.
	Resolved []mount.Resolved
	// ServerStderr receives external servers' stderr, each line prefixed
	// with the server's name; nil discards it. Never the protocol's stdout.
	ServerStderr io.Writer
	// ServerDir is the working directory of the external stdio servers
	// ([proxy.Options.Dir]): `mcp serve` gives the instance's workspace.
	// Empty: the endpoint's own.
	ServerDir string
	// ServerWriteTimeout bounds each message the SDK path writes to a stdio
	// server ([proxy.Options.WriteTimeout]); 0: each mount's timeout.
	ServerWriteTimeout time.Duration
	// QuestionTimeout bounds ask_user_question's wait for an answer
	// (default [DefaultQuestionTimeout]).
	QuestionTimeout time.Duration
	// Questions is where ask_user_question asks, by kind of run (the
	// record's snapshot of the definition's policy; empty places take
	// [agents.Questions.WithDefaults]).
	Questions agents.Questions
	// ReadingTime is the least time in which a person could have read a
	// question and declined it: a client's decline or cancel of an
	// elicitation that comes sooner was nobody's, and the question goes to
	// the store instead (default [DefaultReadingTime]).
	ReadingTime time.Duration
	Store       Store
	// Logger receives the endpoint's logs (stderr for stdio); nil discards.
	Logger *slog.Logger
	// Version is reported as the server's version.
	Version string
	// PollInterval is how often a waiting question checks the store (default 100ms).
	PollInterval time.Duration
	// HeartbeatInterval is how often a waiting question sends progress to
	// clients that asked for it, so their request timers do not fire (default 10s).
	HeartbeatInterval time.Duration
	// NoFastLane makes [Endpoint.ServeStdio] hand every message to the SDK,
	// external tools' calls too (for comparison and troubleshooting).
	NoFastLane bool
	// KBIndexDir is where the knowledge bases' shared search indexes live
	// ([github.com/agentctl/agentctl/mcpserver/kb.Options.IndexDir]); empty
	// means a private index per endpoint. KBRefreshInterval is how often at
	// most they are reconciled with their folders while searches come
	// (0: the kb package's default).
	KBIndexDir        string
	KBRefreshInterval time.Duration
	// ToolsListChanged says that the client follows
	// notifications/tools/list_changed ([agents.Capabilities.ToolsListChanged],
	// snapshotted in the record): its first tools/list waits at most
	// FirstListWait for the external servers, not for every server's first
	// connection attempt. See [DefaultFirstListWait].
	ToolsListChanged bool
	// FirstListWait bounds that wait, counted from [Endpoint.Start]; 0
	// answers at once with what is ready. `mcp serve` gives
	// [DefaultFirstListWait] unless told otherwise. Unused when
	// ToolsListChanged is false.
	FirstListWait time.Duration
	// DrainTimeout bounds how long [Endpoint.ServeStdio] waits, once the
	// client's input has ended, for the answers to the requests it has
	// read; those still unanswered then get a JSON-RPC error. Default:
	// [github.com/agentctl/agentctl/mcpserver/guard.DefaultDrain], 10s.
	DrainTimeout time.Duration
}

// Endpoint is one instance's MCP server.
type Endpoint struct {
	cfg      Config
	server   *mcp.Server
	registry *Registry
	log      *slog.Logger
	sdkLog   *slog.Logger
	kbs      []*kb.Base
	// mounts are cfg.Mounts with their prefixes resolved, or the set
	// [Endpoint.SetMounts] made since (under nsMu).
	mounts []mount.Resolved
	// reloadMu makes one SetMounts at a time, and none once closed;
	// change is the last one's (under changeMu), for get_instance.
	reloadMu sync.Mutex
	closed   bool
	// instr, once the mounts changed, are the initialize instructions for
	// the new set, which later sessions get instead of the SDK's (set at
	// New); nil until then.
	instr    atomic.Pointer[string]
	changeMu sync.Mutex
	change   *ToolsChange

	// External servers (package proxy) and the namespace they share with
	// the rest (servers.go).
	pool      *proxy.Pool
	nsMu      sync.RWMutex           // held by reconcile; tools/list and routing read under it
	inProcess []NamedTool            // built-in and knowledge-base tools, with their names for this client
	external  map[string]*servedTool // served external names
	// down are the external names last served by a server that is not
	// connected now: a call of one is told to try again, not that the
	// tool does not exist (a client that lists once keeps calling it).
	down      map[string]*proxy.Server
	reported  map[string][]string // collisions already logged
	conflicts []Conflict
	// withheld are external tools an in-process tool keeps out; reported
	// those already logged.
	withheld         []Withheld
	reportedWithheld map[Withheld]bool
	// lane forwards external stdio servers' tool calls raw, when serving
	// on stdio (see stdio.go).
	lane atomic.Pointer[lane.Lane]
	// listing is tools/list's encoding for the lane.
	listing listing
	// first is the gate in front of the first tools/list (firstlist.go).
	first firstList
	// waiting counts the questions waiting in the store (the instance is
	// blocked until none is).
	waiting atomic.Int64
	// unblocking: a status "running" the store did not take is being
	// tried again (see [Endpoint.recordStatus]); stop ends that at Close.
	unblocking atomic.Bool
	stop       chan struct{}
	// stopCause, once set ([Endpoint.Stopping]), is why the endpoint is
	// being stopped: the waits for answers it ends say so.
	stopCause atomic.Pointer[error]
}

// DefaultQuestionTimeout is how long ask_user_question waits for an answer
// unless told otherwise: the endpoint's default ([Config.QuestionTimeout])
// and the one new instances record (`instance create --question-timeout`).
const DefaultQuestionTimeout = 10 * time.Minute

// DefaultReadingTime is [Config.ReadingTime]'s default: nobody reads a
// question and decides to decline it in less than a second, while the
// clients that decline without a person do so within milliseconds.
const DefaultReadingTime = time.Second

// New builds the endpoint: the SDK server, the registry with the built-in
// tools, and the presentation and routing middleware.
func New(cfg Config) (*Endpoint, error) {
	if cfg.ServerName == "" {
		return nil, errors.New("mcpserver: no server name")
	}
	if cfg.Naming.Namespacing == "" {
		return nil, errors.New("mcpserver: no naming capability")
	}
	if cfg.Store == nil {
		return nil, errors.New("mcpserver: no store")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.QuestionTimeout <= 0 {
		cfg.QuestionTimeout = DefaultQuestionTimeout
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 100 * time.Millisecond
	}
	if cfg.ReadingTime <= 0 {
		cfg.ReadingTime = DefaultReadingTime
	}
	cfg.Questions = cfg.Questions.WithDefaults()
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 10 * time.Second
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	mounts, err := resolveMounts(cfg)
	if err != nil {
		return nil, err
	}
	sdkLog := sdkLogger(cfg.Logger)
	server := mcp.NewServer(implementation(cfg), &mcp.ServerOptions{Logger: sdkLog, Instructions: instructions(cfg, mounts)})
	e := &Endpoint{stop: make(chan struct{}), cfg: cfg, server: server, registry: NewRegistry(server), log: cfg.Logger, sdkLog: sdkLog,
		mounts:   mounts,
		external: map[string]*servedTool{},
		down:     map[string]*proxy.Server{},
		first:    firstList{ready: make(chan struct{})}}
	e.pool = proxy.NewPool(mounts, namespace{e}, proxy.Options{Version: cfg.Version, Logger: cfg.Logger, SDKLogger: sdkLog,
		Stderr: cfg.ServerStderr, Dir: cfg.ServerDir, WriteTimeout: cfg.ServerWriteTimeout})
	if err := e.addBuiltins(); err != nil {
		return nil, err
	}
	if err := e.addMounts(); err != nil {
		e.Close()
		return nil, err
	}
	e.inProcess = inProcessTools(e.registry, cfg.ServerName, cfg.Naming)
	// Installed last, so it runs first: before the SDK's lookup, validation,
	// logging and dispatch.
	server.AddReceivingMiddleware(e.presentation)
	return e, nil
}

func implementation(cfg Config) *mcp.Implementation {
	return &mcp.Implementation{Name: "agentctl", Title: "agentctl instance " + cfg.Instance.ID, Version: cfg.Version}
}

// resolveMounts is cfg.Resolved, or cfg.Mounts checked and resolved with
// cfg.PrefixMode.
func resolveMounts(cfg Config) ([]mount.Resolved, error) {
	if cfg.Resolved != nil {
		return cfg.Resolved, nil
	}
	for _, m := range cfg.Mounts {
		if err := m.Validate(); err != nil {
			return nil, err
		}
	}
	mode, err := mount.ParsePrefixMode(string(cfg.PrefixMode))
	if err != nil {
		return nil, err
	}
	return mount.Resolve(cfg.ServerName, mode, cfg.Mounts)
}

// addMounts opens each knowledge base and registers its tools (external
// servers are the pool's).
func (e *Endpoint) addMounts() error {
	for _, m := range e.mounts {
		if m.Kind == mount.KindServer {
			continue
		}
		base, err := kb.Open(m.Name, m.Path, kb.Options{ReadOnly: m.ReadOnly, MaxBytes: m.MaxBytes,
			IndexDir: e.cfg.KBIndexDir, RefreshInterval: e.cfg.KBRefreshInterval})
		if err != nil {
			return &MountError{Mount: m.Name, Err: err}
		}
		e.kbs = append(e.kbs, base)
		if err := RegisterKBTools(e.registry, base, m.EffectivePrefix, m.ToolName); err != nil {
			return err
		}
	}
	return nil
}

// Start connects the external servers in the background, until ctx is
// done; their tools appear as each comes up. Run calls it; a Start before
// Run is the one that starts them ([proxy.Pool.Start] runs once), and Run
// still stops them when it returns.
func (e *Endpoint) Start(ctx context.Context) {
	e.pool.Start(ctx)
	e.startFirstList()
}

// awaitFirstRound lets a client's first tools/list see the external
// servers that come up within their timeout ([proxy.Pool.FirstRound]).
func (e *Endpoint) awaitFirstRound(ctx context.Context) {
	select {
	case <-e.pool.FirstRound():
	case <-ctx.Done():
	}
}

// Wait waits until the external servers started by Start have stopped.
func (e *Endpoint) Wait() { e.pool.Wait() }

// MountError is a mount the endpoint cannot serve (a knowledge base's
// folder gone, say): invalid configuration, not a crash.
type MountError struct {
	Mount string
	Err   error
}

func (e *MountError) Error() string { return e.Err.Error() }
func (e *MountError) Unwrap() error { return e.Err }

// Close releases the mounts (knowledge bases' folders and index refreshers).
func (e *Endpoint) Close() error {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	if !e.closed {
		close(e.stop)
	}
	e.closed = true
	var errs []error
	for _, kb := range e.kbs {
		errs = append(errs, kb.Close())
	}
	e.kbs = nil
	return errors.Join(errs...)
}

// Stopping tells the endpoint why it is about to be stopped (a signal, a
// daemon's shutdown), before its sessions end: a question whose wait that
// ends is recorded as unanswered because the endpoint stopped, not because
// the client stopped waiting. The first cause stands.
func (e *Endpoint) Stopping(cause error) { e.stopCause.CompareAndSwap(nil, &cause) }

// Server returns the SDK server.
func (e *Endpoint) Server() *mcp.Server { return e.server }

// Registry returns the endpoint's tool registry.
func (e *Endpoint) Registry() *Registry { return e.registry }

// Run serves the endpoint over t until the peer disconnects (a clean end)
// or ctx is done (a signal: also a clean end).
func (e *Endpoint) Run(ctx context.Context, t mcp.Transport) error {
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		e.pool.Stop() // also those of a Start before Run, with its own ctx
		e.pool.Wait() // every external server stopped: no orphans
		e.Close()
	}()
	e.Start(ctx)
	ss, err := e.server.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	if l := e.lane.Load(); l != nil {
		l.SetSession(ss)
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case <-ctx.Done():
		e.log.Info("stopping", "reason", context.Cause(ctx))
		ss.Close()
		<-done
		return nil
	case err := <-done:
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	}
}

// presentation is the receiving middleware of the naming contract: it shows
// transport names in tools/list and maps tools/call names back to canonical
// names before anything else sees them.
func (e *Endpoint) presentation(next mcp.MethodHandler) mcp.MethodHandler {
	style, server := e.cfg.Naming.Namespacing, e.cfg.ServerName
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "initialize", "server/discover":
			return e.withInstructions(next(ctx, method, req))
		case "tools/list":
			e.awaitFirstList(ctx)
			// One consistent namespace: never half of a reconcile.
			e.nsMu.RLock()
			defer e.nsMu.RUnlock()
			res, err := next(ctx, method, req)
			if err != nil || style != agents.NamespacingSuffix {
				return res, err
			}
			lr, ok := res.(*mcp.ListToolsResult)
			if !ok {
				return res, err
			}
			return e.presentList(lr), nil
		case "tools/call":
			cr, ok := req.(*mcp.CallToolRequest)
			if !ok || cr.Params == nil {
				return next(ctx, method, req)
			}
			cr.Params.Arguments = proxy.Arguments(cr.Params.Arguments)
			if !e.registry.Has(cr.Params.Name) {
				e.awaitFirstRound(ctx)
			}
			e.nsMu.RLock()
			route := RouteToolCall(e.registry, style, server, cr.Params.Name)
			why := ""
			var down *proxy.Server
			if route.Err != nil {
				why = e.notServed(cr.Params.Name)
				down = e.down[cr.Params.Name]
			}
			e.nsMu.RUnlock()
			if down != nil && !down.Up() {
				st := down.Status()
				return proxy.ToolError(fmt.Sprintf("tool %q is not available now: MCP server %q, which serves it, is not connected (%s: %s); agentctl is connecting it again, try again shortly",
					cr.Params.Name, down.Mount().Name, st.State, st.Error)), nil
			}
			if route.Err != nil {
				e.log.Debug("tools/call of an unknown tool", "name", cr.Params.Name)
				msg := route.Err.Error()
				if why != "" {
					msg += "; " + why
				}
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
			}
			// The request is this call's own; the registry is never touched.
			cr.Params.Name = route.Canonical
			if e.log.Enabled(ctx, slog.LevelDebug) {
				e.log.Debug("tools/call", "tool", route.Canonical)
			}
		}
		return next(ctx, method, req)
	}
}

// notServed says, under nsMu, why an external tool of that name is not
// served (a collision, or withheld for an in-process tool), or "": the
// model that calls it learns why, as get_instance would tell it.
func (e *Endpoint) notServed(name string) string {
	for _, c := range e.conflicts {
		if c.Name == name {
			return fmt.Sprintf("an external tool of that name is not served: %s offer it, and the model could not tell them apart (get_instance lists the conflict)", strings.Join(c.Sources, " and "))
		}
	}
	for _, w := range e.withheld {
		if w.Name == name {
			return fmt.Sprintf("an external tool of that name is withheld: %s", w.Reason)
		}
	}
	return ""
}

// presentList returns a copy of lr with transport names. Tools whose name
// changes are copied; the SDK's own *Tool values are never modified.
func (e *Endpoint) presentList(lr *mcp.ListToolsResult) *mcp.ListToolsResult {
	out := *lr
	out.Tools = make([]*mcp.Tool, len(lr.Tools))
	for i, t := range lr.Tools {
		name := PresentToolName(e.registry, e.cfg.Naming.Namespacing, e.cfg.ServerName, t.Name)
		if name == t.Name {
			out.Tools[i] = t
			continue
		}
		c := *t
		c.Name = name
		out.Tools[i] = &c
	}
	return &out
}

// ToolNames lists the registered tools with their transport and
// model-visible names, sorted by canonical name.
func (e *Endpoint) ToolNames() []NamedTool {
	return registryTools(e.registry, e.cfg.ServerName, e.cfg.Naming)
}

// sdkLogger quiets the SDK's connection chatter (logged at info) unless debug
// logging is on; its warnings and errors always pass.
func sdkLogger(l *slog.Logger) *slog.Logger {
	if l.Enabled(context.Background(), slog.LevelDebug) {
		return l
	}
	return slog.New(minLevel{l.Handler(), slog.LevelWarn})
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(a), h.min}
}
func (h minLevel) WithGroup(n string) slog.Handler { return minLevel{h.Handler.WithGroup(n), h.min} }
