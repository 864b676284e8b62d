package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/oklog/ulid/v2"
	_ "modernc.org/sqlite"
)

// BenchmarkStoreScale measures the CLI against a store of 10 and of 10,000
// instances, whole process, with `agentctl version` (process start and
// exit) as the floor in the same run: `instance list -o json --limit 50`,
// `instance list --status done --limit 5` and `instance create` must cost
// the same whatever the size of the store.
//
//	go test -run '^$' -bench StoreScale -benchmem -count 6 ./cmd/agentctl
func BenchmarkStoreScale(b *testing.B) {
	bin := realBinary(b)
	small, _ := benchEnv(b)
	large, largeState := benchEnv(b)
	seedInstances(b, bin, small, 10)
	seedInstances(b, bin, large, 10_000)
	if _, err := os.Stat(largeState); err != nil {
		b.Fatal(err)
	}
	b.Run("baseline_version", func(b *testing.B) { runProcess(b, bin, large, "version") })
	for _, s := range []struct {
		name string
		env  []string
	}{{"instances=10", small}, {"instances=10000", large}} {
		b.Run("list_json_limit50/"+s.name, func(b *testing.B) {
			runProcess(b, bin, s.env, "instance", "list", "-o", "json", "--limit", "50")
		})
		b.Run("create/"+s.name, func(b *testing.B) {
			runProcess(b, bin, s.env, "instance", "create", "--agent", "auggie", "--workspace", b.TempDir())
		})
	}
	// The targets, each side timed alternately: list at 10,000 against
	// version, and create at 10,000 against create at 10.
	list := []string{"instance", "list", "-o", "json", "--limit", "50"}
	b.Run("list_10000_vs_version", func(b *testing.B) {
		pairedProcesses(b, "version", func() time.Duration { return timeProcess(b, bin, large, "version") },
			"list", func() time.Duration { return timeProcess(b, bin, large, list...) })
	})
	// The floor of that listing (testdata/minimallist): opening the state
	// database with the same driver and reading the same 50 rows, in a
	// program that links only the go-sdk and the driver. Against version,
	// it is what SQLite alone costs a listing; the listing against it is
	// what agentctl adds (decoding, redacting and printing the records).
	floor := testkit.Build(b, "minimallist", staticBuild...)
	db := filepath.Join(largeState, "state.db")
	b.Run("list_floor_vs_version", func(b *testing.B) {
		pairedProcesses(b, "version", func() time.Duration { return timeProcess(b, bin, large, "version") },
			"floor", func() time.Duration { return timeProcess(b, floor, large, db) })
	})
	b.Run("list_10000_vs_floor", func(b *testing.B) {
		pairedProcesses(b, "floor", func() time.Duration { return timeProcess(b, floor, large, db) },
			"list", func() time.Duration { return timeProcess(b, bin, large, list...) })
	})
	create := func(env []string) func() time.Duration {
		return func() time.Duration {
			return timeProcess(b, bin, env, "instance", "create", "--agent", "auggie", "--workspace", b.TempDir())
		}
	}
	b.Run("create_10000_vs_10", func(b *testing.B) {
		pairedProcesses(b, "at10", create(small), "at10000", create(large))
	})
	// What the size of the store costs a listing of the same 50 records:
	// at 10,000 instances against at 100.
	hundred, _ := benchEnv(b)
	seedInstances(b, bin, hundred, 100)
	b.Run("list_10000_vs_100", func(b *testing.B) {
		pairedProcesses(b, "at100", func() time.Duration { return timeProcess(b, bin, hundred, list...) },
			"at10000", func() time.Duration { return timeProcess(b, bin, large, list...) })
	})
	// The same for --status, with a rare status: every instance reports
	// running, and only the five oldest are done, so that a filter that
	// looked at each instance's latest event would read the whole store
	// to find them. Seeded last, so the lines above see no events.
	seedStatuses(b, hundred)
	seedStatuses(b, large)
	status := []string{"instance", "list", "-o", "json", "--status", "done", "--limit", "5"}
	listsDone(b, bin, hundred, status...)
	listsDone(b, bin, large, status...)
	b.Run("list_status_10000_vs_100", func(b *testing.B) {
		pairedProcesses(b, "at100", func() time.Duration { return timeProcess(b, bin, hundred, status...) },
			"at10000", func() time.Duration { return timeProcess(b, bin, large, status...) })
	})
	// --status against --agent (the instances_agent index) at 10,000,
	// each printing five records.
	agent := []string{"instance", "list", "-o", "json", "--agent", "auggie", "--limit", "5"}
	b.Run("list_status_vs_agent_10000", func(b *testing.B) {
		pairedProcesses(b, "agent", func() time.Duration { return timeProcess(b, bin, large, agent...) },
			"status", func() time.Duration { return timeProcess(b, bin, large, status...) })
	})
}

