package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/agentctl/agentctl/mcpserver/proxy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultUpstreamTimeout bounds connecting to an external MCP server and
// listing its tools.
const DefaultUpstreamTimeout = 10 * time.Second

// upstreamProtocolVersion is the MCP version agentctl asks external servers for.
const upstreamProtocolVersion = "2025-11-25"

// Upstream states, as get_instance shows them.
const (
	UpstreamConnecting = "connecting"
	UpstreamUp         = "up"
	UpstreamDown       = "down"
)

// httpKeepAlive is how often agentctl pings a streamable HTTP server.
const httpKeepAlive = 15 * time.Second

// Restart backoff of a failed external server.
const (
	minBackoff = 250 * time.Millisecond
	maxBackoff = 30 * time.Second
)

// upstream is one mounted external MCP server: its connection, its tools,
// and the loop that keeps it connected.
type upstream struct {
	e     *Endpoint
	mount mount.Resolved

	mu      sync.Mutex
	session *mcp.ClientSession
	tools   []*mcp.Tool // as listed upstream, by their own names
	state   string
	lastErr string

	// proc is the running stdio server's process.
	proc *os.Process

	// relist asks the relist worker to list the tools again (coalescing:
	// several tools/list_changed in a row make one relist).
	relist chan struct{}
}

// UpstreamStatus is an external server's state, as get_instance shows it.
type UpstreamStatus struct {
	Name  string `json:"name"`
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	Tools int    `json:"tools"`
}

func (u *upstream) status() UpstreamStatus {
	u.mu.Lock()
	defer u.mu.Unlock()
	return UpstreamStatus{Name: u.mount.Name, State: u.state, Error: u.lastErr, Tools: len(u.tools)}
}

func (u *upstream) set(state string, cs *mcp.ClientSession, tools []*mcp.Tool, err error) {
	u.mu.Lock()
	u.state, u.session, u.tools = state, cs, tools
	u.lastErr = ""
	if err != nil {
		u.lastErr = err.Error()
	}
	u.mu.Unlock()
}

// up reports whether the server is connected.
func (u *upstream) up() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.state == UpstreamUp
}

func (u *upstream) current() (*mcp.ClientSession, []*mcp.Tool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.session, u.tools
}

