package mcpserver

import (
	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/mcpserver/mount"
)

// PlannedTool is one tool of an instance with all its names.
type PlannedTool struct {
	Canonical    string             `json:"canonical"`
	Transport    string             `json:"transport"`
	ModelVisible string             `json:"model_visible"`
	Source       string             `json:"source"`
	Mount        string             `json:"mount,omitempty"`
	Base         string             `json:"base"`
	PrefixOrigin mount.PrefixOrigin `json:"prefix_origin,omitempty"`
	Problems     []string           `json:"problems,omitempty"`
}

// PlanTools computes the tools an instance will serve from its configuration
// alone, before anything runs: the built-ins and each knowledge base's tools,
// with their canonical, transport and model-visible names and their
// problems for this client ([DescribeTools] without external servers). A
// collision in the namespace is an error naming both sources.
func PlanTools(server string, naming agents.ToolNaming, mounts []mount.Resolved) ([]PlannedTool, error) {
	d, err := DescribeTools(server, naming, mounts, nil)
	if err != nil {
		return nil, err
	}
	out := make([]PlannedTool, 0, len(d.Tools))
	for _, t := range d.Tools {
		if t.Kind != KindServer {
			out = append(out, t.PlannedTool)
		}
	}
	return out, nil
}

// registryTools lists a registry's tools with their names for this client
// and their problems (see [LintTools]): what get_instance shows.
func registryTools(reg *Registry, server string, naming agents.ToolNaming) []PlannedTool {
	rows := nameEntries(reg.Entries(), reg, server, naming, nil)
	LintTools(server, naming, rows)
	out := make([]PlannedTool, len(rows))
	for i, r := range rows {
		out[i] = r.PlannedTool
		out[i].Problems = problemTexts(r.Findings)
	}
	return out
}
