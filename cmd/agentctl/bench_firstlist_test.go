package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
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

// firstListRuns serves the instance id once per iteration, timing the first
// tools/list; it also reports how many tools that list had.
func firstListRuns(b *testing.B, bin string, env []string, id string) {
	const script = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
`
	var ds []time.Duration
	tools := 0
	for b.Loop() {
		cmd := exec.Command(bin, "mcp", "serve", "--instance", id)
		cmd.Env = env
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		if _, err := io.WriteString(stdin, script); err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<22), 1<<22)
		got := false
		for sc.Scan() {
			var msg struct {
				ID     int `json:"id"`
				Result struct {
					Tools []struct{ Name string } `json:"tools"`
				} `json:"result"`
			}
			if json.Unmarshal(sc.Bytes(), &msg) == nil && msg.ID == 2 {
				got, tools = true, len(msg.Result.Tools)
				break
			}
		}
		ds = append(ds, time.Since(start))
		stdin.Close()
		go io.Copy(io.Discard, stdout) // a tools/list_changed may still come
		if err := cmd.Wait(); err != nil || !got {
			b.Fatalf("serve: %v, tools/list answered: %v", err, got)
		}
	}
	reportMedian(b, ds)
	b.ReportMetric(float64(tools), "tools/first_list")
}
