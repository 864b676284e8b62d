package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentctl/agentctl/mcpserver/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What a forwarded tools/call looks like, whichever path carries it: the
// SDK path ([Server.Handler]) and the fast lane (package lane) both call
// these, so that a client sees the same either way.

// Arguments returns a tools/call's arguments as handlers and servers get
// them: absent or null arguments are no arguments, {}. (go-sdk v1.8.0
// panics applying schema defaults to "arguments": null.)
func Arguments(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}")
	}
	return raw
}

// ForwardsMeta reports whether a member of a client's tools/call _meta
// goes upstream with the call. The client's own keys do; the protocol's
// ("io.modelcontextprotocol/...") do not, as they describe the client to
// agentctl, not to the server (which speaks its own version with agentctl);
// nor does the progress token, which agentctl replaces with its own.
func ForwardsMeta(key string) bool {
	return key != "progressToken" && !strings.HasPrefix(key, "io.modelcontextprotocol/")
}

// ForwardedMeta is the client's _meta as sent upstream: the members
// [ForwardsMeta] passes; nil when none does.
func ForwardedMeta(m mcp.Meta) mcp.Meta {
	var out mcp.Meta
	for k, v := range m {
		if !ForwardsMeta(k) {
			continue
		}
		if out == nil {
			out = mcp.Meta{}
		}
		out[k] = v
	}
	return out
}

// FailedDuringCall is the text of the tool error that answers a call whose
// server failed before answering it (a crash, a broken connection), the
// same on both paths: the cause as the lane sees it ("EOF"), without the
// wrapping go-sdk's client session adds to it (`calling "tools/call": EOF`,
// go-sdk v1.8.0 mcp/transport.go, func call), which says nothing the rest
// of the text does not.
func FailedDuringCall(server string, cause error) string {
	return fmt.Sprintf("MCP server %q failed during the call: %v; agentctl is restarting it", server, callFailure(cause))
}

// DidNotGetCall is the text of the tool error that answers a call that
// could not be written to its server: "MCP server "web" did not get the
// call: it is not reading its input", whichever path it took.
func DidNotGetCall(server string, cause error) string {
	return fmt.Sprintf("MCP server %q did not get the call: %v", server, cause)
}

// callFailure is err without go-sdk's `calling "tools/call": ` wrapping,
// if it has exactly that.
func callFailure(err error) error {
	if inner := errors.Unwrap(err); inner != nil && err.Error() == `calling "tools/call": `+inner.Error() {
		return inner
	}
	return err
}

// ToolError is a tool result with isError set: the model reads it, where a
// protocol error would only reach the client.
func ToolError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: true}
}

// ProgressRoutes maps the progress tokens agentctl sends upstream, in place
// of a client's, back to where that progress goes (T: the client's session
// and token on the SDK path, the lane's call on the lane).
type ProgressRoutes[T any] struct {
	prefix string
	next   atomic.Int64
	mu     sync.Mutex
	routes map[string]T
}

// NewProgressRoutes returns an empty table whose tokens start with prefix.
func NewProgressRoutes[T any](prefix string) *ProgressRoutes[T] {
	return &ProgressRoutes[T]{prefix: prefix, routes: map[string]T{}}
}

// Add returns a new token for progress that goes to to.
func (p *ProgressRoutes[T]) Add(to T) string {
	var buf [40]byte
	tok := string(strconv.AppendInt(append(buf[:0], p.prefix...), p.next.Add(1), 10))
	p.mu.Lock()
	p.routes[tok] = to
	p.mu.Unlock()
	return tok
}

// Lookup returns where progress with token tok goes; false once the call
// is over (or for a token agentctl did not send).
func (p *ProgressRoutes[T]) Lookup(tok string) (T, bool) {
	p.mu.Lock()
	to, ok := p.routes[tok]
	p.mu.Unlock()
	return to, ok
}

// Remove forgets tok: its call is over.
func (p *ProgressRoutes[T]) Remove(tok string) {
	p.mu.Lock()
	delete(p.routes, tok)
	p.mu.Unlock()
}

