// Command barehttp is the baseline of agentctl's HTTP benchmarks
// (BenchmarkServeHTTP in cmd/agentctl): a bare go-sdk streamable HTTP
// server with the knowledge-base read tool agentctl serves (the same
// mcpserver/kb code behind it), and nothing of agentctl's endpoint: no
// daemon, token check, guard, presentation or routing.
//
//	barehttp -kb DIR -listen 127.0.0.1:0
//
// It prints "listening on http://ADDR/mcp" on stderr once it accepts.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/agentctl/agentctl/mcpserver/kb"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type readInput struct {
	ID string `json:"id"`
}

func main() {
	dir := flag.String("kb", "", "the knowledge base's folder")
	listen := flag.String("listen", "127.0.0.1:0", "the address to listen on")
	flag.Parse()
	base, err := kb.Open("docs", *dir, kb.Options{ReadOnly: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
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
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
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
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
