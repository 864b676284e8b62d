package mcpserver

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listDeadline bounds a tools/list that must not wait for a slow server:
// far above any first_list_wait these tests use, far below the time the
// slow server takes (it comes up only when the test says so).
const listDeadline = 30 * time.Second

// TestFirstListDoesNotWaitForASlowServer: a client that follows
// tools/list_changed gets its first tools/list while a server is still
// starting, with what is ready (the built-ins, a knowledge base); when the
// server comes up it gets tools/list_changed, and the list has its tools.
// On both paths (the lane answers tools/list itself).
func TestFirstListDoesNotWaitForASlowServer(t *testing.T) {
	forEachPath(t, func(t *testing.T, path servePath) {
		gate := filepath.Join(t.TempDir(), "up")
		slow := withBin(t, mcpMount("slow", "-start-gate", gate))
		slow.Timeout = mount.Duration(time.Hour) // only the gate decides
		kb := mount.Mount{Kind: mount.KindKB, Name: "docs", Path: t.TempDir()}
		p := startProxyWith(t, path, func(c *Config) {
			c.ToolsListChanged, c.FirstListWait = true, 50*time.Millisecond
		}, mount.PrefixModeMountName, kb, slow)

		names := listWithin(t, p.cs)
		for _, want := range []string{"ask_user_question", "docs__concept_read"} {
			if !slices.Contains(names, want) {
				t.Fatalf("the first tools/list lacks the ready tool %s: %v", want, names)
			}
		}
		if slices.Contains(names, "slow__tool_0") {
			t.Fatalf("the first tools/list has the tools of a server that has not come up: %v", names)
		}

		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		select {
		case n := <-p.notes:
			if n != "list_changed" {
				t.Fatalf("got %s, want tools/list_changed", n)
			}
		case <-time.After(time.Minute):
			t.Fatal("no tools/list_changed when the slow server came up")
		}
		testkit.Eventually(t, "the slow server's tools in tools/list", func() bool {
			return slices.Contains(listWithin(t, p.cs), "slow__tool_0")
		})
	})
}

// TestFirstListWaitsForANonFollowingClient: a client not known to follow
// tools/list_changed gets, in its first tools/list, the tools of a server
// that comes up within its timeout, however short first_list_wait is.
func TestFirstListWaitsForANonFollowingClient(t *testing.T) {
	forEachPath(t, func(t *testing.T, path servePath) {
		slow := withBin(t, mcpMount("slow", "-start-delay", "1s"))
		slow.Timeout = mount.Duration(time.Hour)
		p := startProxyWith(t, path, func(c *Config) {
			c.ToolsListChanged, c.FirstListWait = false, 0
		}, mount.PrefixModeMountName, slow)
		res, err := p.cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "tool_0" }) {
			t.Fatalf("the first tools/list of a client that lists once lacks the slow server's tools: %d tools", len(res.Tools))
		}
	})
}

// listWithin lists the tools, failing past listDeadline.
func listWithin(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), listDeadline)
	defer cancel()
	return testkit.ToolNames(ctx, t, cs)
}
