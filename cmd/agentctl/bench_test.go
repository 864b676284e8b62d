package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/testkit"
)

// Whole-process benchmarks of the real binary. Each reports the median
// wall time per run as "ms/median" next to Go's mean ns/op; the
// "baseline" sub-benchmark runs `agentctl version` (process start and
// exit, nothing else) in the same run.

// benchEnv is an isolated environment with a state directory.
func benchEnv(b *testing.B) (env []string, state string) {
	dir := b.TempDir()
	state = filepath.Join(dir, "state")
	env = append(os.Environ(),
		"HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_STATE_HOME="+filepath.Join(dir, "xstate"),
		"AGENTCTL_STATE_DIR="+state)
	return env, state
}

func reportMedian(b *testing.B, d []time.Duration) {
	slices.Sort(d)
	if len(d) > 0 {
		b.ReportMetric(float64(d[len(d)/2])/float64(time.Millisecond), "ms/median")
	}
}

// runProcess benchmarks one whole command.
func runProcess(b *testing.B, bin string, env []string, args ...string) {
	var ds []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %v\n%s", args, err, out)
		}
		ds = append(ds, time.Since(start))
	}
	reportMedian(b, ds)
}

// timeProcess runs bin with args and env once and returns its wall time.
func timeProcess(b *testing.B, bin string, env []string, args ...string) time.Duration {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s %v: %v\n%s", filepath.Base(bin), args, err, out)
	}
	return time.Since(start)
}

// pairedProcesses times base and subject alternately in one loop (which
// goes first swaps every iteration), so that both see the same machine,
// and reports the median of the per-iteration ratios subject/base
// ("ratio/median") and differences ("ms-added/median"), and each side's
// median wall time ("ms-NAME/median"). Where a target is a ratio or a
// difference of two commands, this is how it is measured.
func pairedProcesses(b *testing.B, baseName string, base func() time.Duration, subjectName string, subject func() time.Duration) {
	var ratios, added, tb, ts []float64
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for i := 0; b.Loop(); i++ {
		var db, ds time.Duration
		if i%2 == 0 {
			db, ds = base(), subject()
		} else {
			ds, db = subject(), base()
		}
		ratios, added = append(ratios, float64(ds)/float64(db)), append(added, ms(ds-db))
		tb, ts = append(tb, ms(db)), append(ts, ms(ds))
	}
	med := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	b.ReportMetric(med(ratios), "ratio/median")
	b.ReportMetric(med(added), "ms-added/median")
	b.ReportMetric(med(tb), "ms-"+baseName+"/median")
	b.ReportMetric(med(ts), "ms-"+subjectName+"/median")
}

// BenchmarkProcess measures short commands as whole processes, with
// floors in the same run: `agentctl version` (agentctl's own start and
// exit), a minimal go-sdk program (testdata/minimal: links the SDK, makes a
// server, prints a version), which is what start-up costs without
// agentctl's other dependencies, and the same with the SQLite driver
// linked (testdata/minimalsqlite).
//
//	go test -run '^$' -bench Process -benchmem -count 6 ./cmd/agentctl
func BenchmarkProcess(b *testing.B) {
	bin := realBinary(b)
	env, _ := benchEnv(b)
	// Built as agentctl is (static): the same start-up path on both sides.
	minimal, minimalSQLite := testkit.Build(b, "minimal", staticBuild...), testkit.Build(b, "minimalsqlite", staticBuild...)
	b.Run("floor_minimal_gosdk", func(b *testing.B) { runProcess(b, minimal, env) })
	b.Run("baseline_version", func(b *testing.B) { runProcess(b, bin, env, "version") })
	b.Run("agents_list", func(b *testing.B) { runProcess(b, bin, env, "agents", "list") })
	// The targets: each within 1.1x of the minimal program, alternately.
	floor := func() time.Duration { return timeProcess(b, minimal, env) }
	b.Run("version_vs_minimal", func(b *testing.B) {
		pairedProcesses(b, "minimal", floor, "version", func() time.Duration { return timeProcess(b, bin, env, "version") })
	})
	b.Run("agents_list_vs_minimal", func(b *testing.B) {
		pairedProcesses(b, "minimal", floor, "agents_list", func() time.Duration { return timeProcess(b, bin, env, "agents", "list") })
	})
	// What linking the SQLite driver alone costs the minimal program's
	// start, and agentctl's start against that floor.
	b.Run("minimal_sqlite_vs_minimal", func(b *testing.B) {
		pairedProcesses(b, "minimal", floor, "minimal_sqlite", func() time.Duration { return timeProcess(b, minimalSQLite, env) })
	})
	b.Run("version_vs_minimal_sqlite", func(b *testing.B) {
		pairedProcesses(b, "minimal_sqlite", func() time.Duration { return timeProcess(b, minimalSQLite, env) },
			"version", func() time.Duration { return timeProcess(b, bin, env, "version") })
	})
	b.Run("instance_create", func(b *testing.B) {
		runProcess(b, bin, env, "instance", "create", "--agent", "auggie", "--workspace", b.TempDir())
	})
}

