package mcpserver

import (
	"fmt"
	"sort"
	"strconv"
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

// UnknownReason classifies an unknown tool name.
type UnknownReason int

// Why a tools/call name does not resolve.
const (
	UnknownName         UnknownReason = iota // nothing like it is registered
	EmptyServerPart                          // "__fetch"
	EmptyToolPart                            // "browser__"
	UnknownServer                            // "nosuch__fetch"
	UnknownToolOnServer                      // "browser__nosuch"
	BareName                                 // "concept_read" when only "docs__concept_read" exists
)

// UnknownToolError is a tools/call name that resolves to no tool. It is sent
// as the normal unknown-tool JSON-RPC error (-32602) with a helpful message.
type UnknownToolError struct {
	Name   string
	Reason UnknownReason
	// Server and Tool are the two parts of a "<server>__<tool>" name.
	Server, Tool string
	// Suggestion is the registered name the caller probably meant, when
	// there is exactly one.
	Suggestion string
	// Suggestions are all the registered names the caller may have meant
	// (a bare name that is the unprefixed form of several tools), sorted.
	Suggestions []string
	// Mounts lists the mount prefixes (UnknownServer); Tools lists a few of
	// the server's tools (UnknownToolOnServer).
	Mounts, Tools []string
	// Hint explains a server part that names an in-process service.
	Hint string
}

func (e *UnknownToolError) Error() string {
	msg := fmt.Sprintf("unknown tool %q", e.Name)
	switch e.Reason {
	case EmptyServerPart:
		msg += fmt.Sprintf(": the server part before \"__\" is empty; call \"<server>__%s\"", e.Tool)
	case EmptyToolPart:
		msg += fmt.Sprintf(": the tool part after \"%s__\" is empty", e.Server)
	case UnknownServer:
		if e.Hint != "" {
			msg += fmt.Sprintf(": server %q not found; %s", e.Server, e.Hint)
			break
		}
		if len(e.Mounts) == 0 {
			msg += fmt.Sprintf(": server %q not found; nothing is mounted", e.Server)
		} else {
			msg += fmt.Sprintf(": server %q not found; mounted: %s", e.Server, strings.Join(e.Mounts, ", "))
		}
	case UnknownToolOnServer:
		msg += fmt.Sprintf(": server %q has no tool %q; it has %s", e.Server, e.Tool, strings.Join(e.Tools, ", "))
	}
	switch n := len(e.Suggestions); {
	case n > 1:
		quoted := make([]string, n)
		for i, s := range e.Suggestions {
			quoted[i] = strconv.Quote(s)
		}
		msg += fmt.Sprintf("; did you mean %s or %s?", strings.Join(quoted[:n-1], ", "), quoted[n-1])
	case e.Suggestion != "":
		msg += fmt.Sprintf("; did you mean %q?", e.Suggestion)
	}
	return msg
}

// unprefixedHint explains a server part that names a mount whose tools
// have no prefix (the only mount, or tool_prefix "off"): its tools are
// called by their own names, and the tool, if the mount has it, is the
// suggestion.
func unprefixedHint(entries []Entry, srv, tool string) (hint, suggestion string) {
	found := false
	for _, ent := range entries {
		if ent.Mount != srv || ent.Prefix != "" {
			continue
		}
		found = true
		if ent.Base == tool {
			suggestion = ent.Name
		}
	}
	if !found {
		return "", ""
	}
	return fmt.Sprintf("mount %q has no tool prefix (it is the only mount, or its prefix is off), so its tools are called by their own names", srv), suggestion
}

// EntryLister is the optional part of a [NameSet] that lets [RouteToolCall]
// explain an unknown name; [*Registry] has it.
type EntryLister interface {
	Entries() []Entry
}

// RouteToolCall maps a name received in tools/call to a canonical name:
//
//  1. a name registered exactly wins;
//  2. else, for a suffix client, name + "_" + server if that is a registered built-in;
//  3. else the name is unknown, and the error says why: an empty part of
//     "<server>__<tool>", an unknown server (listing the mounts), an unknown
//     tool on a known server (listing some of its tools), or a bare name that
//     is the unprefixed form of one tool or several (all suggested, never
//     resolved).
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
	return Route{Err: explainUnknown(names, server, name)}
}

// maxListed bounds the tools an error lists.
const maxListed = 5

func explainUnknown(names NameSet, server, name string) *UnknownToolError {
	e := &UnknownToolError{Name: name}
	lister, ok := names.(EntryLister)
	if !ok || name == "" {
		return e
	}
	entries := lister.Entries()
	if srv, tool, found := strings.Cut(name, "__"); found {
		e.Server, e.Tool = srv, tool
		switch {
		case srv == "":
			e.Reason = EmptyServerPart
			return e
		case tool == "":
			e.Reason = EmptyToolPart
			return e
		}
		var mounts, tools []string
		seen := map[string]bool{}
		for _, ent := range entries {
			if ent.Prefix == "" {
				continue
			}
			if !seen[ent.Prefix] {
				seen[ent.Prefix] = true
				mounts = append(mounts, ent.Prefix)
			}
			if ent.Prefix == srv {
				tools = append(tools, ent.Name)
			}
		}
		if len(tools) == 0 {
			e.Reason, e.Mounts = UnknownServer, mounts
			sort.Strings(e.Mounts)
			e.Hint = inProcessHint(entries, server, srv)
			if e.Hint == "" {
				e.Hint, e.Suggestion = unprefixedHint(entries, srv, tool)
			}
			return e
		}
		sort.Strings(tools)
		e.Reason, e.Tools = UnknownToolOnServer, tools[:min(len(tools), maxListed)]
		return e
	}
	// A bare name: the unprefixed form of one tool or several (all are
	// suggested, none is guessed), or a built-in's base name sent by a
	// client that does not strip the server suffix.
	var hits []string
	for _, ent := range entries {
		if ent.Prefix != "" && ent.Base == name || ent.Kind == KindBuiltin && strings.HasPrefix(ent.Name, name+"_") && ent.Base == name {
			hits = append(hits, ent.Name)
		}
	}
	if len(hits) > 0 {
		sort.Strings(hits)
		e.Reason, e.Suggestions = BareName, hits
	}
	if len(hits) == 1 {
		e.Suggestion = hits[0]
	}
	return e
}

// inProcessHint explains a server part that names an in-process service
// rather than a prefix: the server name S, or a knowledge base's name.
func inProcessHint(entries []Entry, server, srv string) string {
	if srv == server {
		var builtins []string
		for _, e := range entries {
			if e.Kind == KindBuiltin {
				builtins = append(builtins, e.Name)
			}
		}
		return fmt.Sprintf("%q is agentctl's own server name; its tools are called by their names (%s)", srv, strings.Join(builtins, ", "))
	}
	for _, e := range entries {
		if e.Mount == srv && e.Kind == KindKB {
			if e.Prefix == "" {
				return fmt.Sprintf("%q is a knowledge base whose tools have no prefix (%s)", srv, e.Base)
			}
			return fmt.Sprintf("%q is a knowledge base; its tools are prefixed %s__", srv, e.Prefix)
		}
	}
	return ""
}
