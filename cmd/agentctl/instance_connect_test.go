package main

import (
	"os"
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
		ws := connectDisplay(d.ID, d.MCP.ConfigFormat, instance.ScopeWorkspace)
		user := connectDisplay(d.ID, d.MCP.ConfigFormat, instance.ScopeUser)
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

// connectDisplay is the file [instance.Connect] edits for an agent in
// scope, as the help shows it (~ for the home directory, S for the server
// name), or "(none)" when the client reads no file there.
func connectDisplay(agent, format, scope string) string {
	m, _ := agents.CatalogMCP(agent, format)
	path := m.Connect.Workspace
	if scope == instance.ScopeUser {
		path = m.Connect.User
	}
	if path == "" {
		return "(none)"
	}
	path = os.Expand(path, func(v string) string { name, _, _ := strings.Cut(v, ":-"); return "$" + name })
	return strings.NewReplacer("{xdgconfig}", "~/.config", "{appconfig}", "~/.config", "{server}", "S").Replace(path)
}
