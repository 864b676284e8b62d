package mcpserver

import (
	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"slices"
)

// NamedTool is one tool of an instance with all its names.
type NamedTool struct {
	Canonical    string             `json:"canonical"`
	Transport    string             `json:"transport"`
	ModelVisible string             `json:"model_visible"`
	Source       string             `json:"source"`
	Mount        string             `json:"mount,omitempty"`
	Base         string             `json:"base"`
	PrefixOrigin mount.PrefixOrigin `json:"prefix_origin,omitempty"`
	Problems     []string           `json:"problems,omitempty"`
	// Prompt is the name that the texts a model reads give the tool
	// (instructions.md, the initialize instructions, get_instance's "name",
	// {{tool:...}}): the name the model calls it by ([PromptName]).
	Prompt string `json:"-"`
}

// NameTools computes the tools an instance will serve from its configuration
// alone, before anything runs: the built-ins and each knowledge base's tools,
// with their canonical, transport and model-visible names and their
// problems for this client ([DescribeTools] without external servers). A
// collision in the namespace is an error naming both sources.
func NameTools(server string, naming agents.ToolNaming, mounts []mount.Resolved) ([]NamedTool, error) {
	d, err := DescribeTools(server, naming, mounts, nil)
	if err != nil {
		return nil, err
	}
	out := make([]NamedTool, 0, len(d.Tools))
	for _, t := range d.Tools {
		if t.Kind != KindServer {
			out = append(out, t.NamedTool)
		}
	}
	return out, nil
}

// registryTools lists a registry's tools with their names for this client
// and their problems (see [LintTools]): what get_instance shows.
func registryTools(reg *Registry, server string, naming agents.ToolNaming) []NamedTool {
	return namedEntries(reg.Entries(), reg, server, naming)
}

// inProcessTools is [registryTools] of the built-in and knowledge-base
// tools alone: the names external tools may not take.
func inProcessTools(reg *Registry, server string, naming agents.ToolNaming) []NamedTool {
	entries := slices.DeleteFunc(reg.Entries(), func(e Entry) bool { return e.Kind == KindServer })
	return namedEntries(entries, reg, server, naming)
}

func namedEntries(entries []Entry, reg *Registry, server string, naming agents.ToolNaming) []NamedTool {
	rows := nameEntries(entries, reg, server, naming, nil)
	LintTools(server, naming, rows)
	out := make([]NamedTool, len(rows))
	for i, r := range rows {
		out[i] = r.NamedTool
		out[i].Problems = problemTexts(r.Findings)
	}
	return out
}
