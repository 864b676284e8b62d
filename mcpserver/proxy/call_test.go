package proxy

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestArguments(t *testing.T) {
	for in, want := range map[string]string{"": "{}", "null": "{}", `{"a":1}`: `{"a":1}`, `"text"`: `"text"`} {
		if got := string(Arguments([]byte(in))); got != want {
			t.Errorf("Arguments(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestForwardedMeta: the client's own _meta goes upstream; the protocol's
// keys and the progress token do not.
func TestForwardedMeta(t *testing.T) {
	in := mcp.Meta{"trace": "abc", "x-client/id": 7, "progressToken": "p", "io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{}}
	if got := ForwardedMeta(in); !maps.Equal(got, mcp.Meta{"trace": "abc", "x-client/id": 7}) {
		t.Fatalf("forwarded %v", got)
	}
	if got := ForwardedMeta(mcp.Meta{"progressToken": 1}); got != nil {
		t.Fatalf("nothing to forward: %v, want nil", got)
	}
}

func TestProgressRoutes(t *testing.T) {
	p := NewProgressRoutes[string]("agentctl-test-")
	a, b := p.Add("first"), p.Add("second")
	if a == b || !strings.HasPrefix(a, "agentctl-test-") {
		t.Fatalf("tokens %q and %q", a, b)
	}
	if to, ok := p.Lookup(b); !ok || to != "second" {
		t.Fatalf("Lookup(%q) = %q, %v", b, to, ok)
	}
	p.Remove(b)
	if _, ok := p.Lookup(b); ok {
		t.Fatal("a removed token still routes")
	}
	if _, ok := p.Lookup("agentctl-test-99"); ok {
		t.Fatal("an unknown token routes")
	}
}

// TestFailedDuringCall: one text for a crashed server's call, whether the
// cause comes from the lane (the server's output ended) or from go-sdk's
// client session, which wraps it (go-sdk v1.8.0 mcp/transport.go, call).
func TestFailedDuringCall(t *testing.T) {
	const want = `MCP server "up" failed during the call: EOF; agentctl is restarting it`
	for _, cause := range []error{errEOF{}, fmt.Errorf("calling %q: %w", "tools/call", errEOF{})} {
		r := ToolError(FailedDuringCall("up", cause))
		if !r.IsError || r.Content[0].(*mcp.TextContent).Text != want {
			t.Errorf("cause %q: %+v", cause, r.Content[0])
		}
	}
	// Other wrappings say something: they stay.
	other := fmt.Errorf("connection closed: calling %q: %w", "tools/call", errEOF{})
	if got := FailedDuringCall("up", other); !strings.Contains(got, "connection closed: calling") {
		t.Errorf("got %s", got)
	}
}

type errEOF struct{}

func (errEOF) Error() string { return "EOF" }
