// Command minimalstdio is the floor of `agentctl mcp serve`'s start-up
// benchmark (BenchmarkServeStartup in cmd/agentctl): the smallest go-sdk
// MCP server over stdio with tools like the endpoint's three built-ins
// (nothing mounted), so that process start to the first tools/list answer
// can be compared with agentctl's.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type input struct {
	Text string `json:"text" jsonschema:"what to say"`
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "minimalstdio", Version: "1"}, nil)
	for _, name := range []string{"ask_user_question", "report_progress", "get_instance"} {
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: name}, func(context.Context, *mcp.CallToolRequest, input) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
		})
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "minimalstdio:", err)
		os.Exit(1)
	}
}
