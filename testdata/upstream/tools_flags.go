package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Flags for the naming tests (`tools list`, `tools lint`):
//
//	-tool-names A,B,...  also register tools named A, B, ... (each answers
//	                     "<name>: <text>" like tool_i), for instance
//	                     ask_user_question, to offer a built-in's name
//	-tool-count N        also register N tools named bulk_tool_0 ... (a large
//	                     listing for benchmarks)
var (
	toolNames = flag.String("tool-names", "", "comma-separated names of extra tools")
	toolCount = flag.Int("tool-count", 0, "number of extra bulk_tool_i tools")
)

// addNamedTools registers the tools of -tool-names and -tool-count.
func addNamedTools(s *mcp.Server) {
	for name := range strings.SplitSeq(*toolNames, ",") {
		if name = strings.TrimSpace(name); name != "" {
			addNumberedTool(s, name)
		}
	}
	for i := range *toolCount {
		addNumberedTool(s, fmt.Sprintf("bulk_tool_%d", i))
	}
}
