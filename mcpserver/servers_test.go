package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/agentctl/agentctl/mcpserver/proxy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestProxyListsAndForwards(t *testing.T) {
	forEachPath(t, func(t *testing.T, path servePath) {
		kb := mount.Mount{Kind: mount.KindKB, Name: "docs", Path: t.TempDir()}
		p := startProxyOn(t, path, mount.PrefixModeMountName, kb, withBin(t, mcpMount("up", "-tools", "5", "-page2")))
		testkit.Eventually(t, "the server's tools", func() bool { return p.ep.Registry().Has("up__tool_4") })

		res, err := p.cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		var echo *mcp.Tool
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
			if tl.Name == "up__echo" {
				echo = tl
			}
		}
		for _, want := range []string{"up__tool_0", "up__tool_4", "up__echo", "up__slow", "docs__concept_read", "ask_user_question"} {
			if !slices.Contains(names, want) {
				t.Errorf("tools/list lacks %s: %v", want, names)
			}
		}
		// Descriptions, annotations and schemas pass through unchanged.
		if echo.Description != "Echo the text back." || echo.Annotations == nil || !echo.Annotations.ReadOnlyHint || echo.Title != "Echo" {
			t.Fatalf("echo definition changed: %+v", echo)
		}
		if props, _ := echo.InputSchema.(map[string]any)["properties"].(map[string]any); props["text"] == nil {
			t.Fatalf("echo schema changed: %v", echo.InputSchema)
		}

		r, err := p.call(t, "up__echo", map[string]any{"text": "hi"})
		if err != nil || r.IsError || resultText(r) != "hi" || r.StructuredContent.(map[string]any)["text"] != "hi" {
			t.Fatalf("echo: %v %+v", err, r)
		}
		r, err = p.call(t, "up__fail", nil)
		if err != nil || !r.IsError || resultText(r) != "upstream says no" {
			t.Fatalf("fail: %v %+v", err, r)
		}
		_, err = p.call(t, "up__nosuch", nil)
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, `server "up" has no tool "nosuch"`) {
			t.Fatalf("unknown tool: %v", err)
		}
		if _, err := p.call(t, "echo", map[string]any{"text": "x"}); err == nil || !strings.Contains(err.Error(), `did you mean "up__echo"`) {
			t.Fatalf("bare name: %v", err)
		}
		p.checkPath(t, path, 2)
	})
}

func TestProxyForwardsProgressAndCancellation(t *testing.T) {
	forEachPath(t, func(t *testing.T, path servePath) {
		p := startProxyOn(t, path, mount.PrefixModeMountName, withBin(t, mcpMount("up")))
		testkit.Eventually(t, "tools", func() bool { return p.ep.Registry().Has("slow") })

		params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 300}}
		params.SetProgressToken("tok-1")
		if r, err := p.cs.CallTool(context.Background(), params); err != nil || r.IsError {
			t.Fatalf("slow: %v %+v", err, r)
		}
		for n := ""; n != "progress"; {
			select {
			case n = <-p.notes:
			case <-time.After(time.Minute):
				t.Fatal("no progress forwarded")
			}
		}

		// Cancelled once its first progress shows the server's handler runs.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			for {
				select {
				case tok := <-p.tokens:
					if tok == "tok-2" {
						cancel()
						return
					}
				case <-ctx.Done():
					return
				}
			}
		}()
		long := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 60000}}
		long.SetProgressToken("tok-2")
		if _, err := p.cs.CallTool(ctx, long); err == nil {
			t.Fatal("a cancelled call succeeded")
		}
		testkit.Eventually(t, "the server to see the cancellation", func() bool { return strings.Contains(p.log.String(), "[up] slow cancelled") })
		p.checkPath(t, path, 2)
	})
}

