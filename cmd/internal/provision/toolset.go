package provision

import (
	"fmt"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
	"github.com/agentctl/agentctl/mcpserver/mount"
)

// Toolset is an instance's mounts with their resolved prefixes and the tools
// they and the built-ins serve, with every name each tool has.
type Toolset struct {
	Mounts []mount.Resolved
	Tools  []mcpserver.NamedTool
}

// Announcements are the lines that announce derived prefixes, one per mount
// whose prefix was derived from its name (see [mount.Resolved.Announcement]).
func (p Toolset) Announcements() []string {
	var out []string
	for _, m := range p.Mounts {
		if line := m.Announcement(); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// Warnings are what a create tells the user without refusing: an external
// server whose command lookPath (exec.LookPath) cannot find now. It is not
// an error, because the client may run agentctl with another PATH; but a
// typo found here saves a silent "server down" later.
func (p Toolset) Warnings(lookPath func(string) (string, error)) []string {
	var out []string
	for _, m := range p.Mounts {
		if m.Kind != mount.KindServer || m.Command == "" {
			continue
		}
		if _, err := lookPath(m.Command); err != nil {
			out = append(out, fmt.Sprintf("warning: MCP server %q: command %q is not found here (%v); the endpoint cannot start it unless it is found where the client runs agentctl",
				m.Name, m.Command, err))
		}
	}
	return out
}

// NameWarnings are the problems of the names the client's model will see
// of the tools known before anything runs (the built-ins and the knowledge
// bases'): a name over the client's length limit or outside its charset.
// The instance works, but the client may refuse or drop the tool; `tools
// lint` says which part to shorten and fails CI on them.
func (p Toolset) NameWarnings() []string {
	var out []string
	for _, t := range p.Tools {
		for _, problem := range t.Problems {
			out = append(out, fmt.Sprintf("warning: tool %s (%s): %s", t.Canonical, t.Source, problem))
		}
	}
	return out
}

// InvalidError is a configuration that the prefix contract, the tool plan or
// a template refuses. It wraps the cause and [instance.ErrInvalid], so
// callers can map it like the store's own invalid input.
type InvalidError struct{ Err error }

func (e *InvalidError) Error() string   { return e.Err.Error() }
func (e *InvalidError) Unwrap() []error { return []error{e.Err, instance.ErrInvalid} }

func invalid(err error) error { return &InvalidError{Err: err} }

// ResolveToolset applies the prefix contract to mounts ([mount.Resolve]) and
// plans the instance's whole namespace ([mcpserver.NameTools]), so a clash
// is refused before anything is written or served.
func ResolveToolset(server string, naming agents.ToolNaming, mode mount.PrefixMode, mounts []mount.Mount) (Toolset, error) {
	resolved, err := mount.Resolve(server, mode, mounts)
	if err != nil {
		return Toolset{}, invalid(err)
	}
	tools, err := mcpserver.NameTools(server, naming, resolved)
	if err != nil {
		return Toolset{}, invalid(err)
	}
	return Toolset{Mounts: resolved, Tools: tools}, nil
}

// Unresolved is the configured part of resolved mounts.
func Unresolved(rs []mount.Resolved) []mount.Mount {
	out := make([]mount.Mount, len(rs))
	for i, r := range rs {
		out[i] = r.Mount
	}
	return out
}

// RecordToolset re-resolves an instance's mounts from its record, failing fast
// if the record was edited into something the contract refuses or that no
// longer matches what the record says. `mcp serve` calls it before serving.
func RecordToolset(rec *instance.Record) (Toolset, error) {
	mode, err := mount.ParsePrefixMode(rec.ToolPrefixMode)
	if err != nil {
		return Toolset{}, invalid(fmt.Errorf("instance %s: %w", rec.ID, err))
	}
	plan, err := ResolveToolset(rec.ServerName, rec.Capabilities.ToolNames, mode, Unresolved(rec.Mounts))
	if err != nil {
		return Toolset{}, fmt.Errorf("instance %s: %w", rec.ID, err)
	}
	for i, m := range plan.Mounts {
		r := rec.Mounts[i]
		if r.EffectivePrefix != m.EffectivePrefix || r.PrefixOrigin != m.PrefixOrigin {
			return Toolset{}, invalid(fmt.Errorf("instance %s: the record says mount %q has prefix %q (%s), but it resolves to %q (%s); was the record edited? recreate the instance or use `instance mount`",
				rec.ID, m.Name, r.EffectivePrefix, r.PrefixOrigin, m.EffectivePrefix, m.PrefixOrigin))
		}
	}
	return plan, nil
}