// run keeps the server connected until ctx is done: connect, register its
// tools, wait for it to go away, unregister, back off, again.
func (u *upstream) run(ctx context.Context) {
	backoff := minBackoff
	log := u.e.log.With("mcp_server", u.mount.Name)
	first := true
	defer func() {
		if first {
			u.e.pending.Done()
		}
	}()
	for {
		u.set(UpstreamConnecting, nil, nil, nil)
		cs, tools, err := u.connect(ctx)
		if ctx.Err() != nil {
			if cs != nil {
				cs.Close()
			}
			u.stopProcess()
			return
		}
		if err != nil {
			u.set(UpstreamDown, nil, nil, err)
			log.Warn("MCP server unavailable; its tools are absent until it is up", "error", err, "retry_in", backoff)
			if first {
				first = false
				u.e.pending.Done()
			}
		} else {
			backoff = minBackoff
			u.set(UpstreamUp, cs, tools, nil)
			u.e.reconcile()
			if first {
				first = false
				u.e.pending.Done()
			}
			log.Info("MCP server connected", "tools", len(tools))
			waitErr := waitSession(ctx, cs)
			if ctx.Err() != nil {
				u.stopProcess()
				return
			}
			u.stopProcess()
			u.set(UpstreamDown, nil, nil, fmt.Errorf("the server went away: %v", orEOF(waitErr)))
			u.e.reconcile()
			log.Warn("MCP server went away; restarting it", "error", orEOF(waitErr), "retry_in", backoff)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// stopProcess kills what is left of the stdio server's process group once
// its session has ended (the SDK has stopped the server itself).
func (u *upstream) stopProcess() {
	u.mu.Lock()
	p := u.proc
	u.proc = nil
	u.mu.Unlock()
	killGroup(p)
}

// waitSession waits for the session to end, or closes it when ctx is done
// (which stops a stdio server's process).
func waitSession(ctx context.Context, cs *mcp.ClientSession) error {
	done := make(chan error, 1)
	go func() { done <- cs.Wait() }()
	select {
	case err := <-done:
		return err
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

// connect starts (or dials) the server, initializes and lists all its tools,
// within the mount's timeout.
func (u *upstream) connect(ctx context.Context) (*mcp.ClientSession, []*mcp.Tool, error) {
	timeout := cmpOr(time.Duration(u.mount.Timeout), DefaultUpstreamTimeout)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		t   mcp.Transport
		cmd *exec.Cmd
	)
	if u.mount.URL != "" {
		t = &mcp.StreamableClientTransport{Endpoint: u.mount.URL, HTTPClient: &http.Client{Transport: headerTransport{u.mount.Headers}}}
	} else {
		cmd = exec.Command(u.mount.Command, u.mount.Args...)
		cmd.Env = os.Environ()
		for _, k := range slices.Sorted(maps.Keys(u.mount.Env)) {
			cmd.Env = append(cmd.Env, k+"="+u.mount.Env[k])
		}
		cmd.Stderr = io.Discard
		if u.e.cfg.UpstreamLog != nil {
			cmd.Stderr = &linePrefixer{mu: &u.e.logMu, w: u.e.cfg.UpstreamLog, prefix: "[" + u.mount.Name + "] "}
		}
		stopWithParent(cmd)
		if l := u.e.lane.Load(); l != nil {
			t = l.Transport(cmd, u.mount.Name)
		} else {
			// Without the fast lane, go-sdk's own transport and close sequence.
			t = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
		}
	}
	var keepAlive time.Duration
	if u.mount.URL != "" {
		// A stdio server's death ends its pipe; an HTTP server's is only seen
		// by asking. The SDK closes the session after a failed ping.
		keepAlive = httpKeepAlive
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "agentctl", Version: u.e.cfg.Version}, &mcp.ClientOptions{
		Logger:    u.e.sdkLog,
		KeepAlive: keepAlive,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case u.relist <- struct{}{}:
			default: // a relist is already pending
			}
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			u.e.forwardProgress(ctx, req.Params)
		},
	})
	fail := func(cs *mcp.ClientSession, err error) (*mcp.ClientSession, []*mcp.Tool, error) {
		if cs != nil {
			cs.Close()
		}
		if cmd != nil && cmd.Process != nil {
			cmd.Process.Kill() // a server that hung at start may ignore its closed stdin
			killGroup(cmd.Process)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, nil, fmt.Errorf("no answer within %s", timeout)
		}
		return nil, nil, err
	}
	// The 2025-11-25 protocol: what external servers speak today, with
	// sessions, so their tools/list_changed reaches us.
	cs, err := client.Connect(cctx, t, &mcp.ClientSessionOptions{ProtocolVersion: upstreamProtocolVersion})
	if err != nil {
		return fail(nil, explainStart(err, u.mount))
	}
	tools, err := listAll(cctx, cs)
	if err != nil {
		return fail(cs, fmt.Errorf("list its tools: %w", err))
	}
	if cmd != nil {
		u.mu.Lock()
		u.proc = cmd.Process
		u.mu.Unlock()
	}
	return cs, tools, nil
}

func explainStart(err error, m mount.Resolved) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return fmt.Errorf("cannot start %q: %v", m.Command, ee.Err)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && strings.Contains(pe.Op, "exec") {
		return fmt.Errorf("cannot start %q: %v", m.Command, pe.Err)
	}
	return err
}

func listAll(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// relistLoop follows the server's tools/list_changed, one listing at a
// time, until ctx is done.
func (u *upstream) relistLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-u.relist:
			u.relistOnce(ctx)
		}
	}
}

