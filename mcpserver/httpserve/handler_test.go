package httpserve_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/mcpserver/httpserve"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Text string `json:"text"`
}

func newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "block"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	return s
}

func serve(t *testing.T, s *mcp.Server, o httpserve.Options) (*httpserve.Handler, *httptest.Server) {
	t.Helper()
	h := httpserve.NewHandler(s, o)
	ts := httptest.NewServer(nil)
	ts.Config.Handler = httpserve.Protect(h, httpserve.ProtectOptions{Listen: ts.Listener.Addr().String(), MaxBodyBytes: o.MaxBodyBytes})
	t.Cleanup(ts.Close)
	return h, ts
}

// connect connects a go-sdk client speaking version (empty: the latest,
// 2026-07-28, stateless) and counts the tools/list_changed it gets.
func connect(t *testing.T, url, version string) (*mcp.ClientSession, chan struct{}) {
	t.Helper()
	changed := make(chan struct{}, 16)
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect (%q): %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, changed
}

func callText(t *testing.T, cs *mcp.ClientSession, text string) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
	if err != nil {
		t.Fatalf("call echo: %v", err)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// Both eras on one URL, one server: both list and call, and both hear of
// a tool added later.
func TestBothErasShareOneServer(t *testing.T) {
	s := newServer()
	_, ts := serve(t, s, httpserve.Options{})
	old, oldChanged := connect(t, ts.URL, "2025-11-25")
	stateless, newChanged := connect(t, ts.URL, "")
	if v := old.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Errorf("stateful client negotiated %q", v)
	}
	if v := stateless.InitializeResult().ProtocolVersion; v < httpserve.StatelessVersion {
		t.Errorf("stateless client negotiated %q, want %s or later", v, httpserve.StatelessVersion)
	}
	for _, cs := range []*mcp.ClientSession{old, stateless} {
		if got := callText(t, cs, "hi"); got != "hi" {
			t.Errorf("echo answered %q", got)
		}
	}
	if old.ID() == "" {
		t.Error("the 2025-11-25 client got no session id: not served statefully")
	}
	s.AddTool(&mcp.Tool{Name: "later", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	for era, ch := range map[string]chan struct{}{"2025-11-25": oldChanged, "2026-07-28": newChanged} {
		select {
		case <-ch:
		case <-time.After(time.Minute): // a backstop only
			t.Errorf("the %s client got no tools/list_changed", era)
		}
	}
	for _, cs := range []*mcp.ClientSession{old, stateless} {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil || len(res.Tools) != 3 {
			t.Errorf("tools/list after the change: %v %v", res, err)
		}
	}
}

func post(t *testing.T, url string, body string, hdr map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`

func TestProtectRefuses(t *testing.T) {
	_, ts := serve(t, newServer(), httpserve.Options{MaxBodyBytes: 1024})
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"pad":"` + strings.Repeat("x", 2048) + `"}}}`
	for _, c := range []struct {
		name string
		body string
		hdr  map[string]string
		want int
	}{
		{"plain initialize", initBody, nil, http.StatusOK},
		{"bad Host", initBody, map[string]string{"Host": "attacker.example:80"}, http.StatusForbidden},
		{"cross-origin POST", initBody, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, http.StatusForbidden},
		{"oversized body", big, nil, http.StatusRequestEntityTooLarge},
		{"oversized body, stateless", big, map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, http.StatusRequestEntityTooLarge},
	} {
		if res := post(t, ts.URL, c.body, c.hdr); res.StatusCode != c.want {
			t.Errorf("%s: status %d, want %d", c.name, res.StatusCode, c.want)
		}
	}
}

// A body that does not announce its length is cut at the cap too.
func TestChunkedBodyOverTheCap(t *testing.T) {
	_, ts := serve(t, newServer(), httpserve.Options{MaxBodyBytes: 1024})
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"pad":"` + strings.Repeat("x", 4096) + `"}}}`
	req, _ := http.NewRequest(http.MethodPost, ts.URL, struct{ *strings.Reader }{strings.NewReader(big)})
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d, want 413", res.StatusCode)
	}
}

func TestHostAllowed(t *testing.T) {
	for _, c := range []struct {
		host, listen string
		want         bool
	}{
		{"127.0.0.1:7821", "127.0.0.1:7821", true},
		{"localhost:7821", "127.0.0.1:7821", true},
		{"LocalHost:7821", "127.0.0.1:7821", true},
		{"[::1]:7821", "127.0.0.1:7821", true},
		{"[0:0:0:0:0:0:0:1]:7821", "127.0.0.1:7821", true},
		{"localhost:7821", "[::1]:7821", true},
		{"127.0.0.1:7821", "[::1]:7821", true},
		{"127.0.0.2:7821", "127.0.0.1:7821", false},
		{"[::ffff:127.0.0.1]:7821", "127.0.0.1:7821", false},
		{"[::1%lo]:7821", "127.0.0.1:7821", false},
		{"localhost.:7821", "127.0.0.1:7821", false},
		{"localhost:7822", "127.0.0.1:7821", false},
		{"127.0.0.1:7822", "127.0.0.1:7821", false},
		{"localhost", "127.0.0.1:7821", false},
		{"localhost", "127.0.0.1:80", true},
		{"localhost:", "127.0.0.1:80", true},
		// A Host without a port names its scheme's default port: 443
		// behind TLS.
		{"localhost", "127.0.0.1:443", true},
		{"localhost:80", "127.0.0.1:443", false},
		{"localhost:+7821", "127.0.0.1:7821", false},
		{"localhost:07821", "127.0.0.1:7821", true},
		{"[localhost]:7821", "127.0.0.1:7821", false},
		{"::1", "127.0.0.1:80", false},
		{"localhoſt:7821", "127.0.0.1:7821", false},
		{"evil.example:7821", "127.0.0.1:7821", false},
		{"192.168.1.5:7821", "192.168.1.5:7821", true},
		{"localhost:7821", "192.168.1.5:7821", true},
		{"evil.example", "192.168.1.5:7821", false},
		{"10.0.0.9:7821", "192.168.1.5:7821", false},
		{"192.168.1.5:80", "192.168.1.5:7821", false},
		{"10.0.0.9:7821", "0.0.0.0:7821", true},
		{"[fe80::1]:7821", "[::]:7821", true},
		{"10.0.0.9:7821", ":7821", true},
		{"10.0.0.9:7822", "0.0.0.0:7821", false},
		{"evil.example:7821", "0.0.0.0:7821", false},
		{"build.example:7821", "0.0.0.0:7821", false},
		{"", "127.0.0.1:7821", false},
		{"localhost:7821", "127.0.0.1:0", false},
	} {
		if got := httpserve.HostAllowed(c.host, c.listen, nil); got != c.want {
			t.Errorf("HostAllowed(%q, %q) = %v, want %v", c.host, c.listen, got, c.want)
		}
	}
	allowed := []string{"build.example", "Proxy.Example:8443", "agents.example:443", "plain.example:80"}
	for host, want := range map[string]bool{
		"build.example:7821": true, "BUILD.example": true, "build.example:9": true,
		"proxy.example:8443": true, "proxy.example:7821": false, "proxy.example": false,
		"other.example:7821": false,
		// A name allowed with its scheme's default port is allowed without
		// one, as a browser or a TLS proxy sends it (https://NAME:443).
		"agents.example": true, "agents.example:443": true, "agents.example:80": false, "agents.example:7821": false,
		"plain.example": true, "plain.example:80": true, "plain.example:443": false,
	} {
		if got := httpserve.HostAllowed(host, "0.0.0.0:7821", allowed); got != want {
			t.Errorf("HostAllowed(%q, 0.0.0.0:7821, %q) = %v, want %v", host, allowed, got, want)
		}
	}
}

func TestOriginAllowed(t *testing.T) {
	for origin, want := range map[string]bool{
		"http://localhost:7821":         true,
		"http://LOCALHOST:7821":         true,
		"HTTP://localhost:7821":         true,
		"http://127.0.0.1:7821":         true,
		"http://[::1]:7821":             true,
		"https://localhost:7821":        true,
		"http://localhost:7822":         false,
		"http://localhost:3000":         false,
		"http://localhost":              false,
		"http://127.0.0.2:7821":         false,
		"http://evil.example:7821":      false,
		"http://localhost:7821/":        false,
		"http://user@localhost:7821":    false,
		"null":                          false,
		"file://":                       false,
		"vscode-file://vscode-app":      false,
		"chrome-extension://abc":        false,
		"localhost:7821":                false,
		"http://localhost.:7821":        false,
		"http://localhost:7821.example": false,
	} {
		if got := httpserve.OriginAllowed(origin, "127.0.0.1:7821", nil); got != want {
			t.Errorf("OriginAllowed(%q) = %v, want %v", origin, got, want)
		}
	}
	if !httpserve.OriginAllowed("https://build.example", "0.0.0.0:7821", []string{"build.example"}) {
		t.Error("an allowed host's origin was refused")
	}
	if !httpserve.OriginAllowed("http://localhost", "127.0.0.1:80", nil) {
		t.Error("http://localhost was refused on port 80")
	}
	if httpserve.OriginAllowed("https://localhost", "127.0.0.1:80", nil) {
		t.Error("https://localhost (port 443) was allowed on port 80")
	}
	if !httpserve.OriginAllowed("https://agents.example", "127.0.0.1:7821", []string{"agents.example:443"}) {
		t.Error("https://agents.example was refused with agents.example:443 allowed")
	}
	if httpserve.OriginAllowed("http://agents.example", "127.0.0.1:7821", []string{"agents.example:443"}) {
		t.Error("http://agents.example (port 80) was allowed with agents.example:443 allowed")
	}
}

// Interrupt answers the calls in flight of both eras with an error that
// says the server is closing, and WaitCalls sees them end.
func TestInterruptAnswersCallsInFlight(t *testing.T) {
	h, ts := serve(t, newServer(), httpserve.Options{})
	for _, version := range []string{"2025-11-25", ""} {
		cs, _ := connect(t, ts.URL, version)
		errc := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "block"})
			errc <- err
		}()
		for h.Calls() == 0 {
			time.Sleep(time.Millisecond) // polling a counter; no deadline depends on it
		}
		h.Interrupt(errors.New("test stop"))
		err := <-errc
		if err == nil || !strings.Contains(err.Error(), "server is closing: test stop") {
			t.Errorf("%q: the blocked call ended with %v, want the closing error", version, err)
		}
		if err := h.WaitCalls(context.Background()); err != nil {
			t.Fatal(err)
		}
		// Later calls are refused the same way.
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err == nil {
			t.Errorf("%q: a call after Interrupt succeeded", version)
		}
		h2, ts2 := serve(t, newServer(), httpserve.Options{})
		h, ts = h2, ts2
	}
}

func TestRequestTimeout(t *testing.T) {
	_, ts := serve(t, newServer(), httpserve.Options{RequestTimeout: 50 * time.Millisecond})
	cs, _ := connect(t, ts.URL, "2025-11-25")
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "block"})
	if err == nil || !strings.Contains(err.Error(), "request timeout") {
		t.Errorf("a call past the request timeout ended with %v", err)
	}
}

// The Host check covers a listener beyond loopback, which go-sdk's own
// DNS-rebinding check (loopback listeners only) does not.
func TestProtectChecksHostOnANonLoopbackListener(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	g := httpserve.Protect(ok, httpserve.ProtectOptions{Listen: "192.168.1.5:7821"})
	for host, want := range map[string]int{
		"192.168.1.5:7821":        http.StatusNoContent,
		"localhost:7821":          http.StatusNoContent,
		"rebind.attacker.example": http.StatusForbidden,
		"10.1.1.1:7821":           http.StatusForbidden,
	} {
		req := httptest.NewRequest(http.MethodPost, "http://"+host+"/instances/x/mcp", strings.NewReader("{}"))
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %s: %d, want %d", host, rec.Code, want)
		}
	}
}
