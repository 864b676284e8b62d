package mcpserver

import (
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SchemaChecker tells whether go-sdk would serve a tool as an external
// server described it: its input schema an object schema, its output
// schema JSON, its parameter header annotations valid. go-sdk's
// Server.AddTool panics on any other, so the rule is go-sdk's own, asked of
// a server that serves nobody. Not safe for concurrent use.
type SchemaChecker struct{ s *mcp.Server }

// Check returns why t cannot be served, or nil.
func (c *SchemaChecker) Check(t *mcp.Tool) (err error) {
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