func (u *upstream) relistOnce(ctx context.Context) {
	cs, _ := u.current()
	if cs == nil {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, cmpOr(time.Duration(u.mount.Timeout), DefaultUpstreamTimeout))
	defer cancel()
	tools, err := listAll(lctx, cs)
	if err != nil {
		u.e.log.Warn("MCP server changed its tools but listing them failed", "mcp_server", u.mount.Name, "error", err)
		return
	}
	u.mu.Lock()
	if u.session == cs {
		u.tools = tools
	}
	u.mu.Unlock()
	u.e.reconcile()
}

// forward returns the handler of one upstream tool: the call goes to the
// server with its arguments, and its result comes back unchanged.
func (u *upstream) forward(base string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		cs, _ := u.current()
		if cs == nil {
			st := u.status()
			return proxy.ToolError(fmt.Sprintf("MCP server %q is not connected (%s): %s; try again shortly", u.mount.Name, st.State, st.Error)), nil
		}
		params := &mcp.CallToolParams{Name: base, Arguments: req.Params.Arguments, Meta: proxy.ForwardedMeta(req.Params.Meta)}
		if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
			ours := u.e.progress.Add(progressTarget{req.Session, tok})
			defer u.e.progress.Remove(ours)
			params.SetProgressToken(ours)
		}
		res, err := cs.CallTool(ctx, params)
		if err == nil {
			return res, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) && !isTransportFailure(rpcErr) {
			return nil, rpcErr // the server's own protocol error, unchanged
		}
		// The connection is broken (a crashed process, a dead HTTP server):
		// close the session so the run loop restarts the server.
		cs.Close()
		return proxy.ToolError(proxy.FailedDuringCall(u.mount.Name, err)), nil
	}
}

// isTransportFailure tells go-sdk's own transport errors (which it reports
// as JSON-RPC errors with its implementation codes) from a server's answer.
func isTransportFailure(e *jsonrpc.Error) bool {
	switch e.Code {
	case -32001, -32003, -32004, -32005: // unknown, client closing, server closing, rejected by transport
		return true
	}
	return false
}

// progressTarget is where progress of a call forwarded by the SDK path goes.
type progressTarget struct {
	session *mcp.ServerSession
	token   any
}

func (e *Endpoint) forwardProgress(ctx context.Context, params *mcp.ProgressNotificationParams) {
	id, _ := params.ProgressToken.(string)
	r, ok := e.progress.Lookup(id)
	if !ok {
		return
	}
	fwd := *params
	fwd.ProgressToken = r.token
	_ = r.session.NotifyProgress(ctx, &fwd)
}

// Conflict is a tool name that several sources want; none of them is served.
type Conflict struct {
	Name    string   `json:"name"`
	Sources []string `json:"sources"`
}

