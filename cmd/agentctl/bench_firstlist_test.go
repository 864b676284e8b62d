package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// BenchmarkFirstList measures `agentctl mcp serve` from process start to
// the answer of the first tools/list (initialize, initialized, tools/list
// over stdio) on an instance with 20 external stdio servers, 19 that come
// up at once and 1 that takes 1.5 s to start: for a client that follows
// tools/list_changed (copilot-cli: the answer after first_list_wait, 300ms
// by default) and for one that does not (claude-code: the answer waits for
// the slow server). `agentctl version` is the floor in the same run. Each
// run starts 20 processes; -benchtime 5x keeps the run short.
//
//	go test -run '^$' -bench FirstList -benchtime 5x -count 3 ./cmd/agentctl
func BenchmarkFirstList(b *testing.B) {
	bin := realBinary(b)
	up := serverBin(b)
	env, _ := benchEnv(b)
	var mounts []string
	for i := range 19 {
		mounts = append(mounts, "--mcp", fmt.Sprintf("fast%d=%s", i, up))
	}
	mounts = append(mounts, "--mcp", "slow="+up+" -start-delay 1.5s")
	create := func(agent string) string {
		args := append([]string{"instance", "create", "--agent", agent, "--workspace", b.TempDir()}, mounts...)
		cmd := exec.Command(bin, append(args, envArgs(env)...)...)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("create %s: %v", agent, err)
		}
		return strings.TrimSpace(string(out))
	}
	following, other := create("copilot-cli"), create("claude-code")
	b.Run("baseline_version", func(b *testing.B) { runProcess(b, bin, env, "version") })
	b.Run("following_client", func(b *testing.B) { firstListRuns(b, bin, env, following) })
	b.Run("non_following_client", func(b *testing.B) { firstListRuns(b, bin, env, other) })
}
