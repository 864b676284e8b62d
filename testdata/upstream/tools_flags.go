package main

import (
	"context"
	"encoding/json"
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
//	-schema NAME=JSON    also register tool NAME, listed with JSON as its
//	                     inputSchema (null: none), as a server not built on
//	                     go-sdk may list it; repeatable
var (
	toolNames = flag.String("tool-names", "", "comma-separated names of extra tools")
	toolCount = flag.Int("tool-count", 0, "number of extra bulk_tool_i tools")
	schemas   = map[string]json.RawMessage{}
)

func init() {
	flag.Func("schema", "NAME=JSON: also register NAME, listed with this inputSchema", func(v string) error {
		name, js, ok := strings.Cut(v, "=")
		if !ok || !json.Valid([]byte(js)) {
			return fmt.Errorf("want NAME=JSON, not %q", v)
		}
		schemas[name] = json.RawMessage(js)
		return nil
	})
}

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
	if len(schemas) == 0 {
		return
	}
	for name := range schemas {
		addNumberedTool(s, name)
	}
	// go-sdk refuses such a schema when a tool is added: the listing is
	// rewritten on its way out instead.
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if l, ok := res.(*mcp.ListToolsResult); ok {
				for _, t := range l.Tools {
					if js, ok := schemas[t.Name]; ok {
						t.InputSchema = js
						if string(js) == "null" {
							t.InputSchema = nil
						}
					}
				}
			}
			return res, err
		}
	})
}
