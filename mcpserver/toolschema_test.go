package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSchemaCheckerFastPathIsGoSDKs pins SchemaChecker's shortcut to
// go-sdk's own rule: every tool of the corpus the shortcut passes, go-sdk's
// AddTool takes, and Check answers as go-sdk does for all of them. A go-sdk
// that refuses more fails this test.
func TestSchemaCheckerFastPathIsGoSDKs(t *testing.T) {
	corpus := []struct{ name, in, out string }{
		{"plain", `{"type":"object"}`, ``},
		{"properties", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"array","items":{"type":"number"}}},"required":["a"]}`, ``},
		{"output", `{"type":"object"}`, `{"type":"object","properties":{"r":{"type":"string"}}}`},
		{"output not an object", `{"type":"object"}`, `{"type":"string"}`},
		{"nested objects", `{"type":"object","properties":{"o":{"type":"object","properties":{"p":{"type":"integer"}}}},"additionalProperties":false}`, ``},
		{"header", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"X-Region"}}}`, ``},
		{"bad header type", `{"type":"object","properties":{"o":{"type":"object","x-mcp-header":"X-O"}}}`, ``},
		{"empty header", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}}`, ``},
		{"duplicate header", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}`, ``},
		{"missing", `null`, ``},
		{"empty", `{}`, ``},
		{"array", `{"type":"array"}`, ``},
		{"type list", `{"type":["object"]}`, ``},
		{"type null", `{"type":null}`, ``},
		{"not an object", `"object"`, ``},
		{"a list", `[{"type":"object"}]`, ``},
		{"properties not an object", `{"type":"object","properties":"x"}`, ``},
		{"$defs and refs", `{"type":"object","$defs":{"d":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/d"}}}`, ``},
	}
	var sdk, ours SchemaChecker
	for _, c := range corpus {
		tool := func() *mcp.Tool {
			tl := &mcp.Tool{Name: "t"}
			if err := json.Unmarshal([]byte(c.in), &tl.InputSchema); err != nil {
				t.Fatal(err)
			}
			if c.out != "" {
				if err := json.Unmarshal([]byte(c.out), &tl.OutputSchema); err != nil {
					t.Fatal(err)
				}
			}
			return tl
		}
		want := sdk.sdkCheck(tool())
		if plainObjectSchema(tool()) && want != nil {
			t.Errorf("%s: the shortcut passes a tool go-sdk refuses: %v", c.name, want)
		}
		// (Which of two duplicate headers go-sdk names depends on map order:
		// the answer is compared, not the words.)
		if got := ours.Check(tool()); (got == nil) != (want == nil) {
			t.Errorf("%s: Check = %v, go-sdk %v", c.name, got, want)
		}
	}
}