// BenchmarkServeStartup measures `agentctl mcp serve --instance ID` from
// process start to the answer of the first tools/list (initialize,
// initialized, tools/list over stdio), and against a minimal go-sdk stdio
// server in the same run, against that server linking agentctl's other
// libraries, against that server reading the instance's record from the
// store first, and against that one linking the libraries too.
//
//	go test -run '^$' -bench ServeStartup -benchtime 40x -count 3 ./cmd/agentctl
func BenchmarkServeStartup(b *testing.B) {
	bin := realBinary(b)
	env, _ := benchEnv(b)
	out, err := exec.Command(bin, append([]string{"instance", "create", "--agent", "auggie", "--workspace", b.TempDir()}, envArgs(env)...)...).Output()
	if err != nil {
		b.Fatal(err)
	}
	id := strings.TrimSpace(string(out))
	b.Run("baseline_version", func(b *testing.B) { runProcess(b, bin, env, "version") })
	b.Run("serve_to_first_tools_list", func(b *testing.B) {
		if n := firstListRuns(b, bin, env, id); n != 3 {
			b.Fatalf("the first tools/list had %d tools, want the 3 built-ins", n)
		}
	})
	// The floors, each alternately with agentctl (target: 1.3x): a
	// minimal go-sdk stdio server with three tools (testdata/minimalstdio);
	// the same linking the libraries agentctl links besides go-sdk (-tags
	// libs), what their start-up costs any program that uses them; that
	// server reading the instance's record from the SQLite store first
	// (testdata/minimalstdiostore), the least any server serving from the
	// durable record does; and that one linking the libraries too, the
	// least a program built with the project's libraries pays to serve an
	// instance from its record. What is above a floor is agentctl's.
	libs := append([]string{"GOFLAGS=-tags=libs"}, staticBuild...)
	for _, floor := range []struct {
		name, bin string
		args      []string
	}{
		{"minimal_stdio", testkit.Build(b, "minimalstdio", staticBuild...), nil},
		{"minimal_stdio_libs", testkit.Build(b, "minimalstdio", libs...), nil},
		{"minimal_stdio_store", testkit.Build(b, "minimalstdiostore", staticBuild...), []string{id}},
		{"minimal_stdio_store_libs", testkit.Build(b, "minimalstdiostore", libs...), []string{id}},
	} {
		b.Run("serve_vs_"+floor.name, func(b *testing.B) {
			pairedProcesses(b, floor.name, func() time.Duration {
				d, n := timeFirstList(b, floor.bin, env, floor.args...)
				if n != 3 {
					b.Fatalf("%s listed %d tools, want 3", floor.name, n)
				}
				return d
			}, "serve", func() time.Duration { d, _ := timeFirstList(b, bin, env, "mcp", "serve", "--instance", id); return d })
		})
	}
}

