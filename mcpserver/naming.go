package mcpserver

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agentctl/agentctl/agents"
)

// NameSet is what the naming functions need to know of a registry.
type NameSet interface {
	// Has reports whether name is a registered canonical name.
	Has(name string) bool
	// IsBuiltin reports whether name is a registered built-in tool.
	IsBuiltin(name string) bool
}

// PresentToolName returns the transport name of a canonical name: the name
// sent on the wire in tools/list. For a suffix client (Auggie appends
// "_<server>" itself) a built-in ending in "_<server>" is sent without that
// one suffix, unless the shortened name is itself registered. Every other
// name, and every name for none and prefix clients, is sent unchanged.
func PresentToolName(names NameSet, style agents.Namespacing, server, canonical string) string {
	if style != agents.NamespacingSuffix || server == "" {
		return canonical
	}
	short, ok := strings.CutSuffix(canonical, "_"+server)
	if !ok || short == "" || !names.IsBuiltin(canonical) || names.Has(short) {
		return canonical
	}
	return short
}

// Route is the result of [RouteToolCall].
type Route struct {
	// Canonical is the registered name the call goes to; empty on error.
	Canonical string
	// Err says why the name does not resolve; nil on success.
	Err *UnknownToolError
}

// UnknownToolError is a tools/call name that resolves to no tool. It is sent
// as the normal unknown-tool JSON-RPC error (-32602) with a helpful message.
type UnknownToolError struct {
	Name string
	// Suggestion is a registered name the caller probably meant, if any.
	Suggestion string
}

func (e *UnknownToolError) Error() string {
	msg := fmt.Sprintf("unknown tool %q", e.Name)
	if e.Suggestion != "" {
		msg += fmt.Sprintf("; did you mean %q?", e.Suggestion)
	}
	return msg
}

// RouteToolCall maps a name received in tools/call to a canonical name:
//
//  1. a name registered exactly wins;
//  2. else, for a suffix client, name + "_" + server if that is a registered built-in;
//  3. else the name is unknown.
//
// It is the inverse of [PresentToolName]: for every registered x,
// RouteToolCall(PresentToolName(x)) is x.
func RouteToolCall(names NameSet, style agents.Namespacing, server, name string) Route {
	if names.Has(name) {
		return Route{Canonical: name}
	}
	if style == agents.NamespacingSuffix && server != "" && name != "" {
		if full := name + "_" + server; names.IsBuiltin(full) {
			return Route{Canonical: full}
		}
	}
	return Route{Err: &UnknownToolError{Name: name, Suggestion: suggestTool(names, name)}}
}

// suggestTool finds the registered name the caller most likely meant: the
// canonical form of a transport name sent to the wrong client style, or a
// name differing by its server suffix.
func suggestTool(names NameSet, name string) string {
	lister, ok := names.(interface{ Names() []string })
	if !ok || name == "" {
		return ""
	}
	var hits []string
	for _, n := range lister.Names() {
		if strings.HasPrefix(n, name+"_") && names.IsBuiltin(n) {
			hits = append(hits, n)
		}
	}
	sort.Strings(hits)
	if len(hits) == 1 {
		return hits[0]
	}
	return ""
}