func TestProxyCrashMidCallAndRestart(t *testing.T) {
	forEachPath(t, func(t *testing.T, path servePath) {
		pidfile := filepath.Join(t.TempDir(), "pid")
		p := startProxyOn(t, path, mount.PrefixModeMountName, withBin(t, mcpMount("up", "-pidfile", pidfile, "-stderr", "hello from the server")))
		testkit.Eventually(t, "tools", func() bool { return p.ep.Registry().Has("crash") })
		firstPID := testkit.WaitPID(t, pidfile)

		r, err := p.call(t, "crash", nil)
		if err != nil || !r.IsError || !strings.Contains(resultText(r), `MCP server "up" failed during the call`) {
			t.Fatalf("crash: %v %+v", err, r)
		}
		testkit.Eventually(t, "a restarted server", func() bool {
			return fileExists(pidfile) && testkit.WaitPID(t, pidfile) != firstPID && p.ep.Registry().Has("echo")
		})
		if r, err := p.call(t, "echo", map[string]any{"text": "again"}); err != nil || resultText(r) != "again" {
			t.Fatalf("after restart: %v %+v", err, r)
		}
		// The server's stderr went to the log, prefixed, never to stdout.
		if !strings.Contains(p.log.String(), "[up] hello from the server\n") {
			t.Fatalf("log: %q", p.log.String())
		}
		p.checkPath(t, path, 2)
		pid := testkit.WaitPID(t, pidfile)
		p.stop(t)
		if testkit.Alive(pid) {
			t.Fatalf("server %d still running after the endpoint stopped", pid)
		}
	})
}

