package mcpserver

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/mcpserver/mount"
)

// Finding is one problem with the names a client's model will see, with the
// way out. The JSON field names are a CLI contract (`tools lint -o json`).
type Finding struct {
	// Code classifies the problem: one of the Finding* constants.
	Code string `json:"code"`
	// Severity is [SeverityError] or [SeverityWarning].
	Severity string `json:"severity"`
	// Source is where the tool comes from ("built-in", "kb docs", "mcp
	// browser"), or what the finding is about ("instance 01jq...").
	Source string `json:"source"`
	// Tool is the tool's canonical name (a bare name for
	// [FindingAmbiguousBare]); empty when no tool is concerned.
	Tool    string `json:"tool"`
	Problem string `json:"problem"`
	Fix     string `json:"fix"`
}

// Text is the finding as one phrase: "problem (fix)".
func (f Finding) Text() string { return f.Problem + " (" + f.Fix + ")" }

// Severities of a [Finding]. Errors make `tools lint` fail; warnings fail
// it only with --strict.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// Finding codes.
const (
	FindingTooLong        = "too-long"         // model-visible name over the client's max_length
	FindingCharset        = "charset"          // characters outside the client's charset
	FindingCollision      = "collision"        // two tools the client shows under one name
	FindingHidden         = "hidden"           // a name the client is known to drop
	FindingAmbiguousBare  = "ambiguous-bare"   // a text names a bare name that is the unprefixed form of several tools
	FindingUnseenName     = "unseen-name"      // a text names a tool under a name the model does not see
	FindingStale          = "stale-capability" // the record's capability is not the definition's any more
	FindingServerDown     = "server-down"      // an external server could not be listed
	FindingInvalidName    = "invalid-name"     // an external tool's name breaks the MCP rules
	FindingInvalidSchema  = "invalid-schema"   // an external tool's schema breaks the MCP rules
	FindingTakesInProcess = "takes-in-process" // an external tool takes a built-in's or knowledge base's name
)

