package serving_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/cmd/internal/serving"
	"github.com/agentctl/agentctl/mcpserver/httpserve"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchTools are the calls the in-process benchmarks time: a
// knowledge-base read and a built-in tool.
var benchTools = []struct {
	name string
	call mcp.CallToolParams
}{
	{"kb", mcp.CallToolParams{Name: "concept_read", Arguments: map[string]any{"id": "c3"}}},
	{"builtin", mcp.CallToolParams{Name: "get_instance_agentctl"}},
}

// BenchmarkDaemonCall is one knowledge-base read, and one get_instance,
// through the daemon, in process (for profiling the daemon's share;
// BenchmarkServeHTTPCall and BenchmarkServeHTTPBuiltin in cmd/agentctl are
// the comparisons with a bare server).
func BenchmarkDaemonCall(b *testing.B) {
	for _, era := range []struct{ name, version string }{{"stateful", "2025-11-25"}, {"stateless", ""}} {
		b.Run(era.name, func(b *testing.B) {
			w := newWorld(b, nil)
			dir := b.TempDir()
			os.WriteFile(filepath.Join(dir, "c3.md"), []byte("# C3\n"), 0o644)
			rec := w.create("claude-code", mount.Mount{Kind: mount.KindKB, Name: "docs", Path: dir})
			cs := w.connect(rec.ID, era.version)
			for _, tool := range benchTools {
				b.Run(tool.name, func(b *testing.B) { benchCalls(b, cs, tool.call) })
			}
		})
	}
}

// BenchmarkBareCall is BenchmarkDaemonCall's baseline in process: the
// endpoint's own mcp.Server behind go-sdk's handlers alone (no daemon,
// guard, token or httpserve.Handler), to see what the daemon adds.
func BenchmarkBareCall(b *testing.B) {
	for _, era := range []struct{ name, version string }{{"stateful", "2025-11-25"}, {"stateless", ""}} {
		b.Run(era.name, func(b *testing.B) {
			w := newWorld(b, nil)
			dir := b.TempDir()
			os.WriteFile(filepath.Join(dir, "c3.md"), []byte("# C3\n"), 0o644)
			rec := w.create("claude-code", mount.Mount{Kind: mount.KindKB, Name: "docs", Path: dir})
			srv := serving.BareServerForTest(b, w.st, rec)
			get := func(*http.Request) *mcp.Server { return srv }
			stateful := mcp.NewStreamableHTTPHandler(get, nil)
			stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true})
			ts := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				if httpserve.IsStateless(r) {
					stateless.ServeHTTP(rw, r)
					return
				}
				stateful.ServeHTTP(rw, r)
			}))
			b.Cleanup(ts.Close)
			c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v1"}, nil)
			cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL}, &mcp.ClientSessionOptions{ProtocolVersion: era.version})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { cs.Close() })
			for _, tool := range benchTools {
				b.Run(tool.name, func(b *testing.B) { benchCalls(b, cs, tool.call) })
			}
		})
	}
}

func benchCalls(b *testing.B, cs *mcp.ClientSession, call mcp.CallToolParams) {
	for b.Loop() {
		res, err := cs.CallTool(context.Background(), &call)
		if err != nil || res.IsError {
			b.Fatal(res, err)
		}
	}
}
