package proxy

import (
	"cmp"
	"context"
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
	"time"

	"github.com/agentctl/agentctl/mcpserver/internal/wire"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// protocolVersion is the MCP version agentctl asks servers for: what
// external servers speak today, with sessions, so that their
// tools/list_changed reaches agentctl.
const protocolVersion = "2025-11-25"

// httpKeepAlive is how often agentctl pings a streamable HTTP server.
const httpKeepAlive = 15 * time.Second

// StopGrace is how long a stdio server has to exit once its input is
// closed, and again after SIGTERM, before it is killed, whichever
// transport runs it.
const StopGrace = 2 * time.Second

// connect starts (or dials) the server, initializes and lists all its tools,
// within the mount's timeout.
func (s *Server) connect(ctx context.Context) (*mcp.ClientSession, []*mcp.Tool, error) {
	timeout := s.timeout()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		t   mcp.Transport
		cmd *exec.Cmd
	)
	if s.mount.URL != "" {
		t = &mcp.StreamableClientTransport{Endpoint: s.mount.URL, HTTPClient: &http.Client{Transport: headerTransport{s.mount.Headers, cmp.Or(s.pool.opts.MaxLine, wire.MaxLine)}}}
	} else {
		cmd = s.command()
		t = &commandTransport{server: s, cmd: cmd}
	}
	var keepAlive time.Duration
	if s.mount.URL != "" {
		// A stdio server's death ends its pipe; an HTTP server's is only seen
		// by asking. The SDK closes the session after a failed ping.
		keepAlive = httpKeepAlive
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "agentctl", Version: s.pool.opts.Version}, &mcp.ClientOptions{
		Logger:    s.sdkLog,
		KeepAlive: keepAlive,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case s.relist <- struct{}{}:
			default: // a relist is already pending
			}
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			s.pool.forwardProgress(ctx, req.Params)
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
		return nil, nil, s.scrub(err)
	}
	cs, err := client.Connect(cctx, t, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		return fail(nil, explainStart(err, s.mount, s.pool.opts.Dir))
	}
	tools, err := listAll(cctx, cs)
	if err != nil {
		return fail(cs, fmt.Errorf("list its tools: %w", err))
	}
	if cmd != nil {
		s.mu.Lock()
		s.proc = cmd.Process
		s.mu.Unlock()
	}
	return cs, tools, nil
}

// command is the stdio server's command, ready to start: its environment,
// its working directory ([Options.Dir]), its stderr to the pool's log and
// to the server's tail of it (see [ServerStatus.StderrTail]), and,
// where the system allows, its own process group and a parent-death
// signal (see stopWithParent).
func (s *Server) command() *exec.Cmd {
	cmd := exec.Command(s.mount.Command, s.mount.Args...)
	cmd.Dir = s.pool.opts.Dir
	cmd.Env = os.Environ()
	for _, k := range slices.Sorted(maps.Keys(s.mount.Env)) {
		cmd.Env = append(cmd.Env, k+"="+s.mount.Env[k])
	}
	s.stderr.endLine() // what the last process left unfinished
	cmd.Stderr = s.stderr
	if s.pool.opts.Stderr != nil {
		cmd.Stderr = io.MultiWriter(s.stderr, newLinePrefixer(&s.pool.logMu, s.pool.opts.Stderr, "["+s.mount.Name+"] "))
	}
	stopWithParent(cmd)
	return cmd
}

// writeTimeout bounds each message the SDK path writes to the server
// ([Options.WriteTimeout]).
func (s *Server) writeTimeout() time.Duration {
	if d := s.pool.opts.WriteTimeout; d > 0 {
		return d
	}
	return s.timeout()
}

// explainStart says why a server did not start: its command, or the
// directory it is started in (dir, [Options.Dir]), which the system's
// error would not tell apart.
func explainStart(err error, m mount.Resolved, dir string) error {
	if dir != "" && m.URL == "" {
		if _, serr := os.Stat(dir); serr != nil {
			return fmt.Errorf("cannot start %q in the instance's workspace %s: %v; recreate the folder, or create the instance again with --workspace", m.Command, dir, errors.Unwrap(serr))
		}
	}
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

// headerTransport adds configured headers to every request.
// headerTransport sends the mount's headers with each request, and bounds
// each message of the answers as a stdio server's are ([Options.MaxLine]):
// go-sdk reads an HTTP answer whole, so a server's 1 GB result would be held
// in memory.
type headerTransport struct {
	headers map[string]string
	max     int
}

func (h headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range h.headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil && h.max > 0 {
		rec, _ := req.Context().Value(callRecordKey{}).(*callRecord)
		resp.Body = &messageLimit{ReadCloser: resp.Body, max: h.max, rec: rec}
	}
	return resp, err
}

// messageLimit fails a read once more than max bytes came without a blank
// line: a JSON answer is one message, a stream of server-sent events one
// per blank line.
type messageLimit struct {
	io.ReadCloser
	max, n int
	nl     bool // the last byte was a line's end
	// rec is the call's record, when the request is a tools/call of
	// [Server.Handler]'s: it is told why the answer was not read, as a
	// stdio server's record is (go-sdk says only "request terminated
	// without response").
	rec *callRecord
}

func (l *messageLimit) Read(p []byte) (int, error) {
	n, err := l.ReadCloser.Read(p)
	for i, b := range p[:n] {
		switch {
		case b == '\n' && l.nl:
			l.n = 0
		case b == '\n':
			l.nl = true
		case b != '\r':
			l.nl = false
		}
		if l.n++; l.n > l.max {
			why := fmt.Sprintf("an answer over the limit of %d bytes (ask the tool for less)", l.max)
			if l.rec != nil {
				l.rec.mu.Lock()
				l.rec.why = why
				l.rec.mu.Unlock()
			}
			return i, errors.New(why)
		}
	}
	return n, err
}