// seedStatuses gives every instance in the store of env a running report
// and the five oldest a done one after it, as report_progress would have
// stored them.
func seedStatuses(b *testing.B, env []string) {
	b.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(envArgs(env)[1], "state.db")+"?_pragma=busy_timeout(30000)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	at := time.Now().UTC().Format("2006-01-02T15:04:05.000000000Z07:00")
	for _, q := range []string{
		`INSERT INTO events (instance_id, at, tool, status, message) SELECT id, ?, 'report_progress_agentctl', 'running', 'working' FROM instances ORDER BY id`,
		`INSERT INTO events (instance_id, at, tool, status, message) SELECT id, ?, 'report_progress_agentctl', 'done', 'finished' FROM instances ORDER BY id LIMIT 5`,
	} {
		if _, err := db.Exec(q, at); err != nil {
			b.Fatal(err)
		}
	}
}

// listsDone checks that `agentctl args...` in env prints the five done
// instances of [seedStatuses], so that the figures time the right listing.
func listsDone(b *testing.B, bin string, env []string, args ...string) {
	b.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%v: %v", args, err)
	}
	var got []struct{ Status string }
	if err := json.Unmarshal(out, &got); err != nil {
		b.Fatalf("%v: %v\n%s", args, err, out)
	}
	if len(got) != 5 || got[0].Status != "done" || got[4].Status != "done" {
		b.Fatalf("%v printed %d instances, want the 5 done ones:\n%s", args, len(got), out)
	}
}

// seedInstances fills the store of env with n instances quickly: one real
// create, then n-1 copies of its row (ids one millisecond apart, as many
// creates would have made them) and their directories.
func seedInstances(b *testing.B, bin string, env []string, n int) {
	b.Helper()
	cmd := exec.Command(bin, "instance", "create", "--agent", "auggie", "--workspace", b.TempDir(), "-o", "json")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		b.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(out, &rec); err != nil {
		b.Fatal(err)
	}
	state := envArgs(env)[1]
	db, err := sql.Open("sqlite", "file:"+filepath.Join(state, "state.db")+"?_pragma=busy_timeout(30000)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	start := time.Now().Add(-time.Duration(n) * time.Minute)
	for i := 1; i < n; i++ {
		t := start.Add(time.Duration(i) * time.Millisecond)
		id := strings.ToLower(ulid.MustNew(ulid.Timestamp(t), rand.Reader).String())
		dir := filepath.Join(state, "instances", id)
		if err := os.Mkdir(dir, 0o700); err != nil {
			b.Fatal(err)
		}
		rec["id"], rec["dir"], rec["name"] = id, dir, fmt.Sprintf("seed-%d", i)
		rec["created_at"] = t.UTC().Format(time.RFC3339Nano)
		raw, err := json.Marshal(rec)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO instances (id, name, agent, created_at, record) VALUES (?, ?, ?, ?, ?)`,
			id, rec["name"], rec["agent"], rec["created_at"], string(raw)); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}
