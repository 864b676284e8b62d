package httpserve_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/agentctl/agentctl/mcpserver/httpserve"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer sends Authorization: Bearer token on every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// connectAs is connect with a bearer token.
func connectAs(t *testing.T, url, version, token string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, HTTPClient: &http.Client{Transport: bearer(token)}},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect (%q): %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestRevokeEndsWhatATokenOpened: Tokens lists the tokens the sessions
// and requests in flight came with; Revoke of one closes the sessions it
// opened (a call in flight in one is answered with an error saying why)
// and cancels its requests, and leaves another token's session alone.
func TestRevokeEndsWhatATokenOpened(t *testing.T) {
	s := newServer()
	h, ts := serve(t, s, httpserve.Options{})
	old := connectAs(t, ts.URL, "2025-11-25", "old-token")
	stateless := connectAs(t, ts.URL, "", "old-token")
	other := connectAs(t, ts.URL, "2025-11-25", "new-token")
	blocked := make(chan error, 2)
	for _, cs := range []*mcp.ClientSession{old, stateless} {
		go func() {
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "block"})
			blocked <- err
		}()
	}
	testkit.Eventually(t, "both tokens in use, both calls running", func() bool {
		toks := h.Tokens()
		slices.Sort(toks)
		return slices.Equal(toks, []string{"new-token", "old-token"}) && h.Calls() == 2
	})
	sessions, requests := h.Revoke("old-token", errors.New("the token was rotated"))
	if sessions != 1 || requests < 1 {
		t.Errorf("Revoke ended %d sessions and %d requests; want 1 session (the stateful one) and the stateless call at least", sessions, requests)
	}
	for range 2 {
		select {
		case err := <-blocked:
			if err == nil {
				t.Error("a call of the revoked token returned no error")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a call of the revoked token is still running 10s after Revoke")
		}
	}
	if _, err := old.ListTools(context.Background(), nil); err == nil {
		t.Error("the revoked token's session still answers")
	}
	if got := callText(t, other, "still here"); got != "still here" {
		t.Errorf("the other token's session: %q", got)
	}
	testkit.Eventually(t, "the revoked token no longer in use", func() bool {
		return !slices.Contains(h.Tokens(), "old-token")
	})
}

// TestRevokeEndsTheSessionsStream: the GET stream of a session opened with
// a revoked token ends, though the client keeps it open.
func TestRevokeEndsTheSessionsStream(t *testing.T) {
	h, ts := serve(t, newServer(), httpserve.Options{})
	hdr := map[string]string{"Authorization": "Bearer old-token"}
	res := post(t, ts.URL, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, hdr)
	sid := res.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: %d, no session", res.StatusCode)
	}
	hdr["Mcp-Session-Id"], hdr["Mcp-Protocol-Version"] = sid, "2025-06-18"
	post(t, ts.URL, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr)
	req, _ := http.NewRequest(http.MethodGet, ts.URL, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	req.Header.Set("Accept", "text/event-stream")
	stream, err := http.DefaultClient.Do(req)
	if err != nil || stream.StatusCode != 200 {
		t.Fatalf("GET stream: %v %v", stream, err)
	}
	defer stream.Body.Close()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		b := make([]byte, 4096)
		for {
			if _, err := stream.Body.Read(b); err != nil {
				return
			}
		}
	}()
	testkit.Eventually(t, "the stream's token in use", func() bool { return slices.Contains(h.Tokens(), "old-token") })
	h.Revoke("old-token", errors.New("the token was rotated"))
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the GET stream of the revoked token's session is still open 10s after Revoke")
	}
	// The session is closed in the background once its calls have ended
	// (Revoke does not wait for them): its id is unknown soon after.
	testkit.Eventually(t, "a request of the ended session answered 404", func() bool {
		return post(t, ts.URL, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, hdr).StatusCode == http.StatusNotFound
	})
}