// TestStartThenRunStartsServersOnce: Run after Start starts no second copy
// of an external server, and still stops the one Start started.
func TestStartThenRunStartsServersOnce(t *testing.T) {
	t.Parallel()
	pidfile := filepath.Join(t.TempDir(), "pid")
	cfg := testConfig(agents.NamespacingPrefix, newFakeStore())
	cfg.Mounts = []mount.Mount{withBin(t, mcpMount("up", "-stderr", "started", "-pidfile", pidfile))}
	log := &testkit.Buffer{}
	cfg.ServerStderr = log
	ep, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ep.Start(ctx)
	st, ct := mcp.NewInMemoryTransports()
	ran := make(chan error, 1)
	go func() { ran <- ep.Run(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The first tools/list waits until every server has had its first start.
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	pid := testkit.WaitPID(t, pidfile)
	cs.Close()
	select {
	case err := <-ran:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after the client left")
	}
	if n := strings.Count(log.String(), "[up] started\n"); n != 1 {
		t.Errorf("the server started %d times, want once:\n%s", n, log.String())
	}
	if testkit.Alive(pid) {
		t.Errorf("server %d outlived Run", pid)
	}
}

func TestProxyFaultsAtStart(t *testing.T) {
	t.Parallel()
	t.Run("missing binary", func(t *testing.T) {
		t.Parallel()
		m := mcpMount("gone")
		m.Command = filepath.Join(t.TempDir(), "no-such-server")
		p := startProxy(t, mount.PrefixModeMountName, m)
		testkit.Eventually(t, "the failure", func() bool { return p.ep.ServerStatuses()[0].State == proxy.StateDown })
		st := p.ep.ServerStatuses()[0]
		if !strings.Contains(st.Error, "cannot start") {
			t.Fatalf("status %+v", st)
		}
		// The endpoint serves the rest, and get_instance says why.
		r, err := p.call(t, "get_instance", nil)
		if err != nil || r.IsError || !strings.Contains(resultText(r), `"state": "down"`) || !strings.Contains(resultText(r), "cannot start") {
			t.Fatalf("get_instance: %v %s", err, resultText(r))
		}
	})
	t.Run("exits at start, then comes up", func(t *testing.T) {
		t.Parallel()
		flag := filepath.Join(t.TempDir(), "fail")
		if err := os.WriteFile(flag, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		p := startProxy(t, mount.PrefixModeMountName, withBin(t, mcpMount("up", "-flag-file", flag)))
		testkit.Eventually(t, "the failure", func() bool {
			st := p.ep.ServerStatuses()[0]
			return st.State == proxy.StateDown && st.Error != ""
		})
		if p.ep.Registry().Has("echo") {
			t.Fatal("tools of a failed server are served")
		}
		os.Remove(flag)
		testkit.Eventually(t, "the retry", func() bool { return p.ep.Registry().Has("echo") })
		testkit.Eventually(t, "tools/list_changed", func() bool {
			for {
				select {
				case n := <-p.notes:
					if n == "list_changed" {
						return true
					}
				default:
					return false
				}
			}
		})
	})
	t.Run("down after it served: a call is told to try again", func(t *testing.T) {
		// A client that lists once (Claude Code, Codex) keeps calling the
		// names it was given: while their server is down, the call is told
		// so, not that the tool does not exist ("unknown tool", "nothing
		// is mounted").
		t.Parallel()
		flag := filepath.Join(t.TempDir(), "fail")
		p := startProxy(t, mount.PrefixModeMountName, withBin(t, mcpMount("up", "-flag-file", flag)))
		testkit.Eventually(t, "the tools", func() bool { return p.ep.Registry().Has("echo") })
		if err := os.WriteFile(flag, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if r, err := p.call(t, "crash", nil); err != nil || !r.IsError {
			t.Fatalf("crash: %v %+v", err, r)
		}
		testkit.Eventually(t, "the tools gone", func() bool { return !p.ep.Registry().Has("echo") })
		r, err := p.call(t, "echo", map[string]any{"text": "x"})
		if err != nil || !r.IsError || !strings.HasPrefix(resultText(r), `tool "echo" is not available now: MCP server "up", which serves it, is not connected (`) ||
			!strings.HasSuffix(resultText(r), "agentctl is connecting it again, try again shortly") {
			t.Fatalf("a call while its server is down: %v %s", err, resultText(r))
		}
		if _, err := p.call(t, "nosuch", nil); err == nil || !strings.Contains(err.Error(), "unknown tool") {
			t.Fatalf("a name no server served: %v", err)
		}
		os.Remove(flag)
		testkit.Eventually(t, "the server back", func() bool {
			r, err := p.call(t, "echo", map[string]any{"text": "x"})
			return err == nil && !r.IsError
		})
	})
	t.Run("hangs past the timeout", func(t *testing.T) {
		t.Parallel()
		pidfile := filepath.Join(t.TempDir(), "pid")
		m := withBin(t, mcpMount("up", "-hang-start", "-pidfile", pidfile))
		m.Timeout = mount.Duration(300 * time.Millisecond)
		p := startProxy(t, mount.PrefixModeMountName, m)
		testkit.Eventually(t, "the timeout", func() bool {
			return strings.Contains(p.ep.ServerStatuses()[0].Error, "no answer within 300ms")
		})
		pid := testkit.WaitPID(t, pidfile)
		testkit.Eventually(t, "the hung server to be stopped", func() bool { return !testkit.Alive(pid) })
		// Calls meanwhile are not hung: the built-ins answer at once.
		if r, err := p.call(t, "get_instance", nil); err != nil || r.IsError {
			t.Fatalf("%v %+v", err, r)
		}
	})
}

func TestProxyToolListChange(t *testing.T) {
	forEachPath(t, func(t *testing.T, path servePath) {
		p := startProxyOn(t, path, mount.PrefixModeMountName, withBin(t, mcpMount("up")))
		// The lane lists once the first round is over (before, the SDK
		// waits for it).
		testkit.Eventually(t, "tools", func() bool { return p.ep.Registry().Has("tool_0") && p.ep.firstRoundDone() })
		// Listed once before the change: a kept encoding must not outlive it.
		if res, err := p.cs.ListTools(context.Background(), nil); err != nil || !slices.ContainsFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "tool_0" }) {
			t.Fatalf("before the change: %v", err)
		}
		if r, err := p.call(t, "change_tools", nil); err != nil || r.IsError {
			t.Fatalf("%v %+v", err, r)
		}
		testkit.Eventually(t, "the new list", func() bool { return p.ep.Registry().Has("tool_new") && !p.ep.Registry().Has("tool_0") })
		res, err := p.cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "tool_new" }) ||
			slices.ContainsFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "tool_0" }) {
			t.Fatal("tools/list does not show the change")
		}
		p.checkPath(t, path, 1)
		if l := p.ep.lane.Load(); path != viaSDK && l.Stats().Listed != 2 {
			t.Fatalf("the lane answered %d of the 2 tools/list", l.Stats().Listed)
		}
	})
}

