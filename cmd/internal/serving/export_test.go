package serving

import (
	"context"
	"log/slog"
	"testing"

	"github.com/agentctl/agentctl/instance"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BareServerForTest builds rec's endpoint as the daemon does and returns
// its mcp.Server, for benchmarks that serve it without the daemon.
func BareServerForTest(tb testing.TB, st *instance.Store, rec *instance.Record) *mcp.Server {
	s, err := buildEndpoint(context.Background(), st, rec, EndpointOptions{Version: "test"}, slog.New(slog.DiscardHandler))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.close)
	return s.ep.Server()
}