// envArgs passes the state directory explicitly (exec.Command's own env is
// the test's otherwise).
func envArgs(env []string) []string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "AGENTCTL_STATE_DIR="); ok {
			return []string{"--state-dir", v}
		}
	}
	return nil
}

// firstListRuns serves the instance id once per iteration, timing from
// process start to the answer of the first tools/list (initialize,
// initialized, tools/list over stdio); it reports and returns how many
// tools the last such list had.
func firstListRuns(b *testing.B, bin string, env []string, id string) (tools int) {
	var ds []time.Duration
	for b.Loop() {
		var d time.Duration
		d, tools = timeFirstList(b, bin, env, "mcp", "serve", "--instance", id)
		ds = append(ds, d)
	}
	reportMedian(b, ds)
	b.ReportMetric(float64(tools), "tools/first_list")
	return tools
}

// timeFirstList starts the stdio MCP server bin with args once and times
// process start to the answer of the first tools/list (initialize,
// initialized, tools/list); it returns that and how many tools it listed.
func timeFirstList(b *testing.B, bin string, env []string, args ...string) (time.Duration, int) {
	d, tools, _ := serveFirstList(b, bin, env, 0, args...)
	return d, tools
}

// serveFirstList is [timeFirstList] that keeps the client's end open for
// hold after the answer before it closes it, and returns the CPU time the
// process's threads took meanwhile, from 1 s after the answer (Linux: the
// benchmark is skipped elsewhere).
func serveFirstList(b *testing.B, bin string, env []string, hold time.Duration, args ...string) (time.Duration, int, time.Duration) {
	const script = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
`
	cmd := exec.Command(bin, args...)
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
	got, tools := false, 0
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
	d := time.Since(start)
	var cpu time.Duration
	if hold > 0 {
		// What the start left to do: the endpoint begins following its
		// record 250 ms in (serving.Follow).
		time.Sleep(time.Second)
		before, ok1 := processCPU(cmd.Process.Pid)
		time.Sleep(hold)
		after, ok2 := processCPU(cmd.Process.Pid)
		if !ok1 || !ok2 {
			b.Skip("needs /proc/PID/task/*/schedstat (Linux)")
		}
		cpu = after - before
	}
	stdin.Close()
	go io.Copy(io.Discard, stdout) // a tools/list_changed may still come
	if err := cmd.Wait(); err != nil || !got {
		b.Fatalf("%s: %v, tools/list answered: %v", filepath.Base(bin), err, got)
	}
	return d, tools, cpu
}

// BenchmarkServeIdle measures what `agentctl mcp serve` costs the machine
// while its client is connected but quiet, as an endpoint is for most of
// its life: the CPU time its threads take over 10 s idle after its first
// tools/list (a whole period of the store's fallback poll), per second,
// alternately with the same for the minimal go-sdk stdio server (the
// floor: a Go program that only waits for its client).
//
//	go test -run '^$' -bench ServeIdle -benchtime 2x -count 2 ./cmd/agentctl
func BenchmarkServeIdle(b *testing.B) {
	bin := realBinary(b)
	env, _ := benchEnv(b)
	id := benchCreate(b, bin, env, "auggie")
	minimal := testkit.Build(b, "minimalstdio", staticBuild...)
	const hold = 10 * time.Second
	perIdleSecond := func(prog string, args ...string) float64 {
		_, _, cpu := serveFirstList(b, prog, env, hold, args...)
		return float64(cpu) / float64(time.Microsecond) / hold.Seconds()
	}
	var served, floor []float64
	for i := 0; b.Loop(); i++ {
		serve := func() { served = append(served, perIdleSecond(bin, "mcp", "serve", "--instance", id)) }
		min := func() { floor = append(floor, perIdleSecond(minimal)) }
		if i%2 == 0 {
			serve()
			min()
		} else {
			min()
			serve()
		}
	}
	slices.Sort(served)
	slices.Sort(floor)
	b.ReportMetric(served[len(served)/2], "µs-cpu-per-idle-s/median")
	b.ReportMetric(floor[len(floor)/2], "µs-cpu-per-idle-s-minimal_stdio/median")
}