// LintTools checks the served rows of a description against the client's
// naming: length, charset, names the client would show alike, names it is
// known to drop. It appends each tool's findings to its row. Withheld rows
// are not checked: they never reach the model.
//
// A bare name that is the unprefixed form of several tools (concept_read
// of two knowledge bases) is no finding here: the endpoint never resolves
// it, and the texts agentctl writes name every tool in full. [LintTexts]
// reports a text that uses one.
func LintTools(server string, naming agents.ToolNaming, rows []ToolRow) {
	byVisible := map[string][]int{}
	for i := range rows {
		r := &rows[i]
		if r.Status == StatusWithheld {
			continue
		}
		byVisible[r.ModelVisible] = append(byVisible[r.ModelVisible], i)
		if f, ok := tooLong(server, naming, r); ok {
			r.Findings = append(r.Findings, f)
		}
		if f, ok := outsideCharset(server, naming, r); ok {
			r.Findings = append(r.Findings, f)
		}
		if f, ok := hidden(server, naming, r); ok {
			r.Findings = append(r.Findings, f)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(byVisible)) {
		idx := byVisible[name]
		for _, i := range idx {
			for _, j := range idx {
				if i != j {
					rows[i].Findings = append(rows[i].Findings, renderedAlike(server, naming, &rows[i], &rows[j]))
				}
			}
		}
	}
}

// namePart is a part of a model-visible name the user can shorten.
type namePart struct {
	what, value, how string
}

// shortenable lists the parts of r's model-visible name that the user can
// change, longest first: the mount's prefix, the server name (when the
// template shows it), the external tool's own name.
func shortenable(server string, naming agents.ToolNaming, r *ToolRow) []namePart {
	var parts []namePart
	if prefix, ok := strings.CutSuffix(r.Canonical, "__"+r.Base); ok && r.Mount != "" && prefix != "" {
		parts = append(parts, namePart{"the prefix", prefix, fmt.Sprintf("give mount %q a shorter tool_prefix", r.Mount)})
	}
	if strings.Contains(naming.Template, "{server}") || r.Kind == KindBuiltin {
		parts = append(parts, namePart{"the server name", server, "create the instance with a shorter --server-name"})
	}
	if r.Kind == KindServer {
		parts = append(parts, namePart{"the tool", r.Base, fmt.Sprintf("rename it in MCP server %q", r.Mount)})
	}
	slices.SortStableFunc(parts, func(a, b namePart) int { return utf8.RuneCountInString(b.value) - utf8.RuneCountInString(a.value) })
	return parts
}

// shortenFix says which part to shorten by over characters: the longest
// part that can lose them, then the others.
func shortenFix(parts []namePart, over int) string {
	if len(parts) == 0 {
		return "use a client with a higher limit"
	}
	var alts []string
	for _, p := range parts {
		alts = append(alts, fmt.Sprintf("%s %q (%d characters): %s", p.what, p.value, utf8.RuneCountInString(p.value), p.how))
	}
	unit := "characters"
	if over == 1 {
		unit = "character"
	}
	return fmt.Sprintf("shorten by at least %d %s %s", over, unit, strings.Join(alts, "; or "))
}

func tooLong(server string, naming agents.ToolNaming, r *ToolRow) (Finding, bool) {
	over := r.Length - r.MaxLength
	if over <= 0 {
		return Finding{}, false
	}
	return Finding{Code: FindingTooLong, Severity: SeverityError, Source: r.Source, Tool: r.Canonical,
		Problem: fmt.Sprintf("the model-visible name %q is %d characters, %d over the client's max_length of %d", r.ModelVisible, r.Length, over, r.MaxLength),
		Fix:     shortenFix(shortenable(server, naming, r), over)}, true
}

func outsideCharset(server string, naming agents.ToolNaming, r *ToolRow) (Finding, bool) {
	raw := agents.ApplyTemplate(naming, server, r.Transport)
	shown := raw // as the message quotes it: the separator kept
	if sep := naming.PartSeparator; sep != "" {
		// The client sends the parts separately: the charset applies to
		// each, not to the separator it shows them joined by.
		ok := true
		for _, p := range strings.Split(raw, sep) {
			ok = ok && agents.MatchesCharset(naming.Charset, p)
		}
		if ok {
			return Finding{}, false
		}
		raw = strings.ReplaceAll(raw, sep, "")
	}
	if agents.MatchesCharset(naming.Charset, raw) {
		return Finding{}, false
	}
	bad := agents.OutsideCharset(naming.Charset, raw)
	f := Finding{Code: FindingCharset, Severity: SeverityError, Source: r.Source, Tool: r.Canonical}
	if len(bad) == 0 {
		if agents.MatchesCharset(naming.Charset, r.ModelVisible) {
			return Finding{}, false
		}
		f.Problem = fmt.Sprintf("the model-visible name %q does not match the client's charset %s", r.ModelVisible, naming.Charset)
		f.Fix = "choose a tool_prefix or --server-name that makes the name match it"
		return f, true
	}
	var quoted []string
	for _, c := range bad {
		quoted = append(quoted, fmt.Sprintf("%q", c))
	}
	f.Problem = fmt.Sprintf("%q contains %s, outside the client's charset %s; the client shows it as %q",
		shown, strings.Join(quoted, ", "), naming.Charset, r.ModelVisible)
	switch {
	case len(agents.OutsideCharset(naming.Charset, "a"+server)) > 0 && (strings.Contains(naming.Template, "{server}") || r.Kind == KindBuiltin):
		f.Fix = fmt.Sprintf("create the instance with a --server-name that %s accepts", naming.Charset)
	case r.Kind == KindServer && len(agents.OutsideCharset(naming.Charset, "a"+r.Base)) > 0:
		f.Fix = fmt.Sprintf("rename the tool in MCP server %q, or use a client that accepts these characters", r.Mount)
	case r.Mount != "":
		f.Fix = fmt.Sprintf("give mount %q a tool_prefix that %s accepts", r.Mount, naming.Charset)
	default:
		f.Fix = "use a client that accepts these characters"
	}
	return f, true
}

func hidden(server string, naming agents.ToolNaming, r *ToolRow) (Finding, bool) {
	limit := naming.CombinedMaxLength
	n := utf8.RuneCountInString(server) + utf8.RuneCountInString(r.Transport)
	if limit <= 0 || n <= limit {
		return Finding{}, false
	}
	parts := shortenable(server, naming, r)
	if !slices.ContainsFunc(parts, func(p namePart) bool { return p.what == "the server name" }) {
		parts = append(parts, namePart{"the server name", server, "create the instance with a shorter --server-name"})
	}
	return Finding{Code: FindingHidden, Severity: SeverityError, Source: r.Source, Tool: r.Canonical,
		Problem: fmt.Sprintf("the client drops a tool whose server name and tool name are over %d characters together; %q and %q are %d", limit, server, r.Transport, n),
		Fix:     shortenFix(parts, n-limit)}, true
}

func renderedAlike(server string, naming agents.ToolNaming, r, other *ToolRow) Finding {
	how := "the client's sanitising"
	if naming.ServerMaxLength > 0 && utf8.RuneCountInString(server) > naming.ServerMaxLength {
		how = fmt.Sprintf("the client's cut of the server name to %d characters and its sanitising", naming.ServerMaxLength)
	}
	fix := "give one of the mounts a different tool_prefix"
	if r.Kind == KindServer {
		fix = fmt.Sprintf("give mount %q a different tool_prefix, or rename the tool in it", r.Mount)
	}
	return Finding{Code: FindingCollision, Severity: SeverityError, Source: r.Source, Tool: r.Canonical,
		Problem: fmt.Sprintf("the client shows %s as %q too (from %s, after %s): the model cannot tell them apart", other.Canonical, r.ModelVisible, other.Source, how),
		Fix:     fix}
}

// takesInProcess is the finding of an external tool withheld because one of
// its names is an in-process tool's.
func takesInProcess(m mount.Resolved, r *ToolRow, other *ToolRow, which string) Finding {
	return Finding{Code: FindingTakesInProcess, Severity: SeverityError, Source: r.Source, Tool: r.Canonical,
		Problem: fmt.Sprintf("its %s %q is also the %s tool %s's (the model sees both as %q); the external tool is withheld and %s keeps its name",
			which, nameOf(r, which), other.Source, other.Canonical, other.ModelVisible, other.Canonical),
		Fix: fmt.Sprintf("give mount %q a tool_prefix, for example tool_prefix = %q", m.Name, mount.SanitizePrefix(m.Name))}
}

func nameOf(r *ToolRow, which string) string {
	switch which {
	case "canonical name":
		return r.Canonical
	case "name on the wire":
		return r.Transport
	}
	return r.ModelVisible
}

func invalidName(m mount.Resolved, base string, err error) Finding {
	return Finding{Code: FindingInvalidName, Severity: SeverityError, Source: m.Source(), Tool: m.ToolName(base),
		Problem: fmt.Sprintf("%v; the endpoint does not serve it", err),
		Fix:     fmt.Sprintf("rename the tool in MCP server %q", m.Name)}
}

func invalidSchema(m mount.Resolved, base string, why string) Finding {
	return Finding{Code: FindingInvalidSchema, Severity: SeverityError, Source: m.Source(), Tool: m.ToolName(base),
		Problem: fmt.Sprintf("%s; the endpoint does not serve it", why),
		Fix:     fmt.Sprintf("MCP server %q must describe the tool's input with an object schema ({\"type\": \"object\", ...}); report it to the server's authors", m.Name)}
}

func sharedExternal(m mount.Resolved, r *ToolRow, rows []ToolRow) Finding {
	var sources []string
	for _, o := range rows {
		if o.Canonical == r.Canonical && !slices.Contains(sources, o.Source) {
			sources = append(sources, o.Source)
		}
	}
	return Finding{Code: FindingCollision, Severity: SeverityError, Source: r.Source, Tool: r.Canonical,
		Problem: fmt.Sprintf("%s offer %q; none of them is served", andList(sources), r.Canonical),
		Fix:     fmt.Sprintf("give mount %q a tool_prefix", m.Name)}
}

// alikeExternal are the findings of an external tool withheld because the
// model would see it as other tools of the group ([AlikeExternal]): one a
// tool, as [renderedAlike] words it.
func alikeExternal(server string, naming agents.ToolNaming, r *ToolRow, group []string, rows []ToolRow) []Finding {
	var out []Finding
	for i := range rows {
		o := &rows[i]
		if o.Canonical == r.Canonical || !slices.Contains(group, o.Canonical) {
			continue
		}
		f := renderedAlike(server, naming, r, o)
		f.Problem += "; none of them is served"
		if o.Mount == r.Mount {
			f.Fix = fmt.Sprintf("rename the tool in the server of mount %q (a tool_prefix changes both names alike)", r.Mount)
		}
		out = append(out, f)
	}
	return out
}

func serverDown(m mount.Resolved, why string) Finding {
	return Finding{Code: FindingServerDown, Severity: SeverityError, Source: m.Source(),
		Problem: fmt.Sprintf("could not list its tools: %s", why),
		Fix:     "fix the server's command, URL or credentials (tools list shows the last lines of its stderr; all of it is in upstreams.log of a served instance), or lint without --connect"}
}

// StaleCapability compares an instance's stored capability with its agent's
// current definition and returns the finding (source "instance <ref>") when
// they differ, naming the fields; ok is false when they are the same.
func StaleCapability(ref, agent string, stored, current agents.ToolNaming) (f Finding, ok bool) {
	var diffs []string
	add := func(key string, was, now any) {
		if was != now {
			diffs = append(diffs, fmt.Sprintf("%s %v -> %v", key, fmtValue(was), fmtValue(now)))
		}
	}
	add("namespacing", string(stored.Namespacing), string(current.Namespacing))
	add("template", stored.Template, current.Template)
	add("max_length", stored.MaxLength, current.MaxLength)
	add("charset", stored.Charset, current.Charset)
	add("server_max_length", stored.ServerMaxLength, current.ServerMaxLength)
	add("combined_max_length", stored.CombinedMaxLength, current.CombinedMaxLength)
	if len(diffs) == 0 {
		return Finding{}, false
	}
	return Finding{Code: FindingStale, Severity: SeverityError, Source: "instance " + ref,
		Problem: fmt.Sprintf("the capability stored at create differs from agent %q's definition now: %s; the endpoint keeps using the stored one", agent, strings.Join(diffs, ", ")),
		Fix:     fmt.Sprintf("re-create the instance to take the new definition: agentctl instance delete %s, then agentctl instance create --agent %s with the same mounts", ref, agent)}, true
}

func fmtValue(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}

// andList joins names as "a", "a and b", "a, b and c".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
