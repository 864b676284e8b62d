package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkDaemonCall is one knowledge-base read through the daemon, in
// process (for profiling the daemon's share; BenchmarkServeHTTPCall in
// cmd/agentctl is the comparison with a bare server).
func BenchmarkDaemonCall(b *testing.B) {
	for _, era := range []struct{ name, version string }{{"stateful", "2025-11-25"}, {"stateless", ""}} {
		b.Run(era.name, func(b *testing.B) {
			w := newWorld(b, nil)
			dir := b.TempDir()
			os.WriteFile(filepath.Join(dir, "c3.md"), []byte("# C3\n"), 0o644)
			rec := w.create("claude-code", mount.Mount{Kind: mount.KindKB, Name: "docs", Path: dir})
			cs := w.connect(rec.ID, era.version)
			for b.Loop() {
				if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "concept_read", Arguments: map[string]any{"id": "c3"}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