func TestProxyCollisionsServeNeither(t *testing.T) {
	forEachPath(t, func(t *testing.T, path servePath) {
		// Mode off: both servers' tools are unprefixed, so their names collide,
		// except tool_3 and tool_4, which only b has.
		p := startProxyOn(t, path, mount.PrefixModeOff, withBin(t, mcpMount("a", "-tools", "3")), withBin(t, mcpMount("b", "-tools", "5")))
		testkit.Eventually(t, "both up", func() bool {
			s := p.ep.ServerStatuses()
			return s[0].State == proxy.StateUp && s[1].State == proxy.StateUp
		})
		// A server is marked up just before its tools are reconciled: wait for
		// the collision to be seen.
		testkit.Eventually(t, "reconciled", func() bool { return p.ep.Registry().Has("tool_4") && len(p.ep.Conflicts()) > 0 })
		for _, n := range []string{"echo", "tool_0", "slow"} {
			if p.ep.Registry().Has(n) {
				t.Errorf("%s is served although both servers offer it; log:\n%s", n, p.stderr.String())
			}
		}
		cs := p.ep.Conflicts()
		i := slices.IndexFunc(cs, func(c Conflict) bool { return c.Name == "echo" })
		if i < 0 || !slices.Equal(cs[i].Sources, []string{"mcp a", "mcp b"}) {
			t.Fatalf("conflicts %+v", cs)
		}
		if !strings.Contains(p.stderr.String(), `msg="tool name collision: neither is served" tool=echo sources="mcp a and mcp b"`) {
			t.Fatalf("the collision must be reported on stderr: %s", p.stderr.String())
		}
		r, err := p.call(t, "get_instance", nil)
		if err != nil || !strings.Contains(resultText(r), `"name": "echo"`) || !strings.Contains(resultText(r), `"mcp b"`) {
			t.Fatalf("get_instance must report the collision: %v %s", err, resultText(r))
		}
	})
}

// TestProxyAlikeNamesServeNeither: two tools of one server whose names
// differ only where the client's charset maps them alike ("a.b" and
// "a_b" both reach the model as mcp__agentctl__a_b) are served by neither:
// the model could call only one, and agentctl would route its call to
// whichever held the name. Reported as a collision, on stderr and by
// get_instance, as tools list predicts.
func TestProxyAlikeNamesServeNeither(t *testing.T) {
	forEachPath(t, func(t *testing.T, path servePath) {
		p := startProxyOn(t, path, mount.PrefixModeMountName, withBin(t, mcpMount("fk", "-tool-names", "a.b,a_b,c")))
		testkit.Eventually(t, "reconciled", func() bool { return p.ep.Registry().Has("c") })
		for _, n := range []string{"a.b", "a_b"} {
			if p.ep.Registry().Has(n) {
				t.Errorf("%s is served although the model sees it as the other; log:\n%s", n, p.stderr.String())
			}
		}
		cs := p.ep.Conflicts()
		i := slices.IndexFunc(cs, func(c Conflict) bool { return c.Name == "a_b" })
		if i < 0 || !slices.Equal(cs[i].Sources, []string{"mcp fk (a.b)", "mcp fk (a_b)"}) {
			t.Fatalf("conflicts %+v", cs)
		}
		if !strings.Contains(p.stderr.String(), `msg="tool name collision: neither is served" tool=a.b`) {
			t.Fatalf("the collision must be reported on stderr: %s", p.stderr.String())
		}
	})
}

