package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
)

// TestRealClientFirstList: the first tools/list through the built binary,
// seen by the TypeScript SDK client, with an external server that is slow
// to come up. For copilot-cli (tools_list_changed = true in the catalog) the
// first list comes while the server is still starting (it starts only
// when the client says so, after that list), without its tools; then
// tools/list_changed arrives and the list has them. For claude-code (not
// known to follow the notification) the first list waits for the server,
// even with first_list_wait at 0.
func TestRealClientFirstList(t *testing.T) {
	t.Parallel()
	up := serverBin(t)
	t.Run("following client", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
		defer cancel()
		e := newRCEnv(t)
		gate := filepath.Join(e.root, "let-the-server-start")
		// The gate alone decides when the server is up: its first attempt
		// would outlast the test, and so would a first tools/list that
		// waited for it.
		spec, _ := json.Marshal(map[string]any{"command": up, "args": []string{"-start-gate", gate}, "timeout": "1h"})
		rec := e.create(ctx, "--agent", "copilot-cli", "--mcp-json", "slow="+string(spec))
		plan := clientPlan(t, rec, "mcp-config.json",
			tsStep{Op: "list"},
			tsStep{Op: "touch", Path: gate},
			tsStep{Op: "await_list_changed"},
			tsStep{Op: "list"},
		)
		plan.TimeoutMs = 60_000 // per request; 200 times first_list_wait
		out := runTS(ctx, t, plan, otherDir(t), e.clientEnv())
		first := listNames(t, out.result(t, 0, "list"))
		if !slices.Contains(first, "get_instance_agentctl") || slices.Contains(first, "echo") {
			t.Fatalf("first tools/list: want the built-ins without the slow server's tools, got %v", first)
		}
		if !out.result(t, 2, "await_list_changed").Received {
			t.Fatal("no notifications/tools/list_changed when the slow server came up")
		}
		if second := listNames(t, out.result(t, 3, "list")); !slices.Contains(second, "echo") {
			t.Fatalf("tools/list after tools/list_changed lacks the server's tools: %v", second)
		}
	})
	t.Run("non-following client", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
		defer cancel()
		e := newRCEnv(t)
		rec := e.create(ctx, "--agent", "claude-code", "--mcp", "slow="+up+" -start-delay 1s")
		out := runTS(ctx, t, clientPlan(t, rec, ".mcp.json", tsStep{Op: "list"}),
			otherDir(t), append(e.clientEnv(), "AGENTCTL_FIRST_LIST_WAIT=0"))
		if first := listNames(t, out.result(t, 0, "list")); !slices.Contains(first, "echo") {
			t.Fatalf("the first tools/list of a client that lists once lacks the slow server's tools: %v", first)
		}
	})
}