// reconcile makes the registry serve the tools of the external servers that
// are up, next to the built-ins and knowledge bases. A name that two sources
// want is served by neither, reported on stderr and by get_instance.
func (e *Endpoint) reconcile() {
	e.nsMu.Lock()
	defer e.nsMu.Unlock()
	type candidate struct {
		u    *upstream
		tool *mcp.Tool
	}
	want := map[string][]candidate{}
	for _, u := range e.upstreams {
		_, tools := u.current()
		for _, t := range tools {
			name := u.mount.ToolName(t.Name)
			want[name] = append(want[name], candidate{u, t})
		}
	}
	conflicts := map[string][]string{}
	invalid := map[string]bool{}
	for name, cands := range want {
		var sources []string
		if ent, ok := e.staticEntry(name); ok {
			sources = append(sources, ent.Source)
		}
		for _, c := range cands {
			sources = append(sources, c.u.mount.Source())
		}
		if len(sources) > 1 {
			conflicts[name] = sources
		}
		if err := ValidateToolName(name); err != nil {
			e.log.Warn("an external tool has an invalid name; it is not served", "tool", name, "source", cands[0].u.mount.Source(), "error", err)
			invalid[name] = true
		}
	}
	// Built-ins and knowledge-base tools step aside while a collision lasts.
	for name := range e.static {
		if _, clash := conflicts[name]; clash {
			e.registry.Withhold(name)
		} else {
			e.registry.Restore(name)
		}
	}
	// External tools: drop what is gone, changed or in conflict; add the
	// rest. An unchanged definition stays registered (a relist or a restart
	// of its server must not make a call fail or tell clients of a change).
	for name, served := range e.external {
		cands := want[name]
		_, clash := conflicts[name]
		if clash || len(cands) != 1 || cands[0].u != served.u || !sameTool(cands[0].tool, served.tool) {
			e.registry.Remove(name)
			delete(e.external, name)
		} else {
			served.tool = cands[0].tool
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		cands := want[name]
		if _, clash := conflicts[name]; clash || invalid[name] {
			continue
		}
		if _, ok := e.external[name]; ok {
			continue
		}
		c := cands[0]
		tool := *c.tool
		tool.Name = name
		ent := Entry{Name: name, Source: c.u.mount.Source(), Kind: KindExternal, Mount: c.u.mount.Name, Prefix: c.u.mount.EffectivePrefix, Base: c.tool.Name}
		if err := e.registry.AddRawTool(ent, &tool, c.u.forward(c.tool.Name)); err != nil {
			e.log.Warn("cannot serve an external tool", "tool", name, "error", err)
			continue
		}
		e.external[name] = &servedTool{u: c.u, tool: c.tool}
	}
	// Report each new collision once.
	var list []Conflict
	for _, name := range slices.Sorted(maps.Keys(conflicts)) {
		list = append(list, Conflict{Name: name, Sources: conflicts[name]})
		if !slices.Equal(e.reported[name], conflicts[name]) {
			e.log.Warn("tool name collision: neither is served", "tool", name, "sources", strings.Join(conflicts[name], " and "))
		}
	}
	e.reported = conflicts
	e.conflicts = list
}

// servedTool is an external tool the registry serves.
type servedTool struct {
	u    *upstream
	tool *mcp.Tool
}

// sameTool compares two listings of a tool by value.
func sameTool(a, b *mcp.Tool) bool {
	if a == b {
		return true
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// staticEntry returns the built-in or knowledge-base entry of name, also
// when it is withheld.
func (e *Endpoint) staticEntry(name string) (Entry, bool) {
	if _, ok := e.static[name]; !ok {
		return Entry{}, false
	}
	if ent, ok := e.registry.Lookup(name); ok {
		return ent, true
	}
	return e.registry.Withheld(name)
}

// Conflicts returns the tool names withheld because several sources want them.
func (e *Endpoint) Conflicts() []Conflict {
	e.nsMu.RLock()
	defer e.nsMu.RUnlock()
	return slices.Clone(e.conflicts)
}

// UpstreamStatuses returns the external servers' states, by mount order.
func (e *Endpoint) UpstreamStatuses() []UpstreamStatus {
	out := make([]UpstreamStatus, len(e.upstreams))
	for i, u := range e.upstreams {
		out[i] = u.status()
	}
	return out
}

// headerTransport adds configured headers to every request.
type headerTransport struct{ headers map[string]string }

func (h headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range h.headers {
		req.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(req)
}

// linePrefixer writes each line with a prefix, so several servers' stderr
// can share one log file.
type linePrefixer struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix string
	buf    bytes.Buffer
}

func (p *linePrefixer) Write(b []byte) (int, error) {
	p.buf.Write(b)
	for {
		line, err := p.buf.ReadBytes('\n')
		if err != nil {
			p.buf.Write(line) // keep the partial line for the next write
			return len(b), nil
		}
		p.mu.Lock()
		_, werr := io.WriteString(p.w, p.prefix+string(line))
		p.mu.Unlock()
		if werr != nil {
			return len(b), werr
		}
	}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
