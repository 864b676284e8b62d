package main

import (
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/internal/testkit"
)

// BenchmarkMountReach measures how long a mount change takes to reach a
// running session (issue 25 item 4): an `agentctl mcp serve` process of a
// Gemini instance (a client that follows tools/list_changed), driven over
// stdio, while `agentctl instance mount add` and `mount remove` of a
// knowledge base run as processes in turn. Reported per store: from the
// command's exit to the notifications/tools/list_changed the session gets
// (ms-STORE/median, /p90; PostgreSQL wakes the endpoint by NOTIFY, SQLite
// by its poll of the record every 250 ms, so about 125 ms there; each
// change comes after a random pause), beside
// the command's own time (ms-STORE-command/median), the floor a person
// waits for anyway.
//
//	go test -run '^$' -bench MountReach -benchtime 20x -count 3 ./cmd/agentctl
func BenchmarkMountReach(b *testing.B) {
	bin := realBinary(b)
	pg := testkit.StartPostgres(b)
	type side struct {
		name          string
		env           []string
		id            string
		peer          *benchStdioPeer
		added         bool
		reach, ownRun []time.Duration
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.md"), []byte("# a\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	sides := []*side{
		{name: "postgres", env: storeBenchEnv(b, pg.NewDatabase(b))},
		{name: "sqlite", env: storeBenchEnv(b, "")},
	}
	for _, s := range sides {
		s.id = benchCreate(b, bin, s.env, "gemini")
		s.peer = startBenchStdioPeer(b, bin, s.env, "mcp", "serve", "--instance", s.id)
		s.peer.send(b, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		s.peer.await(b, 2, 30*time.Second)
	}
	round := func(s *side) {
		b.StopTimer()
		// The last change's notifications; then a random pause of up to a
		// poll interval, so that the change lands at a random moment of
		// the store's watch (SQLite's), as a person's would.
		time.Sleep(50*time.Millisecond + mrand.N(instance.SQLiteWatchInterval))
		s.peer.drain()
		b.StartTimer()
		args := []string{"instance", "mount", "add", s.id, "--kb", "reach=" + dir, "--yes"}
		if s.added {
			args = []string{"instance", "mount", "remove", s.id, "reach", "--yes"}
		}
		s.added = !s.added
		start := time.Now()
		took := timeProcess(b, bin, s.env, args...)
		exit := start.Add(took)
		l := s.peer.awaitMethod(b, "notifications/tools/list_changed", 30*time.Second)
		s.reach = append(s.reach, l.at.Sub(exit))
		s.ownRun = append(s.ownRun, took)
	}
	for i := 0; b.Loop(); i++ {
		for j := range sides {
			round(sides[(i+j)%len(sides)])
		}
	}
	for _, s := range sides {
		b.ReportMetric(benchQuantileMs(s.reach, 0.5), "ms-"+s.name+"/median")
		b.ReportMetric(benchQuantileMs(s.reach, 0.9), "ms-"+s.name+"/p90")
		b.ReportMetric(benchQuantileMs(s.ownRun, 0.5), "ms-"+s.name+"-command/median")
	}
}

// drain drops the lines read so far.
func (p *benchStdioPeer) drain() {
	for {
		select {
		case <-p.lines:
		default:
			return
		}
	}
}