// TestProxyStreamableHTTP mounts a server served over streamable HTTP,
// with a header it requires.
func TestProxyStreamableHTTP(t *testing.T) {
	t.Parallel()
	up := mcp.NewServer(&mcp.Implementation{Name: "http-upstream", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(up, &mcp.Tool{Name: "shout", Description: "Upper-case the text."}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.ToUpper(a.Text)}}}, nil, nil
	})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	m := mount.Mount{Kind: mount.KindServer, Name: "remote", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer s3cret"}}
	p := startProxy(t, mount.PrefixModeMountName, m)
	testkit.Eventually(t, "the remote tools", func() bool { return p.ep.Registry().Has("shout") })
	if r, err := p.call(t, "shout", map[string]any{"text": "hi"}); err != nil || resultText(r) != "HI" {
		t.Fatalf("%v %+v", err, r)
	}

	// Without the header the server refuses; the endpoint reports why.
	m.Headers = nil
	m.Timeout = mount.Duration(5 * time.Second)
	p2 := startProxy(t, mount.PrefixModeMountName, m)
	testkit.Eventually(t, "the refusal", func() bool { return p2.ep.ServerStatuses()[0].State == proxy.StateDown })
	if st := p2.ep.ServerStatuses()[0]; !strings.Contains(st.Error, "nauthorized") {
		t.Fatalf("status %+v", st)
	}
}

// TestProxyRelistKeepsUnchangedTools: listing a server's tools again (as on
// every tools/list_changed) must not take unchanged tools out of service,
// not even for a moment. Each relist here is a real one: the server
// announces a change and agentctl lists its tools again, getting new
// definitions equal in value. Across all of them the registry must not
// change at all (no tool removed and added back, however briefly), and
// calls racing the relists all succeed.
func TestProxyRelistKeepsUnchangedTools(t *testing.T) {
	t.Parallel()
	up, srv := httpServer(t, "hello")
	var lists atomic.Int64
	up.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				lists.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	p := startProxy(t, mount.PrefixModeMountName, mount.Mount{Kind: mount.KindServer, Name: "remote", URL: srv.URL})
	testkit.Eventually(t, "tools", func() bool { return p.ep.Registry().Has("hello") })
	gen, _ := p.ep.Registry().Listed()

	stop := make(chan struct{})
	calls := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				calls <- nil
				return
			default:
			}
			if r, err := p.call(t, "hello", nil); err != nil || r.IsError {
				calls <- fmt.Errorf("call %d during relists: %v %+v", i, err, r)
				return
			}
		}
	}()
	hello := func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "remote hello"}}}, nil, nil
	}
	for range 20 {
		before := lists.Load()
		// The same definition again: the server announces a change.
		mcp.AddTool(up, &mcp.Tool{Name: "hello", Description: "Says its name."}, hello)
		testkit.Eventually(t, "a relist", func() bool { return lists.Load() > before })
	}
	// A real change last: once it is served, every relist before it has
	// been reconciled (one relist worker per server, in order).
	mcp.AddTool(up, &mcp.Tool{Name: "marker", Description: "Says its name."}, hello)
	testkit.Eventually(t, "the last relist", func() bool { return p.ep.Registry().Has("marker") })
	close(stop)
	if err := <-calls; err != nil {
		t.Fatal(err)
	}
	if now, _ := p.ep.Registry().Listed(); now != gen+1 {
		t.Fatalf("the registry changed %d times over 20 relists of unchanged tools and one new tool; want once", now-gen)
	}
}

// TestProxyHTTPServerDies: a call to a server that went away is an isError
// result naming it, and agentctl stops calling it up.
func TestProxyHTTPServerDies(t *testing.T) {
	t.Parallel()
	_, srv := httpServer(t, "hello")
	m := mount.Mount{Kind: mount.KindServer, Name: "remote", URL: srv.URL, Timeout: mount.Duration(2 * time.Second)}
	p := startProxy(t, mount.PrefixModeMountName, m)
	testkit.Eventually(t, "the remote tools", func() bool { return p.ep.Registry().Has("hello") })
	srv.CloseClientConnections()
	srv.Close()
	r, err := p.call(t, "hello", nil)
	if err != nil || !r.IsError || !strings.Contains(resultText(r), `MCP server "remote" failed during the call`) {
		t.Fatalf("got %v %+v", err, r)
	}
	testkit.Eventually(t, "the server to be marked not up", func() bool { return p.ep.ServerStatuses()[0].State != proxy.StateUp })
	testkit.Eventually(t, "its tools to be withdrawn", func() bool { return !p.ep.Registry().Has("hello") })
}

