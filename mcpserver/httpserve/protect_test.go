package httpserve_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/agentctl/agentctl/mcpserver/httpserve"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveGuarded serves s's Handler at /mcp behind Protect (with g; its Listen
// is the test server's), with /noread, a route that answers 401 without
// reading the body, beside it.
func serveGuarded(t *testing.T, s *mcp.Server, o httpserve.Options, g httpserve.ProtectOptions) (*httpserve.Handler, *httptest.Server) {
	t.Helper()
	h := httpserve.NewHandler(s, o)
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.HandleFunc("/noread", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
	})
	ts := httptest.NewServer(nil)
	g.Listen = ts.Listener.Addr().String()
	ts.Config.Handler = httpserve.Protect(mux, g)
	t.Cleanup(ts.Close)
	return h, ts
}

// A body sent one byte at a time is cut at the body timeout, on every
// route: one that reads it (the MCP handler, both eras), one that answers
// without reading it (net/http then reads the rest to reuse the
// connection), and a request Protect refuses.
func TestSlowBodyIsCut(t *testing.T) {
	bt := 200 * time.Millisecond
	_, ts := serveGuarded(t, newServer(), httpserve.Options{BodyTimeout: bt}, httpserve.ProtectOptions{BodyTimeout: bt})
	addr := ts.Listener.Addr().String()
	for _, c := range []struct{ name, path, host, headers string }{
		{"MCP, session era", "/mcp", addr, ""},
		{"MCP, stateless era", "/mcp", addr, "Mcp-Protocol-Version: 2026-07-28\r\n"},
		{"MCP, in a session", "/mcp", addr, "Mcp-Session-Id: nope\r\n"},
		{"a route that does not read the body", "/noread", addr, ""},
		{"an unknown route", "/nothing", addr, ""},
		{"a refused Host", "/mcp", "evil.example", ""},
		{"a refused Origin", "/mcp", addr, "Origin: http://evil.example\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if answer, closed := testkit.SlowBody(t, addr, c.path, c.host, c.headers, 15*time.Second); !closed {
				t.Errorf("the connection is still open 15s after a body timeout of 200ms (answered %q)", answer)
			}
		})
	}
}

// The body deadline is lifted once the body is read: a call longer than
// the body timeout is answered, in both eras, and a session's GET stream
// still delivers notifications after it.
func TestLongCallOutlivesTheBodyTimeout(t *testing.T) {
	s := newServer()
	mcp.AddTool(s, &mcp.Tool{Name: "sleep"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		select {
		case <-time.After(600 * time.Millisecond):
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slept"}}}, nil, nil
	})
	bt := 100 * time.Millisecond
	_, ts := serveGuarded(t, s, httpserve.Options{BodyTimeout: bt}, httpserve.ProtectOptions{BodyTimeout: bt})
	old, oldChanged := connect(t, ts.URL+"/mcp", "2025-11-25")
	stateless, _ := connect(t, ts.URL+"/mcp", "")
	for _, cs := range []*mcp.ClientSession{old, stateless} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sleep"})
		if err != nil || res.IsError {
			t.Fatalf("a call of 600ms with a body timeout of 100ms: %v %+v", err, res)
		}
	}
	s.AddTool(&mcp.Tool{Name: "later", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	select {
	case <-oldChanged:
	case <-time.After(time.Minute): // a backstop only
		t.Error("the session's stream delivered no tools/list_changed after the body timeout")
	}
}

// The Host and the Origin follow one rule, on every route: every loopback
// form of the listen address with its port, and nothing else.
func TestGuardHostAndOriginForms(t *testing.T) {
	_, ts := serveGuarded(t, newServer(), httpserve.Options{}, httpserve.ProtectOptions{})
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	good := []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port, "LocalHost:" + port, "[::1]:" + port}
	bad := []string{"127.0.0.2:" + port, "localhost:1", "localhost", "localhost.:" + port, "[::ffff:127.0.0.1]:" + port, "evil.example:" + port, "0.0.0.0:" + port}
	send := func(path, host, origin string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(initBody))
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if origin != "" {
			req.Header.Set("Origin", origin)
			req.Header.Set("Sec-Fetch-Site", "cross-site")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, path := range []string{"/mcp", "/noread", "/nothing"} {
		for _, h := range good {
			if code := send(path, h, ""); code == http.StatusForbidden {
				t.Errorf("%s, Host %s: 403", path, h)
			}
			for _, o := range good {
				if code := send(path, h, "http://"+o); code == http.StatusForbidden {
					t.Errorf("%s, Host %s, Origin http://%s: 403", path, h, o)
				}
			}
			for _, o := range bad {
				if code := send(path, h, "http://"+o); code != http.StatusForbidden {
					t.Errorf("%s, Host %s, Origin http://%s: %d, want 403", path, h, o, code)
				}
			}
		}
		for _, h := range bad {
			if code := send(path, h, ""); code != http.StatusForbidden {
				t.Errorf("%s, Host %s: %d, want 403", path, h, code)
			}
		}
	}
	// A browser's request without an Origin that says it is cross-site.
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/noread", nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site GET: %v %v, want 403", res, err)
	} else {
		res.Body.Close()
	}
	// A link followed from another site (a top-level page load) passes;
	// the same headers on a POST, or a fetch from a page, do not.
	for _, c := range []struct {
		method, mode, dest string
		want               bool
	}{
		{http.MethodGet, "navigate", "document", true},
		{http.MethodPost, "navigate", "document", false},
		{http.MethodGet, "cors", "empty", false},
		{http.MethodGet, "navigate", "iframe", false},
	} {
		req, _ := http.NewRequest(c.method, ts.URL+"/noread", nil)
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.Header.Set("Sec-Fetch-Mode", c.mode)
		req.Header.Set("Sec-Fetch-Dest", c.dest)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if got := res.StatusCode != http.StatusForbidden; got != c.want {
			t.Errorf("cross-site %s, mode %s, dest %s: %d, want passed=%v", c.method, c.mode, c.dest, res.StatusCode, c.want)
		}
	}
}

