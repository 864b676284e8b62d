package main

import (
	"strings"
	"testing"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/instance"
)

// TestConnectHelpTable pins the table in `instance connect --help` to the
// files instance.Connect edits, for every catalog agent.
func TestConnectHelpTable(t *testing.T) {
	cat, err := agents.Load(agents.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(connectFilesHelp, "\n")[1:] {
		if f := strings.Fields(line); len(f) >= 3 && strings.HasPrefix(line, "  ") {
			rows[f[0]] = f[1:]
		}
	}
	for _, d := range cat.Definitions() {
		ws := instance.ConnectDisplay(d.ID, d.MCP.ConfigFormat, instance.ScopeWorkspace)
		user := instance.ConnectDisplay(d.ID, d.MCP.ConfigFormat, instance.ScopeUser)
		row, ok := rows[d.ID]
		if ws == "(none)" && user == "(none)" {
			if ok || !strings.Contains(connectFilesHelp, d.ID) {
				t.Errorf("%s: connects nowhere; the help should name it among the others, not in the table", d.ID)
			}
			continue
		}
		if !ok || row[0] != ws || row[1] != user {
			t.Errorf("%s: help row %q, want %s and %s", d.ID, row, ws, user)
		}
	}
}
