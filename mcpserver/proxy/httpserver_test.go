package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHTTPAnswerLimit: an HTTP server's answer is bounded as a stdio
// server's is (Options.MaxLine): one over it fails its call alone, and the
// next call is served. go-sdk reads an HTTP answer whole, so a 40 MB result
// was relayed, and the endpoint held it all in memory.
func TestHTTPAnswerLimit(t *testing.T) {
	t.Parallel()
	up := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "1"}, nil)
	type in struct {
		N int `json:"n"`
	}
	mcp.AddTool(up, &mcp.Tool{Name: "big"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", a.N)}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := NewPool([]mount.Resolved{{Mount: mount.Mount{Kind: mount.KindServer, Name: "big", URL: srv.URL}}}, &reconciles{}, Options{MaxLine: 64 << 10})
	p.Start(ctx)
	t.Cleanup(func() { p.Stop(); p.Wait() })
	<-p.FirstRound()
	h := p.Servers()[0].Handler("big")
	call := func(n int) *mcp.CallToolResult {
		t.Helper()
		res, err := h(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "big", Arguments: json.RawMessage(`{"n":` + strconv.Itoa(n) + `}`)}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := call(200 << 10); !res.IsError || res.Content[0].(*mcp.TextContent).Text != `MCP server "big" sent an answer over the limit of 65536 bytes (ask the tool for less); agentctl skipped it, so this call failed (the server keeps running)` {
		t.Fatalf("an answer over the limit: %v %.200s", res.IsError, res.Content[0].(*mcp.TextContent).Text)
	}
	// The failed call may have the server's session started again.
	testkit.Eventually(t, "the next call served", func() bool {
		res := call(10)
		return !res.IsError && res.Content[0].(*mcp.TextContent).Text == "xxxxxxxxxx"
	})
}

// TestHTTPServerRestartedCallRetried: an HTTP server that restarted has
// forgotten agentctl's session and answers the next call 404 (go-sdk's
// ErrSessionMissing): it did not take that call, so agentctl makes it
// again on a new session instead of failing it ("session not found").
func TestHTTPServerRestartedCallRetried(t *testing.T) {
	t.Parallel()
	newHandler := func() http.Handler {
		up := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
		mcp.AddTool(up, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
		})
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil)
	}
	var current atomic.Pointer[http.Handler]
	h := newHandler()
	current.Store(&h)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*current.Load()).ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := NewPool([]mount.Resolved{{Mount: mount.Mount{Kind: mount.KindServer, Name: "echo", URL: srv.URL}}}, &reconciles{}, Options{})
	p.Start(ctx)
	t.Cleanup(func() { p.Stop(); p.Wait() })
	<-p.FirstRound()
	call := func() *mcp.CallToolResult {
		t.Helper()
		res, err := p.Servers()[0].Handler("echo")(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := call(); res.IsError {
		t.Fatalf("before the restart: %+v", res.Content)
	}
	h2 := newHandler() // the server restarted: its sessions are gone
	current.Store(&h2)
	if res := call(); res.IsError || res.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Fatalf("the first call after the restart: %s", res.Content[0].(*mcp.TextContent).Text)
	}
}
