package mcpserver

import (
	"fmt"

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
// with their canonical, transport and model-visible names. A collision in the
// namespace is an error naming both sources.
func PlanTools(server string, naming agents.ToolNaming, mounts []mount.Resolved) ([]PlannedTool, error) {
	reg := NewRegistry(nil)
	for _, b := range BuiltinBases {
		if err := reg.reserve(&Entry{Name: BuiltinName(b, server), Source: sourceBuiltin, Kind: KindBuiltin, Base: b}); err != nil {
			return nil, err
		}
	}
	for _, m := range mounts {
		if m.Kind != mount.KindKB {
			continue // external servers' tools are known only once connected
		}
		for _, b := range KBToolBases(m.ReadOnly) {
			e := &Entry{Name: m.ToolName(b), Source: m.Source(), Kind: KindKB, Mount: m.Name, Prefix: m.EffectivePrefix, Base: b}
			if err := reg.reserve(e); err != nil {
				return nil, err
			}
		}
	}
	origins := map[string]mount.PrefixOrigin{}
	for _, m := range mounts {
		origins[m.Name] = m.PrefixOrigin
	}
	tools := describeTools(reg, server, naming)
	for i := range tools {
		tools[i].PrefixOrigin = origins[tools[i].Mount]
	}
	return tools, nil
}

// describeTools lists a registry's tools with their names for this client,
// and marks names the client would render the same.
func describeTools(reg *Registry, server string, naming agents.ToolNaming) []PlannedTool {
	entries := reg.Entries()
	out := make([]PlannedTool, len(entries))
	byVisible := map[string][]int{}
	for i, e := range entries {
		tn := PresentToolName(reg, naming.Namespacing, server, e.Name)
		r := agents.RenderModelName(naming, server, tn)
		out[i] = PlannedTool{Canonical: e.Name, Transport: tn, ModelVisible: r.Name, Source: e.Source, Mount: e.Mount, Base: e.Base, Problems: r.Problems}
		byVisible[r.Name] = append(byVisible[r.Name], i)
	}
	for name, idx := range byVisible {
		if len(idx) < 2 {
			continue
		}
		for _, i := range idx {
			for _, j := range idx {
				if i != j {
					out[i].Problems = append(out[i].Problems, fmt.Sprintf("the client shows %s as %q too", out[j].Canonical, name))
				}
			}
		}
	}
	return out
}
