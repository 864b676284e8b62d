// Command barehttp is the baseline of agentctl's HTTP benchmarks
// (BenchmarkServeHTTPCall and BenchmarkServeHTTPBuiltin in cmd/agentctl):
// a bare go-sdk streamable HTTP server, with nothing of agentctl serve's
// daemon: no token check, guard, body deadlines, request bounds or
// per-instance routing.
//
// With -kb DIR alone it serves concept_read, the knowledge-base read tool
// (the same mcpserver/kb code behind it) on a server of its own, nothing
// of agentctl's endpoint. With -state DIR -instance ID it serves that
// instance's endpoint's own *mcp.Server, built from its record as agentctl
// builds it (so its built-in tools, get_instance_S among them, are the
// same tools running the same code), behind go-sdk's handlers alone.
//
//	barehttp -kb DIR [-state DIR -instance ID] -listen 127.0.0.1:0
//
// It prints "listening on http://ADDR/mcp" on stderr once it accepts.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
	"github.com/agentctl/agentctl/mcpserver/kb"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type readInput struct {
	ID string `json:"id"`
}

func main() {
	dir := flag.String("kb", "", "the knowledge base's folder")
	state := flag.String("state", "", "the state directory (with -instance)")
	id := flag.String("instance", "", "serve this instance's endpoint (its built-in tools)")
	listen := flag.String("listen", "127.0.0.1:0", "the address to listen on")
	flag.Parse()
	base, err := kb.Open("docs", *dir, kb.Options{ReadOnly: true})
	if err != nil {
		fail(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "barehttp", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "concept_read", Description: "Read a concept."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in readInput) (*mcp.CallToolResult, kb.ReadOutput, error) {
			out, err := base.Read(ctx, in.ID)
			if err != nil {
				return nil, kb.ReadOutput{}, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out.Content}}}, out, nil
		})
	if *id != "" {
		if s, err = endpointServer(*state, *id); err != nil {
			fail(err)
		}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fail(err)
	}
	fmt.Fprintf(os.Stderr, "listening on http://%s/mcp\n", ln.Addr())
	mux := http.NewServeMux()
	// Both protocol eras, as a go-sdk server must be set up for them: a
	// request of 2026-07-28 or later to a stateless handler, the rest to a
	// stateful one.
	get := func(*http.Request) *mcp.Server { return s }
	stateful := mcp.NewStreamableHTTPHandler(get, nil)
	stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && v >= "2026-07-28" {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
	if err := http.Serve(ln, mux); err != nil {
		fail(err)
	}
}

// endpointServer builds instance id's endpoint from its record, as
// agentctl serve does (without the serve lock, which the daemon holds),
// and returns its *mcp.Server.
func endpointServer(state, id string) (*mcp.Server, error) {
	ctx := context.Background()
	st, err := instance.Open(ctx, state)
	if err != nil {
		return nil, err
	}
	rec, err := st.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	var mounts []mount.Mount
	for _, m := range rec.Mounts {
		mounts = append(mounts, m.Mount)
	}
	ep, err := mcpserver.New(mcpserver.Config{
		Instance:         mcpserver.Instance{ID: rec.ID, Name: rec.Name, Agent: rec.Agent, Workspace: rec.Workspace},
		ServerName:       rec.ServerName,
		Naming:           rec.Capabilities.ToolNames,
		ServerDir:        rec.Workspace,
		ToolsListChanged: rec.Capabilities.ToolsListChanged,
		QuestionTimeout:  time.Duration(rec.QuestionTimeout),
		Questions:        rec.Capabilities.Questions,
		Store:            st,
		Logger:           slog.New(slog.DiscardHandler),
		Version:          "barehttp",
		Mounts:           mounts,
		PrefixMode:       mount.PrefixMode(rec.ToolPrefixMode),
		KBIndexDir:       filepath.Join(state, "kb"),
	})
	if err != nil {
		return nil, err
	}
	ep.Start(ctx)
	return ep.Server(), nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
