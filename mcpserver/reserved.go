package mcpserver

import (
	"fmt"
	"slices"
	"sort"

	"github.com/agentctl/agentctl/agents"
)

// In-process names are reserved at run time too: the built-ins and the
// knowledge bases' tools are configured and always served, so an external
// server's tool that would take one of their names, or reach the model under
// one of their model-visible names, is withheld alone.

// ExternalTool is one tool an external server offers, by the canonical name
// it would be served under.
type ExternalTool struct {
	// Name is the canonical name (<prefix>__<tool>, or <tool> unprefixed).
	Name string
	// Mount is the external server's mount name; Source its description
	// for messages ("mcp browser").
	Mount, Source string
}

// Withheld is an external tool that is not served because an in-process tool
// keeps the name. Field names are a contract (get_instance, `tools lint -o
// json`).
type Withheld struct {
	// Name is the external tool's canonical name and Source its server
	// ("mcp browser").
	Name   string `json:"name"`
	Source string `json:"source"`
	// Holder is the in-process tool that keeps its name, and HolderSource
	// where it comes from ("built-in", "kb docs").
	Holder       string `json:"holder"`
	HolderSource string `json:"holder_source"`
	// ModelVisible is the name both would reach the client's model under.
	ModelVisible string `json:"model_visible"`
	// Reason says why, Fix how to serve the external tool too.
	Reason string `json:"reason"`
	Fix    string `json:"fix"`
}

func (w Withheld) String() string {
	return fmt.Sprintf("%s from %s is withheld: %s (%s)", w.Name, w.Source, w.Reason, w.Fix)
}

// WithheldExternal returns the external tools that the in-process tools
// (the built-ins and knowledge bases' tools, as [NameTools] describes them
// for this client) keep out of the namespace, sorted by name and source: one
// whose canonical name an in-process tool has, and one that this client
// would show its model under an in-process tool's model-visible name (on
// Auggie an unprefixed ask_user_question reaches the model as
// ask_user_question_agentctl, the built-in's name). That also covers a tool
// sent on the wire under an in-process tool's transport name, since one
// template renders both alike. The endpoint serves neither; [DescribeTools]
// applies the same rule, so `tools list` and `tools lint` report what the
// endpoint does. It is pure.
func WithheldExternal(server string, naming agents.ToolNaming, inProcess []NamedTool, external []ExternalTool) []Withheld {
	byName := make(map[string]NamedTool, len(inProcess))
	byVisible := make(map[string]NamedTool, len(inProcess))
	for _, t := range inProcess {
		byName[t.Canonical] = t
		byVisible[t.ModelVisible] = t
	}
	var out []Withheld
	for _, x := range external {
		// An external tool is never a built-in: its transport name is its
		// canonical name (see PresentToolName).
		visible := agents.RenderModelName(naming, server, x.Name).Name
		fix := fmt.Sprintf("give mount %q a tool_prefix: \"tool_prefix\" in its --mcp-json or its [[mcp_servers]] table", x.Mount)
		w := Withheld{Name: x.Name, Source: x.Source, ModelVisible: visible, Fix: fix}
		if t, ok := byName[x.Name]; ok {
			w.Holder, w.HolderSource = t.Canonical, t.Source
			w.ModelVisible = t.ModelVisible
			w.Reason = fmt.Sprintf("the name belongs to %s tool %s", t.Source, t.Canonical)
		} else if t, ok := byVisible[visible]; ok {
			w.Holder, w.HolderSource = t.Canonical, t.Source
			w.Reason = fmt.Sprintf("the client would show it as %q, the name of %s tool %s", visible, t.Source, t.Canonical)
		} else {
			continue
		}
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Source < out[j].Source
	})
	return out
}

// AlikeExternal finds the external tools, by canonical name, that reach the
// model under one model-visible name although their names differ: a client
// that takes only some characters maps the others ("a.b" and "a_b" both
// become "a_b"), so the model could call only one of them, and agentctl
// would route its call to whichever holds the name. It returns, for each
// name of such a group, the group's names, sorted. The endpoint serves
// none of them (a collision, as for a name two servers want);
// [DescribeTools] applies the same rule. It is pure.
func AlikeExternal(server string, naming agents.ToolNaming, names []string) map[string][]string {
	byVisible := map[string][]string{}
	for _, n := range names {
		v := agents.RenderModelName(naming, server, n).Name
		if !slices.Contains(byVisible[v], n) {
			byVisible[v] = append(byVisible[v], n)
		}
	}
	out := map[string][]string{}
	for _, group := range byVisible {
		if len(group) < 2 {
			continue
		}
		slices.Sort(group)
		for _, n := range group {
			out[n] = group
		}
	}
	return out
}
