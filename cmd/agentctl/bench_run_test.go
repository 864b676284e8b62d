package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkInstanceRun measures `agentctl instance run` as whole processes,
// against two floors in the same run: `agentctl version` (agentctl's own
// start and exit), and the client started directly with the command line,
// directory and environment `run` would give it (what `--dry-run -o json`
// prints). The client is the fake client (testdata/fakeclient) as
// "opencode", reading its configuration and starting no server
// (FAKECLIENT_SESSION=skip), so what run adds is instance_run minus
// client_direct: the store reads and writes of the status, the run log, the
// lock, the catalog and the second process start. "added" times the two
// alternately and reports the median difference.
//
//	go test -run '^$' -bench InstanceRun -benchmem -count 6 ./cmd/agentctl
func BenchmarkInstanceRun(b *testing.B) {
	bin := realBinary(b)
	env, _ := benchEnv(b)
	path := fakeClientOnPath(&testing.T{}, "opencode")
	fakeDir := strings.SplitN(path, string(os.PathListSeparator), 2)[0]
	env = append(env, "PATH="+path, "FAKECLIENT_SESSION=skip")
	ws := b.TempDir()
	out, err := exec.Command(bin, append([]string{"instance", "create", "--agent", "opencode", "--workspace", ws}, envArgs(env)...)...).Output()
	if err != nil {
		b.Fatal(err)
	}
	id := strings.TrimSpace(string(out))
	dry := exec.Command(bin, append([]string{"instance", "run", id, "--prompt", "say hi", "--dry-run", "-o", "json"}, envArgs(env)...)...)
	dry.Env = env
	out, err = dry.Output()
	if err != nil {
		b.Fatal(err)
	}
	var plan struct {
		Args []string `json:"args"`
		Dir  string   `json:"dir"`
		Env  []struct{ Name, Value string }
	}
	if err := json.Unmarshal(out, &plan); err != nil {
		b.Fatal(err)
	}
	direct := append([]string{}, env...)
	for _, e := range plan.Env {
		direct = append(direct, e.Name+"="+e.Value)
	}

	b.Run("baseline_version", func(b *testing.B) { runProcess(b, bin, env, "version") })
	b.Run("dry_run", func(b *testing.B) {
		runProcess(b, bin, env, append([]string{"instance", "run", id, "--prompt", "say hi", "--dry-run"}, envArgs(env)...)...)
	})
	clientDirect := func(b *testing.B) time.Duration {
		cmd := exec.Command(filepath.Join(fakeDir, "opencode"), plan.Args...)
		cmd.Dir, cmd.Env = plan.Dir, direct
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		return time.Since(start)
	}
	runArgs := append([]string{"instance", "run", id, "--prompt", "say hi"}, envArgs(env)...)
	b.Run("client_direct", func(b *testing.B) {
		var ds []time.Duration
		b.ReportAllocs()
		for b.Loop() {
			ds = append(ds, clientDirect(b))
		}
		reportMedian(b, ds)
	})
	b.Run("instance_run", func(b *testing.B) {
		runProcess(b, bin, env, runArgs...)
	})
	// added: the two alternately in one loop (which goes first swaps each
	// iteration), and the median of the differences, so that both sides
	// see the same machine.
	b.Run("added", func(b *testing.B) {
		pairedProcesses(b, "direct", func() time.Duration { return clientDirect(b) }, "run", func() time.Duration { return timeProcess(b, bin, env, runArgs...) })
	})
}
