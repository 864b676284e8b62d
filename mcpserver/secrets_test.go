package mcpserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/agentctl/agentctl/mcpserver/proxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The secrets planted in an HTTP server's mount: its URL's user and
// password, a query parameter, and a header.
var plantedSecrets = []string{"plantedUser", "plantedPassword", "plantedKey", "plantedToken"}

// secretMount is an HTTP server mount at base (scheme://host:port) with
// every planted secret in it.
func secretMount(t *testing.T, base string) mount.Mount {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("plantedUser", "plantedPassword")
	u.Path, u.RawQuery = "/mcp", "key=plantedKey"
	return mount.Mount{Kind: mount.KindServer, Name: "remote", URL: u.String(),
		Headers: map[string]string{"Authorization": "Bearer plantedToken"}, Timeout: mount.Duration(5 * time.Second)}
}

// secretEnv is an endpoint with m mounted and logging everything (debug,
// go-sdk's chatter too) into log.
type secretEnv struct {
	ep  *Endpoint
	cs  *mcp.ClientSession
	log *testkit.Buffer
}

func startSecretEnv(t *testing.T, m mount.Mount) *secretEnv {
	t.Helper()
	cfg := testConfig(agents.NamespacingSuffix, newFakeStore())
	cfg.Mounts, cfg.PrefixMode = []mount.Mount{m}, mount.PrefixModeMountName
	log := &testkit.Buffer{}
	cfg.ServerStderr = log
	cfg.Logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ep, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ep.Start(ctx)
	t.Cleanup(func() { cancel(); ep.Wait() })
	return &secretEnv{ep: ep, cs: sessionFor(t, ep.Server(), nil), log: log}
}

// checkNoSecrets fails if a planted secret is in any of what the model,
// the log or a caller of ServerStatuses sees.
func (e *secretEnv) checkNoSecrets(t *testing.T, more ...string) {
	t.Helper()
	r, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_instance", Arguments: map[string]any{}})
	if err != nil || r.IsError {
		t.Fatalf("get_instance: %v %+v", err, r)
	}
	structured, err := json.Marshal(r.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	statuses, _ := json.Marshal(e.ep.ServerStatuses())
	seen := map[string]string{
		"get_instance's text":       resultText(r),
		"get_instance's structured": string(structured),
		"ServerStatuses":            string(statuses),
		"the endpoint's log":        e.log.String(),
	}
	for i, s := range more {
		seen["text "+string(rune('A'+i))] = s
	}
	for where, text := range seen {
		for _, secret := range plantedSecrets {
			if strings.Contains(text, secret) {
				t.Errorf("%s holds the secret %q:\n%s", where, secret, text)
			}
		}
	}
}

func (e *secretEnv) waitDown(t *testing.T) proxy.ServerStatus {
	t.Helper()
	testkit.Eventually(t, "the server to be down", func() bool {
		st := e.ep.ServerStatuses()[0]
		return st.State == proxy.StateDown && st.Error != ""
	})
	return e.ep.ServerStatuses()[0]
}

// TestHTTPServerSecretsNeverShow: an HTTP server's URL user, password and
// query and its headers' values are in no error, log line or get_instance
// result, whether the server cannot be reached, refuses agentctl (echoing
// what it was sent) or goes away during a call.
func TestHTTPServerSecretsNeverShow(t *testing.T) {
	t.Parallel()
	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		// Port 1 (tcpmux) is privileged and unused: connecting is refused. A
		// port freed after a listen could be taken by a parallel test meanwhile.
		addr := "127.0.0.1:1"
		e := startSecretEnv(t, secretMount(t, "http://"+addr))
		st := e.waitDown(t)
		if !strings.Contains(st.Error, "refused") || !strings.Contains(st.Error, "redacted") {
			t.Errorf("the error should still say what happened, and where (redacted): %q", st.Error)
		}
		e.checkNoSecrets(t)
	})
	for _, code := range []int{http.StatusUnauthorized, http.StatusInternalServerError} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			t.Parallel()
			// A careless server quotes the request back.
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				u, p, _ := r.BasicAuth()
				http.Error(w, "refused "+r.Header.Get("Authorization")+" "+r.URL.String()+" "+u+":"+p, code)
			}))
			t.Cleanup(srv.Close)
			e := startSecretEnv(t, secretMount(t, srv.URL))
			e.waitDown(t)
			e.checkNoSecrets(t)
		})
	}
	t.Run("gone during a call", func(t *testing.T) {
		t.Parallel()
		_, srv := httpServer(t, "hello")
		e := startSecretEnv(t, secretMount(t, srv.URL))
		testkit.Eventually(t, "the remote tools", func() bool { return e.ep.Registry().Has("hello") })
		srv.CloseClientConnections()
		srv.Close()
		r, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{}})
		if err != nil || !r.IsError {
			t.Fatalf("got %v %+v", err, r)
		}
		e.waitDown(t)
		e.checkNoSecrets(t, resultText(r))
	})
}
