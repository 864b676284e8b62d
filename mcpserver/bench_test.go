package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bareServer registers the same tools as an endpoint, under the same
// canonical names, on a plain go-sdk server with no presentation layer: the
// baseline for the endpoint's overhead. With sameSchemas the schemas are the
// pre-encoded JSON the endpoint serves (isolating the presentation layer);
// without, they are registered as plain go-sdk code would (mcp.AddTool
// inferring *jsonschema.Schema values).
func bareServer(t testing.TB, st Store, sameSchemas bool) *mcp.Server {
	cfg := testConfig(agents.NamespacingSuffix, st)
	ep, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ask, prog, get, err := builtinTools(cfg.ServerName)
	if err != nil {
		t.Fatal(err)
	}
	if sameSchemas {
		for _, err := range []error{rawSchemas[AskInput, AskOutput](ask), rawSchemas[ProgressInput, ProgressOutput](prog), rawSchemas[struct{}, InstanceOutput](get)} {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	s := mcp.NewServer(implementation(ep.cfg), &mcp.ServerOptions{Logger: ep.log, Instructions: instructions(ep.cfg, ep.mounts)})
	mcp.AddTool(s, ask, ep.askUserQuestion)
	mcp.AddTool(s, prog, ep.reportProgress)
	mcp.AddTool(s, get, ep.getInstance)
	return s
}

// nopStore records nothing, so the benchmark measures the endpoint.
type nopStore struct{ *fakeStore }

func (nopStore) RecordProgress(context.Context, string, string, string, string, *float64) (int64, error) {
	return 1, nil
}

// BenchmarkEndpoint compares tools/list and tools/call through the endpoint
// (presentation on: a suffix client, names stripped and routed back) with a
// bare go-sdk server registering the same tools, over the same in-memory
// transport. Compare the server=endpoint lines with server=bare_same_schemas
// (the presentation layer's own cost) and server=bare (plain go-sdk).
func BenchmarkEndpoint(b *testing.B) {
	ctx := context.Background()
	servers := map[string]func(b *testing.B) (*mcp.Server, string){
		"bare": func(b *testing.B) (*mcp.Server, string) {
			return bareServer(b, nopStore{newFakeStore()}, false), "report_progress_agentctl"
		},
		"bare_same_schemas": func(b *testing.B) (*mcp.Server, string) {
			return bareServer(b, nopStore{newFakeStore()}, true), "report_progress_agentctl"
		},
		"endpoint": func(b *testing.B) (*mcp.Server, string) {
			ep, err := New(testConfig(agents.NamespacingSuffix, nopStore{newFakeStore()}))
			if err != nil {
				b.Fatal(err)
			}
			return ep.Server(), "report_progress" // the transport name an Auggie model sends
		},
	}
	args := map[string]any{"message": "compiling", "status": "running", "percent": 40}
	for _, base := range []string{"bare", "bare_same_schemas"} {
		b.Run("op=tools_list/server=paired_vs_"+base, func(b *testing.B) {
			bsrv, _ := servers[base](b)
			esrv, _ := servers["endpoint"](b)
			bs, es := sessionFor(b, bsrv, nil), sessionFor(b, esrv, nil)
			list := func(cs *mcp.ClientSession) func() {
				return func() {
					if _, err := cs.ListTools(ctx, nil); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(pairedRatio(b, list(bs), list(es)), "endpoint/"+base)
		})
		b.Run("op=tools_call/server=paired_vs_"+base, func(b *testing.B) {
			bsrv, btool := servers[base](b)
			esrv, etool := servers["endpoint"](b)
			bs, es := sessionFor(b, bsrv, nil), sessionFor(b, esrv, nil)
			call := func(cs *mcp.ClientSession, tool string) func() {
				params := &mcp.CallToolParams{Name: tool, Arguments: args}
				return func() {
					if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
						b.Fatal(err, res)
					}
				}
			}
			b.ReportMetric(pairedRatio(b, call(bs, btool), call(es, etool)), "endpoint/"+base)
		})
	}
	for _, name := range []string{"bare", "bare_same_schemas", "endpoint"} {
		b.Run("op=tools_list/server="+name, func(b *testing.B) {
			s, _ := servers[name](b)
			cs := sessionFor(b, s, nil)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cs.ListTools(ctx, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("op=tools_call/server="+name, func(b *testing.B) {
			s, tool := servers[name](b)
			cs := sessionFor(b, s, nil)
			params := &mcp.CallToolParams{Name: tool, Arguments: args}
			b.ReportAllocs()
			for b.Loop() {
				res, err := cs.CallTool(ctx, params)
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		})
	}
}

// BenchmarkToolsList100KBs: tools/list on an instance with 100 mounted
// knowledge bases (400 tools, plus the 3 built-ins) against a bare go-sdk
// server registering the same 403 tool definitions.
func BenchmarkToolsList100KBs(b *testing.B) {
	ctx := context.Background()
	root := b.TempDir()
	cfg := testConfig(agents.NamespacingSuffix, nopStore{newFakeStore()})
	for i := range 100 {
		name := fmt.Sprintf("kb%03d", i)
		if err := os.Mkdir(filepath.Join(root, name), 0o755); err != nil {
			b.Fatal(err)
		}
		cfg.Mounts = append(cfg.Mounts, mount.Mount{Kind: mount.KindKB, Name: name, Path: filepath.Join(root, name)})
	}
	ep, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ep.Close() })

	// The bare server gets the endpoint's own tool definitions (canonical
	// names, same schemas), read back through a session.
	var tools []*mcp.Tool
	for t, err := range sessionFor(b, ep.Server(), nil).Tools(ctx, nil) {
		if err != nil {
			b.Fatal(err)
		}
		tools = append(tools, t)
	}
	bare := mcp.NewServer(implementation(cfg), nil)
	for _, t := range tools {
		c := *t
		c.Name = RouteToolCall(ep.Registry(), cfg.Naming.Namespacing, cfg.ServerName, t.Name).Canonical
		// The same pre-encoded schemas the endpoint serves.
		for _, f := range []*any{&c.InputSchema, &c.OutputSchema} {
			if *f != nil {
				raw, err := json.Marshal(*f)
				if err != nil {
					b.Fatal(err)
				}
				*f = json.RawMessage(raw)
			}
		}
		bare.AddTool(&c, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	if len(tools) != 403 {
		b.Fatalf("%d tools", len(tools))
	}
	// Interleaved: each iteration lists through both, so drift (heap growth,
	// the other core's load, which sub-benchmark ran first) hits both alike;
	// the metric is the median of the per-iteration ratios.
	b.Run("server=paired", func(b *testing.B) {
		bs, es := sessionFor(b, bare, nil), sessionFor(b, ep.Server(), nil)
		list := func(cs *mcp.ClientSession) func() {
			return func() {
				if _, err := cs.ListTools(ctx, nil); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportAllocs()
		b.ReportMetric(pairedRatio(b, list(bs), list(es)), "endpoint/bare")
	})
	for _, s := range []struct {
		name   string
		server *mcp.Server
	}{{"bare", bare}, {"endpoint", ep.Server()}} {
		b.Run("server="+s.name, func(b *testing.B) {
			cs := sessionFor(b, s.server, nil)
			b.ReportAllocs()
			for b.Loop() {
				res, err := cs.ListTools(ctx, nil)
				if err != nil || len(res.Tools) != 403 {
					b.Fatal(err)
				}
			}
		})
	}
}

// pairedRatio runs base and subject alternately (see pairedTimes) and
// returns the median of subject's time over base's.
func pairedRatio(b *testing.B, base, subject func()) float64 {
	tb, ts := pairedTimes(b, base, subject)
	ratios := make([]float64, len(tb))
	for i := range tb {
		ratios[i] = ts[i] / tb[i]
	}
	return median(ratios)
}

// pairedTimes runs base and subject alternately for the benchmark's
// iterations, which one goes first swapping every iteration (whichever
// runs second pays ~12% here otherwise), and returns their times in
// seconds, pair by pair.
func pairedTimes(b *testing.B, base, subject func()) (tb, ts []float64) {
	timeIt := func(f func()) float64 {
		t := time.Now()
		f()
		return time.Since(t).Seconds()
	}
	for i := 0; b.Loop(); i++ {
		var db, ds float64
		if i%2 == 0 {
			db, ds = timeIt(base), timeIt(subject)
		} else {
			ds, db = timeIt(subject), timeIt(base)
		}
		tb, ts = append(tb, db), append(ts, ds)
	}
	return tb, ts
}
