package mcpserver

import (
	"bufio"
	"fmt"
	"regexp"
	"slices"
	"strings"

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

// describeTools lists a registry's tools with their names for this client
// and their problems (see [LintTools]): what get_instance shows.
func describeTools(reg *Registry, server string, naming agents.ToolNaming) []PlannedTool {
	rows := nameEntries(reg.Entries(), reg, server, naming, nil)
	LintTools(server, naming, rows)
	out := make([]PlannedTool, len(rows))
	for i, r := range rows {
		out[i] = r.PlannedTool
		out[i].Problems = problemTexts(r.Findings)
	}
	return out
}

var placeholderRE = regexp.MustCompile(`\{\{\s*tool:([^}]*?)\s*\}\}`)

// PlaceholderError is an unknown {{tool:...}} placeholder.
type PlaceholderError struct {
	File string
	Line int
	Ref  string
	Msg  string
}

func (e *PlaceholderError) Error() string {
	return fmt.Sprintf("%s:%d: unknown placeholder {{tool:%s}}: %s", e.File, e.Line, e.Ref, e.Msg)
}

// ExpandPlaceholders replaces {{tool:REF}} in text with the tool's transport
// name for this instance. REF is a built-in's base name
// ({{tool:ask_user_question}}), MOUNT/TOOL ({{tool:docs/concept_read}}), a
// canonical name, or a tool name that exactly one mount offers. An unknown
// REF is an error naming the file and line.
func ExpandPlaceholders(file, text string, tools []PlannedTool) (string, error) {
	var firstErr error
	line := 1
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for ; sc.Scan(); line++ {
		expanded := placeholderRE.ReplaceAllStringFunc(sc.Text(), func(m string) string {
			ref := placeholderRE.FindStringSubmatch(m)[1]
			name, msg := resolvePlaceholder(ref, tools)
			if msg != "" && firstErr == nil {
				firstErr = &PlaceholderError{File: file, Line: line, Ref: ref, Msg: msg}
			}
			return name
		})
		b.WriteString(expanded)
		b.WriteByte('\n')
	}
	if firstErr != nil {
		return "", firstErr
	}
	if !strings.HasSuffix(text, "\n") {
		return strings.TrimSuffix(b.String(), "\n"), sc.Err()
	}
	return b.String(), sc.Err()
}

func resolvePlaceholder(ref string, tools []PlannedTool) (string, string) {
	if mount, base, ok := strings.Cut(ref, "/"); ok {
		for _, t := range tools {
			if t.Mount == mount && t.Base == base {
				return t.Transport, ""
			}
		}
		var mounts []string
		for _, t := range tools {
			if t.Mount != "" && !slices.Contains(mounts, t.Mount) {
				mounts = append(mounts, t.Mount)
			}
		}
		if !slices.Contains(mounts, mount) {
			return "", fmt.Sprintf("no mount %q (mounts: %s)", mount, orNone(mounts))
		}
		return "", fmt.Sprintf("mount %q has no tool %q", mount, base)
	}
	var hits []PlannedTool
	for _, t := range tools {
		if t.Canonical == ref {
			return t.Transport, ""
		}
		if t.Base == ref {
			hits = append(hits, t)
		}
	}
	switch len(hits) {
	case 1:
		return hits[0].Transport, ""
	case 0:
		var bases []string
		for _, t := range tools {
			if t.Mount == "" {
				bases = append(bases, t.Base)
			}
		}
		return "", fmt.Sprintf("no such tool; use a built-in (%s) or MOUNT/TOOL such as docs/concept_read", strings.Join(bases, ", "))
	}
	var refs []string
	for _, t := range hits {
		refs = append(refs, "{{tool:"+t.Mount+"/"+t.Base+"}}")
	}
	return "", fmt.Sprintf("several mounts offer %q; write one of %s", ref, strings.Join(refs, ", "))
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