// A refused Host is told which Hosts the server takes: the listen
// address's forms and the names it was given (--allow-host, the base
// URL), or how to give one.
func TestGuardHostHint(t *testing.T) {
	for _, c := range []struct {
		allowed []string
		want    string
	}{
		{nil, "; to reach it by another name, give that name with --allow-host (serve: or --base-url)\n"},
		{[]string{"agents.example:443", "build.example", "[::2]"}, ", or a name given with --allow-host or the base URL (--base-url, a port meaning that port only): agents.example:443, build.example, [::2]\n"},
	} {
		_, ts := serveGuarded(t, newServer(), httpserve.Options{}, httpserve.ProtectOptions{AllowedHosts: c.allowed})
		_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/noread", nil)
		req.Host = "evil.example"
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		want := `Forbidden: Host "evil.example" is not this server's address (DNS-rebinding protection); use localhost:` + port + ", 127.0.0.1:" + port + " or [::1]:" + port + c.want
		if res.StatusCode != http.StatusForbidden || string(b) != want {
			t.Errorf("allowed %q: %d %q\nwant 403 %q", c.allowed, res.StatusCode, b, want)
		}
	}
}

// A session-era request without Mcp-Session-Id that is not an initialize
// is 400 with a JSON-RPC error (invalid request), not a 200 of code 0.
func TestSessionEraRequestWithoutSession(t *testing.T) {
	_, ts := serveGuarded(t, newServer(), httpserve.Options{}, httpserve.ProtectOptions{})
	for _, c := range []struct {
		name, body string
		id         any
	}{
		{"tools/call", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`, float64(7)},
		{"tools/list", `{"jsonrpc":"2.0","id":"a","method":"tools/list"}`, "a"},
		{"ping", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, float64(1)},
		{"a notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil},
	} {
		for _, version := range []string{"2025-11-25", "2025-06-18", ""} {
			req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if version != "" {
				req.Header.Set("Mcp-Protocol-Version", version)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			var msg struct {
				JSONRPC string `json:"jsonrpc"`
				ID      any    `json:"id"`
				Error   *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if res.StatusCode != http.StatusBadRequest || json.Unmarshal(b, &msg) != nil || msg.Error == nil ||
				msg.Error.Code != -32600 || msg.ID != c.id || msg.JSONRPC != "2.0" || !strings.Contains(msg.Error.Message, "Mcp-Session-Id") {
				t.Errorf("%s (%q) without a session: %d %s; want 400 and a JSON-RPC error -32600 of id %v", c.name, version, res.StatusCode, b, c.id)
			}
		}
	}
	// An initialize without a session still opens one.
	if res := post(t, ts.URL+"/mcp", initBody, nil); res.StatusCode != http.StatusOK || res.Header.Get("Mcp-Session-Id") == "" {
		t.Errorf("initialize: %d, session %q", res.StatusCode, res.Header.Get("Mcp-Session-Id"))
	}
	// A body that is not JSON-RPC is still go-sdk's to refuse.
	if res := post(t, ts.URL+"/mcp", `{"nope"`, nil); res.StatusCode != http.StatusBadRequest {
		t.Errorf("a malformed body: %d, want 400", res.StatusCode)
	}
}

// failingChecker's CheckToken fails with err.
type failingChecker struct{ err error }

func (c failingChecker) CheckToken(context.Context, string, string) (bool, error) {
	return false, c.err
}

type storeDown struct{}

func (storeDown) Error() string          { return "postgres store db: connection refused (store unavailable)" }
func (storeDown) StoreUnavailable() bool { return true }

// TestAuthorizeStoreDown: a token that cannot be checked because the store
// does not answer is 503 with Retry-After (the client tries again), not a
// 500; any other failure stays 500. Neither says the token.
func TestAuthorizeStoreDown(t *testing.T) {
	for _, c := range []struct {
		err   error
		code  int
		retry string
	}{
		{storeDown{}, http.StatusServiceUnavailable, "5"},
		{io.ErrShortBuffer, http.StatusInternalServerError, ""},
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/instances/x/mcp", nil)
		r.Header.Set("Authorization", "Bearer agt_secret_token")
		if httpserve.Authorize(w, r, failingChecker{c.err}, "x", nil) {
			t.Fatal("authorized")
		}
		if w.Code != c.code || w.Header().Get("Retry-After") != c.retry || strings.Contains(w.Body.String(), "agt_secret") {
			t.Errorf("%v: %d, Retry-After %q, %q; want %d, %q", c.err, w.Code, w.Header().Get("Retry-After"), w.Body, c.code, c.retry)
		}
	}
}