// TestProxyCollisionWithholdsAndRestoresAKnowledgeBaseTool: an external
// tool named like a knowledge base's (both unprefixed, mode off) takes both
// out of service; when the server drops it, the knowledge base's returns.
func TestProxyKnowledgeBaseKeepsItsNameAtRunTime(t *testing.T) {
	t.Parallel()
	up, srv := httpServer(t, "concept_read", "other")
	kb := mount.Mount{Kind: mount.KindKB, Name: "docs", Path: t.TempDir()}
	remote := mount.Mount{Kind: mount.KindServer, Name: "remote", URL: srv.URL}
	p := startProxy(t, mount.PrefixModeOff, kb, remote)
	testkit.Eventually(t, "the external tool withheld", func() bool { return len(p.ep.Withheld()) == 1 })
	if e, ok := p.ep.Registry().Lookup("concept_read"); !ok || e.Kind != KindKB {
		t.Fatalf("concept_read must stay the knowledge base's: %+v %v", e, ok)
	}
	if w := p.ep.Withheld()[0]; w.Name != "concept_read" || w.Source != "mcp remote" || w.Holder != "concept_read" || w.HolderSource != "kb docs" {
		t.Fatalf("withheld %+v", w)
	}
	if len(p.ep.Conflicts()) != 0 {
		t.Fatalf("a reserved name is not a conflict: %+v", p.ep.Conflicts())
	}
	if !p.ep.Registry().Has("other") || !p.ep.Registry().Has("concept_search") {
		t.Fatal("the rest must keep working")
	}
	if r, err := p.call(t, "concept_read", map[string]any{"id": "nosuch"}); err != nil || !strings.Contains(resultText(r), "not found in knowledge base") {
		t.Fatalf("the knowledge base's tool: %v %+v", err, r)
	}
	up.RemoveTools("concept_read") // the server sends tools/list_changed
	testkit.Eventually(t, "nothing withheld", func() bool { return len(p.ep.Withheld()) == 0 })
	if e, ok := p.ep.Registry().Lookup("concept_read"); !ok || e.Kind != KindKB {
		t.Fatalf("concept_read: %+v %v", e, ok)
	}
}

// TestProxyStopsALaunchersChildren: a server started through a launcher
// (a shell here, npx in real life) leaves children that do not read the
// server's stdin; when the endpoint stops, they go too, with the server's
// process group.
func TestProxyStopsALaunchersChildren(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("process groups of stdio servers are a Linux feature here")
	}
	dir := t.TempDir()
	childPID := filepath.Join(dir, "child")
	m := mcpMount("up")
	m.Command = "/bin/sh"
	m.Args = []string{"-c", `sleep 1000 & echo $! > "$1"; exec "$2"`, "sh", childPID, serverBin(t)}
	p := startProxy(t, mount.PrefixModeMountName, m)
	testkit.Eventually(t, "the server", func() bool { return p.ep.Registry().Has("echo") })
	pid := testkit.WaitPID(t, childPID)
	if !testkit.Alive(pid) {
		t.Fatalf("the launcher's child %d is not running", pid)
	}
	p.stop(t)
	testkit.Eventually(t, "the launcher's child to be gone", func() bool { return !testkit.Alive(pid) })
}

// firstRoundDone reports whether every external server has had its first
// connection attempt.
func (e *Endpoint) firstRoundDone() bool {
	select {
	case <-e.pool.FirstRound():
		return true
	default:
		return false
	}
}
