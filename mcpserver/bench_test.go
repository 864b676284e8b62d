package mcpserver

import (
	"context"
	"testing"

	"github.com/agentctl/agentctl/agents"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bareServer registers the same tools as an endpoint, under the same
// canonical names, on a plain go-sdk server with no presentation layer: the
// baseline for the endpoint's overhead.
func bareServer(t testing.TB, st Store) *mcp.Server {
	cfg := testConfig(agents.NamespacingSuffix, st)
	ep, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ask, prog, get, err := builtinTools(cfg.ServerName)
	if err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(implementation(ep.cfg), &mcp.ServerOptions{Logger: ep.log, Instructions: instructions(ep.cfg)})
	mcp.AddTool(s, ask, ep.askUserQuestion)
	mcp.AddTool(s, prog, ep.reportProgress)
	mcp.AddTool(s, get, ep.getInstance)
	return s
}

func session(b *testing.B, s *mcp.Server) *mcp.ClientSession {
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

// nopStore records nothing, so the benchmark measures the endpoint.
type nopStore struct{ *fakeStore }

func (nopStore) RecordProgress(context.Context, string, string, string, string, *float64) (int64, error) {
	return 1, nil
}

// BenchmarkEndpoint compares tools/list and tools/call through the endpoint
// (presentation on: a suffix client, names stripped and routed back) with a
// bare go-sdk server registering the same tools, over the same in-memory
// transport. Compare the "endpoint" and "bare" lines of one run.
func BenchmarkEndpoint(b *testing.B) {
	ctx := context.Background()
	servers := map[string]func(b *testing.B) (*mcp.Server, string){
		"bare": func(b *testing.B) (*mcp.Server, string) {
			return bareServer(b, nopStore{newFakeStore()}), "report_progress_agentctl"
		},
		"endpoint": func(b *testing.B) (*mcp.Server, string) {
			ep, err := New(testConfig(agents.NamespacingSuffix, nopStore{newFakeStore()}))
			if err != nil {
				b.Fatal(err)
			}
			return ep.Server(), "report_progress" // the transport name an Auggie model sends
		},
	}
	args := map[string]any{"message": "compiling", "status": "running", "percent": 40}
	for _, name := range []string{"bare", "endpoint"} {
		b.Run("op=tools_list/server="+name, func(b *testing.B) {
			s, _ := servers[name](b)
			cs := session(b, s)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cs.ListTools(ctx, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("op=tools_call/server="+name, func(b *testing.B) {
			s, tool := servers[name](b)
			cs := session(b, s)
			params := &mcp.CallToolParams{Name: tool, Arguments: args}
			b.ReportAllocs()
			for b.Loop() {
				res, err := cs.CallTool(ctx, params)
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		})
	}
}
