package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"syscall"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/mcpserver/guard"
	"github.com/agentctl/agentctl/mcpserver/proxy/lane"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves the endpoint on in and out (the process's stdin and
// stdout) until the client's input ends or ctx is done. The input guard
// (package guard) reads the client's lines; calls of external stdio
// servers' tools take the fast lane (package lane) unless
// [Config.NoFastLane]; everything else goes through the SDK as with
// [Endpoint.Run].
//
// Every request read gets an answer before ServeStdio returns, but for
// those the client cancelled, which get none: at the end of the input it
// waits for the answers still being worked on, for at most
// [Config.DrainTimeout]; what is unanswered then, or when ctx is done, is
// answered with a JSON-RPC error (code -32004, "server is closing: ...").
// A line that is not JSON gets a parse error (-32700), and serving goes on.
func (e *Endpoint) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	g := guard.New(out, guard.Options{Drain: e.cfg.DrainTimeout})
	defer g.Close()
	// Stopped (a signal): answer what is pending now, before the servers
	// are stopped under the calls.
	defer context.AfterFunc(ctx, func() {
		e.Stopping(context.Cause(ctx))
		g.Close()
	})()
	var take guard.Taker
	if !e.cfg.NoFastLane {
		l := lane.New(lane.Options{Endpoint: laneRoutes{e}, Client: g, Implementation: implementation(e.cfg), Logger: e.log})
		e.lane.Store(l)
		e.pool.SetTap(l) // each stdio server's lines go by the lane first
		take = l.FromClient
		defer l.Close()
	}
	go func() {
		if err := g.Serve(ctx, in, take); err != nil {
			e.log.Debug("the client's input ended", "error", err)
		}
	}()
	err := e.Run(ctx, g.Transport())
	if err != nil && (g.InputEnded() || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE)) {
		// The client hung up; what failed after that (a write to its
		// closed output) is part of a clean end.
		e.log.Debug("client gone", "error", err)
		return nil
	}
	return err
}

// laneRoutes is the endpoint as the fast lane sees it ([lane.Endpoint]).
type laneRoutes struct{ e *Endpoint }

// Route resolves the client's name as the SDK path does ([RouteToolCall])
// to an external tool whose server is up.
func (r laneRoutes) Route(name string) (lane.Route, bool) {
	e := r.e
	e.nsMu.RLock()
	defer e.nsMu.RUnlock()
	route := RouteToolCall(e.registry, e.cfg.Naming.Namespacing, e.cfg.ServerName, name)
	if route.Err != nil {
		return lane.Route{}, false
	}
	st := e.external[route.Canonical]
	if st == nil || !st.s.Up() {
		return lane.Route{}, false
	}
	return lane.Route{Server: st.s.Name(), Tool: st.tool.Name, Canonical: route.Canonical}, true
}

// ToolsList is tools/list's result, encoded once per generation of the
// registry, as the SDK path presents it ([Endpoint.presentList]); not
// before the first tools/list may be answered (the SDK path waits for
// that: firstlist.go).
func (r laneRoutes) ToolsList() (uint64, []byte, bool) {
	e := r.e
	if !e.firstListReady() {
		return 0, nil, false
	}
	return e.listing.get(e)
}

// listing is tools/list's result, encoded once per generation of the
// registry.
type listing struct {
	mu     sync.Mutex
	gen    uint64
	result []byte
}

// get returns the encoded result; false when the SDK must answer (more
// tools than fit one page).
func (c *listing) get(e *Endpoint) (uint64, []byte, bool) {
	e.nsMu.RLock() // one consistent namespace: never half of a reconcile
	defer e.nsMu.RUnlock()
	gen, tools := e.registry.Listed()
	if len(tools) > mcp.DefaultPageSize {
		return 0, nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.result == nil || c.gen != gen {
		res := &mcp.ListToolsResult{Tools: tools}
		// go-sdk's default, which it fills in before sending: the field is
		// required on the wire (go-sdk v1.8.0 (*Cacheable).normalize,
		// mcp/protocol.go).
		res.CacheScope = "public"
		if e.cfg.Naming.Namespacing == agents.NamespacingSuffix {
			res = e.presentList(res)
		}
		b, err := json.Marshal(res)
		if err != nil {
			return 0, nil, false
		}
		c.gen, c.result = gen, b
	}
	return c.gen, c.result, true
}
