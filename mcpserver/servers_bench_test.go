package mcpserver

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/agentctl/agentctl/mcpserver/internal/wire"
	"github.com/agentctl/agentctl/mcpserver/mount"
)

// BenchmarkProxyCall: a tools/call through agentctl's stdio endpoint to a
// Go MCP server over stdio, against the same call made directly to that
// server, alternating the two in one loop. The client is a raw JSON-RPC
// peer on OS pipes (the same code both ways), so what differs is exactly
// the hop through agentctl. "µs-added/median" is the median of (through -
// direct) per pair.
//
//   - lane: the default path.
//   - sdk: the same endpoint with every message through go-sdk
//     (--fast-lane=false), for reference.
//   - relay: no endpoint, only two goroutines copying lines between the
//     pipes and the server: the floor any stdio proxy pays on this machine
//     for the extra hop.
//
// allocs/op counts both calls of a pair in this process: the endpoint's
// work and the raw client's.
func BenchmarkProxyCall(b *testing.B) {
	bin := serverBin(b)
	for _, path := range []string{"lane", "sdk", "relay"} {
		b.Run(path, func(b *testing.B) {
			direct := rawServer(b, bin)
			var through *rawPeer
			if path == "relay" {
				through = relayTo(b, rawServer(b, bin))
			} else {
				_, through = stdioEndpoint(b, path == "sdk", mount.Mount{Kind: mount.KindServer, Name: "up", Command: bin})
			}
			const params = `{"name":"echo","arguments":{"text":"hello"}}`
			call := func(p *rawPeer) func() {
				return func() {
					if ans, _ := p.request(b, "tools/call", params); !bytes.Contains(ans, []byte(`"text":"hello"`)) {
						b.Fatalf("%s", ans)
					}
				}
			}
			b.ReportAllocs()
			directs, throughs := pairedTimes(b, call(direct), call(through))
			added := make([]float64, len(directs))
			for i := range directs {
				added[i] = throughs[i] - directs[i]
			}
			b.ReportMetric(median(added)*1e6, "µs-added/median")
			b.ReportMetric(median(directs)*1e6, "µs-direct/median")
			b.ReportMetric(median(throughs)*1e6, "µs-through/median")
		})
	}
}

// relayTo puts a plain line relay on OS pipes in front of a server's
// session and returns a peer on its other ends (the ids the peer uses go
// through unchanged).
func relayTo(b *testing.B, server *rawPeer) *rawPeer {
	inR, inW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { inW.Close(); outR.Close() })
	copyLines := func(dst io.Writer, src io.Reader) {
		lr := wire.NewLines(src, 0)
		for {
			line, err := lr.Next()
			if err != nil {
				return
			}
			if _, err := dst.Write(line); err != nil {
				return
			}
		}
	}
	go copyLines(server.w, inR)
	go copyLines(outW, server.r)
	p := newRawPeer(inW, outR)
	p.next = server.next + 1000 // ids distinct from the session's own
	return p
}

// rawServer starts the test server and opens a session with it by hand.
func rawServer(b *testing.B, bin string, args ...string) *rawPeer {
	cmd := exec.Command(bin, args...)
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
	b.Cleanup(func() { in.Close(); cmd.Wait() })
	p := newRawPeer(in, out)
	p.initialize(b)
	return p
}

// BenchmarkProxyToolsList: tools/list through agentctl's stdio endpoint
// with 5 external servers of 50 tools each (plus their 5 fixed tools and
// the built-ins: 278 tools, 60 KB), once connected, read by a raw client;
// against tools/list of one of those servers directly (55 tools, go-sdk),
// in the same loop. lane is the default path (an encoding kept until the
// tools change); sdk is --fast-lane=false, for reference.
func BenchmarkProxyToolsList(b *testing.B) {
	bin := serverBin(b)
	for _, path := range []string{"lane", "sdk"} {
		b.Run(path, func(b *testing.B) {
			var mounts []mount.Mount
			for i := range 5 {
				mounts = append(mounts, mount.Mount{Kind: mount.KindServer, Name: fmt.Sprintf("up%d", i),
					Command: bin, Args: []string{"-tools", "50"}})
			}
			_, p := stdioEndpoint(b, path == "sdk", mounts...)
			direct := rawServer(b, bin, "-tools", "50")
			list := func(p *rawPeer, want int) time.Duration {
				t := time.Now()
				ans, _ := p.request(b, "tools/list", `{}`)
				d := time.Since(t)
				if n := bytes.Count(ans, []byte(`"inputSchema"`)); n != want {
					b.Fatalf("%d tools, want %d", n, want)
				}
				return d
			}
			var ds, directs []float64
			b.ReportAllocs()
			for b.Loop() {
				ds = append(ds, float64(list(p, 5*55+3))/1e6)
				directs = append(directs, float64(list(direct, 55))/1e6)
			}
			b.ReportMetric(median(ds), "ms/median")
			b.ReportMetric(median(directs), "ms-direct-55/median")
		})
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
