package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// BenchmarkToolsList measures `tools list` and `tools lint` over every
// agent (--agent all) for an instance with 5 knowledge bases and 2 external
// stdio servers of 50 tools each (the test upstream), the servers started,
// listed and stopped in each run, next to `agentctl version` as the floor
// and the same list without --connect.
func BenchmarkToolsList(b *testing.B) {
	bin, upstream := realBinary(b), serverBin(b)
	env, _ := benchEnv(b)
	args := []string{"instance", "create", "--agent", "auggie", "--workspace", b.TempDir()}
	for i := range 5 {
		args = append(args, "--kb", fmt.Sprintf("kb%d=%s", i, b.TempDir()))
	}
	for i := range 2 {
		// 45 tool_i and the upstream's 5 others: 50 tools.
		args = append(args, "--mcp", fmt.Sprintf("up%d=%s -tools 45", i, upstream))
	}
	out, err := exec.Command(bin, append(args, envArgs(env)...)...).Output()
	if err != nil {
		b.Fatal(err)
	}
	id := strings.TrimSpace(string(out))
	check, err := exec.Command(bin, append([]string{"tools", "list", "--instance", id, "-o", "json"}, envArgs(env)...)...).Output()
	if err != nil || strings.Count(string(check), `"kind": "mcp"`) != 100 {
		b.Fatalf("tools list: %v; want 100 external tools in\n%.2000s", err, check)
	}
	b.Run("baseline_version", func(b *testing.B) { runProcess(b, bin, env, "version") })
	b.Run("tools_list_all", func(b *testing.B) { runProcess(b, bin, env, "tools", "list", "--instance", id, "--agent", "all") })
	b.Run("tools_lint_all", func(b *testing.B) { runProcess(b, bin, env, "tools", "lint", "--instance", id, "--agent", "all") })
	// The same without the servers: what starting and listing them costs.
	b.Run("tools_list_all_no_connect", func(b *testing.B) {
		runProcess(b, bin, env, "tools", "list", "--instance", id, "--agent", "all", "--connect=false")
	})
}
