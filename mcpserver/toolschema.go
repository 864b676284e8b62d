package mcpserver

import (
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SchemaChecker tells whether go-sdk would serve a tool as an external
// server described it: its input schema an object schema, its output
// schema JSON, its parameter header annotations (x-mcp-header) valid.
// go-sdk's Server.AddTool panics on any other, so the rule is go-sdk's own,
// asked of a server that serves nobody; the common case, an input schema
// decoded from JSON with "type": "object" and no header annotation, is
// known to pass without asking (which costs 30 µs and 70 KB a tool):
// TestSchemaCheckerFastPathIsGoSDKs pins the two to the same answers. Not
// safe for concurrent use.
type SchemaChecker struct{ s *mcp.Server }

// Check returns why t cannot be served, or nil.
func (c *SchemaChecker) Check(t *mcp.Tool) error {
	if plainObjectSchema(t) {
		return nil
	}
	return c.sdkCheck(t)
}

// sdkCheck is go-sdk's answer: AddTool on a server of no session.
func (c *SchemaChecker) sdkCheck(t *mcp.Tool) (err error) {
	if c.s == nil {
		c.s = mcp.NewServer(&mcp.Implementation{Name: "agentctl-schema-check"}, nil)
	}
	defer func() {
		if p := recover(); p != nil {
			err = errors.New(strings.TrimPrefix(fmt.Sprint(p), fmt.Sprintf("AddTool %q: ", t.Name)))
		}
	}()
	c.s.AddTool(t, nil)
	c.s.RemoveTools(t.Name)
	return nil
}

// plainObjectSchema reports whether t's schemas are what a server's JSON
// decodes to (maps, lists, strings, numbers, booleans), its input schema
// with "type": "object", and neither holds an "x-mcp-header" member: go-sdk
// takes such a tool as it is.
func plainObjectSchema(t *mcp.Tool) bool {
	in, ok := t.InputSchema.(map[string]any)
	if !ok || in["type"] != "object" || !plainJSON(in) {
		return false
	}
	return t.OutputSchema == nil || plainJSON(t.OutputSchema)
}

func plainJSON(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if k == "x-mcp-header" || !plainJSON(e) {
				return false
			}
		}
	case []any:
		for _, e := range t {
			if !plainJSON(e) {
				return false
			}
		}
	case string, float64, bool, nil:
	default:
		return false
	}
	return true
}
