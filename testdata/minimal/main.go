// Command minimal is the floor of agentctl's process start-up benchmarks
// (BenchmarkProcess in cmd/agentctl): the smallest program that links the
// go-sdk MCP server, makes one and exits, printing a version as
// `agentctl version` does.
package main

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "minimal", Version: "1"}, nil)
	_ = s
	fmt.Println("minimal 1")
}
