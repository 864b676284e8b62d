// Command minimalsqlite is testdata/minimal with the SQLite driver agentctl
// uses (modernc.org/sqlite) linked in, and nothing else: a second floor for
// agentctl's process start-up benchmarks (BenchmarkProcess in
// cmd/agentctl), which tells what linking the driver alone costs a start.
package main

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	_ "modernc.org/sqlite"
)

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "minimalsqlite", Version: "1"}, nil)
	_ = s
	fmt.Println("minimalsqlite 1")
}
