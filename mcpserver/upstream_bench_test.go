package mcpserver

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchProxy serves an endpoint with the given external servers and returns
// a client session to it, once every server is up.
func benchProxy(b *testing.B, mounts ...MountConfig) (*Endpoint, *mcp.ClientSession) {
	specs := make([]MountSpec, len(mounts))
	for i, m := range mounts {
		specs[i] = m.MountSpec
	}
	rs, err := ResolveMounts("agentctl", PrefixModeMountName, specs)
	if err != nil {
		b.Fatal(err)
	}
	for i := range mounts {
		mounts[i].ResolvedMount = rs[i]
	}
	cfg := testConfig(agents.NamespacingSuffix, nopStore{newFakeStore()})
	cfg.Mounts = mounts
	ep, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ep.Start(ctx)
	b.Cleanup(func() { cancel(); ep.Wait(); ep.Close() })
	cs := sessionFor(b, ep.Server(), nil)
	if _, err := cs.ListTools(ctx, nil); err != nil { // waits for the first round
		b.Fatal(err)
	}
	for _, st := range ep.UpstreamStatuses() {
		if st.State != UpstreamUp {
			b.Fatalf("upstream %s: %s %s", st.Name, st.State, st.Error)
		}
	}
	return ep, cs
}

// BenchmarkProxyCall: a tools/call through agentctl to a Go MCP server over
// stdio, against the same call made directly to that server, alternating
// the two in one loop. "µs-added/median" is the median of (through -
// direct) per pair; the client reaches the endpoint in memory, so the extra
// cost measured is the endpoint's: its SDK server side, routing, and the
// forwarding client.
func BenchmarkProxyCall(b *testing.B) {
	bin := upstreamBin(b)
	ctx := context.Background()
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { direct.Close() })
	_, through := benchProxy(b, MountConfig{ResolvedMount: ResolvedMount{MountSpec: MountSpec{Kind: "mcp", Name: "up"}}, Command: bin})
	args := map[string]any{"text": "hello"}
	call := func(cs *mcp.ClientSession, name string) time.Duration {
		t := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
		return time.Since(t)
	}
	var added, directs, throughs []float64
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		var d, p time.Duration
		if i%2 == 0 {
			d, p = call(direct, "echo"), call(through, "echo")
		} else {
			p, d = call(through, "echo"), call(direct, "echo")
		}
		added = append(added, float64(p-d)/1e3)
		directs = append(directs, float64(d)/1e3)
		throughs = append(throughs, float64(p)/1e3)
	}
	b.ReportMetric(median(added), "µs-added/median")
	b.ReportMetric(median(directs), "µs-direct/median")
	b.ReportMetric(median(throughs), "µs-through/median")
}

// BenchmarkProxyToolsList: tools/list through agentctl with 5 external
// servers of 50 tools each (plus their 5 fixed tools and the built-ins),
// once connected.
func BenchmarkProxyToolsList(b *testing.B) {
	bin := upstreamBin(b)
	var mounts []MountConfig
	for i := range 5 {
		mounts = append(mounts, MountConfig{ResolvedMount: ResolvedMount{MountSpec: MountSpec{Kind: "mcp", Name: fmt.Sprintf("up%d", i)}},
			Command: bin, Args: []string{"-tools", "50"}})
	}
	_, cs := benchProxy(b, mounts...)
	ctx := context.Background()
	var ds []float64
	b.ReportAllocs()
	for b.Loop() {
		t := time.Now()
		res, err := cs.ListTools(ctx, nil)
		if err != nil || len(res.Tools) != 5*55+3 {
			b.Fatal(err, len(res.Tools))
		}
		ds = append(ds, float64(time.Since(t))/1e6)
	}
	b.ReportMetric(median(ds), "ms/median")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
