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

	"github.com/agentctl/agentctl/internal/testkit"
)

// BenchmarkLaneProcess is issue 23's lane row through real processes: one
// tools/call of an external stdio server (testdata/upstream's echo) sent by
// a raw JSON-RPC client on OS pipes to the server directly, through
// `agentctl mcp serve` (the fast lane, the default) and through
// testdata/byterelay (the floor: a process that only copies lines between
// its stdio and the server's), the three in turn in one loop, which one
// goes first rotating. µs-added-* are the medians of (through − direct)
// per round; ratio/medians is the lane's median added time over the
// relay's (the target: ≤ 1.2). faults-*/call are the middle processes'
// minor page faults per call, µs-cpu-*/call their CPU time.
//
//	go test -run '^$' -bench LaneProcess -benchtime 3000x -count 3 ./cmd/agentctl
func BenchmarkLaneProcess(b *testing.B) {
	bin, up := realBinary(b), serverBin(b)
	relay := testkit.Build(b, "byterelay", staticBuild...)
	env, _ := benchEnv(b)
	work := b.TempDir()
	create := exec.Command(bin, "instance", "create", "--agent", "claude-code", "--workspace", work, "--mcp", "up="+up)
	create.Env = env
	out, err := create.Output()
	if err != nil {
		b.Fatalf("instance create: %v", err)
	}
	id := strings.TrimSpace(string(out))
	direct := startProcPeer(b, env, up)
	lane := startProcPeer(b, env, bin, "mcp", "serve", "--instance", id)
	floor := startProcPeer(b, env, relay, up)
	for range 50 { // the lane takes calls once the server is up
		lane.call(b)
	}
	peers := []*procPeer{direct, lane, floor}
	var laneAdded, relayAdded []float64
	// What each middle process spends per call: its threads' CPU time
	// (its server's aside), which tells work from waiting.
	laneCPU, ok1 := processCPU(lane.pid)
	relayCPU, ok2 := processCPU(floor.pid)
	laneSw, ok5 := processSwitches(lane.pid)
	relaySw, ok6 := processSwitches(floor.pid)
	laneFl, ok9 := processFaults(lane.pid)
	relayFl, ok10 := processFaults(floor.pid)
	n := 0
	for i := 0; b.Loop(); i++ {
		var d [3]time.Duration
		for k := range peers {
			j := (i + k) % len(peers)
			d[j] = peers[j].call(b)
		}
		laneAdded = append(laneAdded, float64(d[1]-d[0])/float64(time.Microsecond))
		relayAdded = append(relayAdded, float64(d[2]-d[0])/float64(time.Microsecond))
		n++
	}
	b.StopTimer()
	laneEnd, ok3 := processCPU(lane.pid)
	relayEnd, ok4 := processCPU(floor.pid)
	laneSwEnd, ok7 := processSwitches(lane.pid)
	relaySwEnd, ok8 := processSwitches(floor.pid)
	laneFlEnd, ok11 := processFaults(lane.pid)
	relayFlEnd, ok12 := processFaults(floor.pid)
	if ok9 && ok10 && ok11 && ok12 && n > 0 {
		// A young process's heap is all first touches: what the lane
		// allocates per call shows here (BENCHMARKS.md, 2026-12-04).
		b.ReportMetric(float64(laneFlEnd-laneFl)/float64(n), "faults-lane/call")
		b.ReportMetric(float64(relayFlEnd-relayFl)/float64(n), "faults-relay/call")
	}
	if ok5 && ok6 && ok7 && ok8 && n > 0 {
		b.ReportMetric(float64(laneSwEnd-laneSw)/float64(n), "switches-lane/call")
		b.ReportMetric(float64(relaySwEnd-relaySw)/float64(n), "switches-relay/call")
	}
	if ok1 && ok2 && ok3 && ok4 && n > 0 {
		b.ReportMetric(float64(laneEnd-laneCPU)/float64(time.Microsecond)/float64(n), "µs-cpu-lane/call")
		b.ReportMetric(float64(relayEnd-relayCPU)/float64(time.Microsecond)/float64(n), "µs-cpu-relay/call")
	}
	l, r := median(laneAdded), median(relayAdded)
	b.ReportMetric(l, "µs-added-lane/median")
	b.ReportMetric(r, "µs-added-relay/median")
	if r > 0 {
		b.ReportMetric(l/r, "ratio/medians")
	}
}

// procPeer is a raw JSON-RPC client of an MCP server process on OS pipes.
type procPeer struct {
	pid  int
	w    io.Writer
	r    *bufio.Reader
	next int
}

// startProcPeer starts bin with args and initializes a session with it.
func startProcPeer(b *testing.B, env []string, bin string, args ...string) *procPeer {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	p := &procPeer{pid: cmd.Process.Pid, w: in, r: bufio.NewReaderSize(out, 1<<20), next: 1}
	p.send(b, `"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
	if _, err := io.WriteString(p.w, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		b.Fatal(err)
	}
	return p
}

// call times one tools/call of echo, from its write to its answer.
func (p *procPeer) call(b *testing.B) time.Duration {
	start := time.Now()
	ans := p.send(b, `"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}`)
	d := time.Since(start)
	if !strings.Contains(ans, `"text":"hello"`) {
		b.Fatalf("echo answered %s", ans)
	}
	return d
}

// send writes a request (method and params, as JSON members) and returns
// its answer, skipping notifications.
func (p *procPeer) send(b *testing.B, methodAndParams string) string {
	id := p.next
	p.next++
	if _, err := fmt.Fprintf(p.w, `{"jsonrpc":"2.0","id":%d,"method":%s}`+"\n", id, methodAndParams); err != nil {
		b.Fatal(err)
	}
	for {
		line, err := p.r.ReadString('\n')
		if err != nil {
			b.Fatalf("read the answer to %d: %v", id, err)
		}
		var m struct {
			ID *int `json:"id"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.ID != nil && *m.ID == id {
			return line
		}
	}
}