// Handler returns the SDK path's handler of the server's tool named tool
// (its own name): the call goes to the server with its arguments and the
// _meta [ForwardedMeta] passes, and its result comes back unchanged (its
// structuredContent and _meta as the server wrote them, for a stdio
// server: see [SetAside]). An error
// the server answers with is forwarded as it is, whatever its code; only a
// broken connection restarts the server. A call the server does not answer
// within the mount's call timeout is cancelled upstream and answered with
// [CallTimedOut]; one a stdio server does not take within the mount's
// timeout ([Options.WriteTimeout]) fails with [DidNotGetCall], and the
// server, which is not reading its input, is restarted.
func (s *Server) Handler(tool string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		cs := s.current()
		if cs == nil {
			st := s.Status()
			return ToolError(fmt.Sprintf("MCP server %q is not connected (%s): %s; try again shortly", s.mount.Name, st.State, st.Error)), nil
		}
		params := &mcp.CallToolParams{Name: tool, Arguments: req.Params.Arguments, Meta: ForwardedMeta(req.Params.Meta)}
		if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
			ours := s.pool.progress.Add(progressTarget{req.Session, tok})
			defer s.pool.progress.Remove(ours)
			params.SetProgressToken(ours)
		}
		rec := &callRecord{}
		defer rec.done()
		timeout := s.mount.CallTimeoutOrDefault()
		// When cctx ends, go-sdk sends notifications/cancelled upstream
		// (v1.8.0 mcp/transport.go, func call).
		cctx, cancel := context.WithTimeout(context.WithValue(ctx, callRecordKey{}, rec), timeout)
		defer cancel()
		res, err := cs.CallTool(cctx, params)
		if errors.Is(err, mcp.ErrSessionMissing) && cctx.Err() == nil {
			// An HTTP server that restarted has forgotten the session: it
			// did not take the call, so the call is made again, once, on
			// the session that replaces it.
			cs.Close()
			wctx, stop := context.WithTimeout(cctx, sessionAgain)
			next := s.nextSession(wctx, cs)
			stop()
			if next != nil {
				cs = next
				res, err = cs.CallTool(cctx, params)
			}
		}
		ans := rec.snapshot()
		if err == nil {
			ans.aside.Restore(res)
			return res, nil
		}
		var notReading *notReadingError
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.As(err, &notReading):
			// The server is being stopped, to be started again.
			return ToolError(DidNotGetCall(s.mount.Name, notReading) + "; agentctl is restarting it"), nil
		case cctx.Err() != nil:
			return ToolError(CallTimedOut(s.mount.Name, timeout)), nil
		case ans.why != "":
			return ToolError(AnswerUnreadable(s.mount.Name, ans.why)), nil
		case ans.rpcErr != nil:
			return nil, ans.rpcErr // the server's own error, unchanged
		case ans.answered:
			return ToolError(NotACallResult(s.mount.Name, err)), nil
		}
		// No answer was read (an HTTP server's calls are not recorded).
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) && !isTransportFailure(rpcErr) {
			return nil, rpcErr // the server's own protocol error, unchanged
		}
		// The connection is broken (a crashed process, a dead HTTP server):
		// close the session so the run loop restarts the server.
		cs.Close()
		return ToolError(FailedDuringCall(s.mount.Name, s.scrub(callFailure(err)))), nil
	}
}

// sessionAgain bounds the wait for a new session before a call is made
// again on it.
const sessionAgain = 10 * time.Second

// nextSession waits, until ctx ends, for the server's session after old
// (closed: the run loop connects again); nil if none comes.
func (s *Server) nextSession(ctx context.Context, old *mcp.ClientSession) *mcp.ClientSession {
	for {
		if cs := s.current(); cs != nil && cs != old {
			return cs
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// isTransportFailure tells go-sdk's own transport errors (which it reports
// as JSON-RPC errors with its implementation codes) from a server's answer
// where no [callRecord] says which it was (a streamable HTTP server's).
func isTransportFailure(e *jsonrpc.Error) bool {
	switch e.Code {
	case wire.CodeUnknown, wire.CodeClientClosing, wire.CodeServerClosing, wire.CodeRejected:
		return true
	}
	return false
}
