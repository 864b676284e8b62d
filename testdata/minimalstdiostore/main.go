// Command minimalstdiostore is testdata/minimalstdio that first reads the
// instance's record from agentctl's SQLite store, as any server that
// serves an instance from its durable record must: it links the SQLite
// driver agentctl uses (modernc.org/sqlite), opens the state database of
// $AGENTCTL_STATE_DIR with the same connection settings, reads the record
// of the instance named by its argument and decodes it. A second floor for
// `agentctl mcp serve`'s start-up benchmark (BenchmarkServeStartup in
// cmd/agentctl): what is left above it is agentctl's own.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	_ "modernc.org/sqlite"
)

type input struct {
	Text string `json:"text" jsonschema:"what to say"`
}

func main() {
	ctx := context.Background()
	if len(os.Args) != 2 {
		fail(fmt.Errorf("usage: minimalstdiostore INSTANCE_ID"))
	}
	path := filepath.Join(os.Getenv("AGENTCTL_STATE_DIR"), "state.db")
	// The pragmas of instance's dsnParams.
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(30000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"+
		"&_pragma=wal_autocheckpoint(100)&_txlock=immediate")
	if err != nil {
		fail(err)
	}
	var raw string
	if err := db.QueryRowContext(ctx, `SELECT record FROM instances WHERE id = ?`, os.Args[1]).Scan(&raw); err != nil {
		fail(fmt.Errorf("instance %s: %w", os.Args[1], err))
	}
	var record map[string]any
	if err := json.Unmarshal([]byte(raw), &record); err != nil {
		fail(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "minimalstdiostore", Version: "1"}, &mcp.ServerOptions{
		Instructions: fmt.Sprintf("instance %s of %v", os.Args[1], record["agent"]),
	})
	for _, name := range []string{"ask_user_question", "report_progress", "get_instance"} {
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: name}, func(context.Context, *mcp.CallToolRequest, input) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
		})
	}
	if err := s.Run(ctx, &mcp.StdioTransport{}); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "minimalstdiostore:", err)
	os.Exit(1)
}
