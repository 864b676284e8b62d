package agents

import (
	"strings"
	"testing"
)

// TestDecodeToolsListChanged: the capability decodes from [capabilities],
// defaults to false (the side that waits), and a wrong type names its key.
func TestDecodeToolsListChanged(t *testing.T) {
	d, err := Decode("mine.toml", []byte(goodTOML))
	if err != nil {
		t.Fatal(err)
	}
	if d.Capabilities.ToolsListChanged {
		t.Fatal("tools_list_changed defaults to true; a client not known to follow the notification must wait")
	}
	withCap := strings.Replace(goodTOML, "[capabilities.tool_names]", "[capabilities]\ntools_list_changed = true\n\n[capabilities.tool_names]", 1)
	d, err = Decode("mine.toml", []byte(withCap))
	if err != nil {
		t.Fatal(err)
	}
	if !d.Capabilities.ToolsListChanged {
		t.Fatal("tools_list_changed = true was not decoded")
	}
	bad := strings.Replace(withCap, "tools_list_changed = true", `tools_list_changed = "yes"`, 1)
	_, err = Decode("mine.toml", []byte(bad))
	if err == nil || !strings.Contains(err.Error(), `key "capabilities.tools_list_changed"`) || !strings.Contains(err.Error(), "mine.toml:9") {
		t.Fatalf("a string for tools_list_changed: got %v, want an error naming mine.toml:9 and the key", err)
	}
	typo := strings.Replace(withCap, "tools_list_changed", "tool_list_changed", 1)
	_, err = Decode("mine.toml", []byte(typo))
	if err == nil || !strings.Contains(err.Error(), `did you mean "tools_list_changed"`) {
		t.Fatalf("a typo of tools_list_changed: got %v, want a suggestion", err)
	}
}

// TestCatalogToolsListChanged pins the catalog's facts (each with its
// source in the catalog file): true only where a client is known to list
// its tools again on notifications/tools/list_changed.
func TestCatalogToolsListChanged(t *testing.T) {
	c, err := Load(LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	follows := map[string]bool{"gemini": true, "copilot-cli": true, "vscode-copilot": true, "kiro": true, "goose": true}
	for _, d := range c.Definitions() {
		if got := d.Capabilities.ToolsListChanged; got != follows[d.ID] {
			t.Errorf("%s: tools_list_changed = %v, want %v", d.ID, got, follows[d.ID])
		}
	}
}
