package main

import (
	"flag"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The -names flag, for the tests of the naming contract: tools named like
// agentctl's own (a built-in such as ask_user_question_agentctl, a knowledge
// base's concept_read) so that an unprefixed mount of this server offers
// names that the endpoint reserves for its in-process tools.
//
//	-names A,B,...    also register tools A, B, ... (each like tool_i:
//	                  {text?} → "A: <text>", structured {"tool": "A", "text": text})
var extraNames = flag.String("names", "", "comma-separated names of extra tools, each answering like tool_i")

// addNamedTools registers the -names tools.
func addNamedTools(s *mcp.Server) {
	for _, name := range strings.Split(*extraNames, ",") {
		if name = strings.TrimSpace(name); name != "" {
			addNumberedTool(s, name)
		}
	}
}
