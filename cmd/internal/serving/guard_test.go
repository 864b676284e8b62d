package serving_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/cmd/internal/serving"
	"github.com/agentctl/agentctl/internal/testkit"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`

// route is one of the daemon's routes, with a request it answers want to.
type route struct {
	name, method, path, tok, body string
	want                          int
}

func (w *world) routes(id string) []route {
	return []route{
		{"GET /health", http.MethodGet, "/health", "", "", http.StatusOK},
		{"GET /instances/ID/health", http.MethodGet, "/instances/" + id + "/health", token, "", http.StatusOK},
		{"POST /instances/ID/mcp", http.MethodPost, "/instances/" + id + "/mcp", token, initBody, http.StatusOK},
		{"POST /instances/ID/mcp without the token", http.MethodPost, "/instances/" + id + "/mcp", "", initBody, http.StatusUnauthorized},
		{"GET /nothing", http.MethodGet, "/nothing", "", "", http.StatusNotFound},
	}
}

func (w *world) send(r route, host string, hdr map[string]string) (int, string) {
	w.t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, _ := http.NewRequest(r.method, w.url+r.path, body)
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if r.tok != "" {
		req.Header.Set("Authorization", "Bearer "+r.tok)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// Every route takes the same Host and Origin rule: every loopback form of
// the listen address with its port, in any case, and nothing else.
func TestHostAndOriginFormsOnEveryRoute(t *testing.T) {
	w := newWorld(t, nil)
	rec := w.create("claude-code")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(w.url, "http://"))
	good := []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port, "Localhost:" + port, "[::1]:" + port}
	bad := []string{"127.0.0.2:" + port, "localhost:1", "localhost", "127.0.0.1", "localhost.:" + port,
		"[::ffff:127.0.0.1]:" + port, "evil.example:" + port, "0.0.0.0:" + port, "10.0.0.1:" + port}
	for _, r := range w.routes(rec.ID) {
		for _, h := range good {
			if code, body := w.send(r, h, nil); code != r.want {
				t.Errorf("%s, Host %s: %d %s, want %d", r.name, h, code, body, r.want)
			}
			for _, o := range good {
				// A browser says cross-site for localhost vs 127.0.0.1:
				// the Origin decides.
				hdr := map[string]string{"Origin": "http://" + o, "Sec-Fetch-Site": "cross-site"}
				if code, body := w.send(r, h, hdr); code != r.want {
					t.Errorf("%s, Host %s, Origin http://%s: %d %s, want %d", r.name, h, o, code, body, r.want)
				}
			}
			for _, o := range append(bad, "null") {
				origin := "http://" + o
				if o == "null" {
					origin = o
				}
				if code, _ := w.send(r, h, map[string]string{"Origin": origin}); code != http.StatusForbidden {
					t.Errorf("%s, Host %s, Origin %s: %d, want 403", r.name, h, origin, code)
				}
			}
		}
		for _, h := range bad {
			if code, _ := w.send(r, h, nil); code != http.StatusForbidden {
				t.Errorf("%s, Host %s: %d, want 403", r.name, h, code)
			}
		}
		if code, _ := w.send(r, "localhost:"+port, map[string]string{"Sec-Fetch-Site": "cross-site"}); code != http.StatusForbidden {
			t.Errorf("%s, a cross-site request without Origin: %d, want 403", r.name, code)
		}
	}
}

// A body sent one byte at a time is cut at the body timeout on every
// route, whether the route reads it or not.
func TestSlowBodyIsCutOnEveryRoute(t *testing.T) {
	w := newWorld(t, func(o *serving.Options) { o.BodyTimeout = 200 * time.Millisecond })
	rec := w.create("claude-code")
	addr := strings.TrimPrefix(w.url, "http://")
	auth := "Authorization: Bearer " + token + "\r\n"
	for _, c := range []struct{ name, path, host, headers string }{
		{"the instance's MCP URL", "/instances/" + rec.ID + "/mcp", addr, auth},
		{"the instance's MCP URL, stateless", "/instances/" + rec.ID + "/mcp", addr, auth + "Mcp-Protocol-Version: 2026-07-28\r\n"},
		{"the instance's MCP URL without the token", "/instances/" + rec.ID + "/mcp", addr, ""},
		{"an unknown instance", "/instances/01ARZ3NDEKTSV4RRFFQ69G5FAV/mcp", addr, auth},
		{"/health", "/health", addr, ""},
		{"the instance's health", "/instances/" + rec.ID + "/health", addr, auth},
		{"a refused Host", "/instances/" + rec.ID + "/mcp", "evil.example", auth},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if _, closed := testkit.SlowBody(t, addr, c.path, c.host, c.headers, 15*time.Second); !closed {
				t.Error("the connection is still open 15s after a body timeout of 200ms")
			}
		})
	}
}

// A session-era tools/call without Mcp-Session-Id is HTTP 400 with a
// JSON-RPC error -32600, not a 200 of code 0.
func TestSessionEraCallWithoutSessionIs400(t *testing.T) {
	w := newWorld(t, nil)
	rec := w.create("claude-code")
	host := strings.TrimPrefix(w.url, "http://")
	r := route{method: http.MethodPost, path: "/instances/" + rec.ID + "/mcp", tok: token,
		body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_instance","arguments":{}}}`}
	code, body := w.send(r, host, map[string]string{"Mcp-Protocol-Version": "2025-11-25"})
	var msg struct {
		ID    int `json:"id"`
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if code != http.StatusBadRequest || json.Unmarshal([]byte(body), &msg) != nil || msg.Error == nil || msg.Error.Code != -32600 || msg.ID != 3 {
		t.Errorf("tools/call without a session: %d %s; want 400 and a JSON-RPC error -32600 of id 3", code, body)
	}
}
