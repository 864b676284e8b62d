package mcpserver

import (
	"bufio"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

var placeholderRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{\{\s*tool:([^}]*?)\s*\}\}`) })

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

// ExpandPlaceholders replaces {{tool:REF}} in text with the name the texts
// a model reads give the tool ([NamedTool.Prompt]: ask_user_question_agentctl
// on every client; docs__concept_read, or docs__concept_read_agentctl on
// Auggie, whose model sees that), and {{tool:REF|model}} with the whole name
// this instance's client shows its model ([NamedTool.ModelVisible]:
// mcp__agentctl__docs__concept_read on Claude Code). REF is a built-in's
// base name ({{tool:ask_user_question}}), MOUNT/TOOL
// ({{tool:docs/concept_read}}), a canonical name, or a tool name that exactly
// one mount offers. An unknown REF or form is an error naming the file and
// line.
func ExpandPlaceholders(file, text string, tools []NamedTool) (string, error) {
	var firstErr error
	line := 1
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for ; sc.Scan(); line++ {
		expanded := placeholderRE().ReplaceAllStringFunc(sc.Text(), func(m string) string {
			ref := placeholderRE().FindStringSubmatch(m)[1]
			name, msg := expandPlaceholder(ref, tools)
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

// expandPlaceholder returns the name {{tool:ref}} stands for, or why there
// is none.
func expandPlaceholder(ref string, tools []NamedTool) (string, string) {
	ref, form, hasForm := strings.Cut(ref, "|")
	ref, form = strings.TrimSpace(ref), strings.TrimSpace(form)
	if hasForm && form != placeholderModel {
		return "", fmt.Sprintf("unknown form %q; write {{tool:%s}} for the name the model calls the tool by, or {{tool:%s|model}} for the whole name the client shows its model", form, ref, ref)
	}
	t, msg := resolvePlaceholder(ref, tools)
	switch {
	case msg != "":
		return "", msg
	case hasForm:
		return t.ModelVisible, ""
	}
	return t.promptName(), ""
}

// placeholderModel is the form of {{tool:REF|model}}.
const placeholderModel = "model"

func resolvePlaceholder(ref string, tools []NamedTool) (NamedTool, string) {
	if mount, base, ok := strings.Cut(ref, "/"); ok {
		for _, t := range tools {
			if t.Mount == mount && t.Base == base {
				return t, ""
			}
		}
		var mounts []string
		for _, t := range tools {
			if t.Mount != "" && !slices.Contains(mounts, t.Mount) {
				mounts = append(mounts, t.Mount)
			}
		}
		if !slices.Contains(mounts, mount) {
			return NamedTool{}, fmt.Sprintf("no mount %q (mounts: %s)", mount, orNone(mounts))
		}
		return NamedTool{}, fmt.Sprintf("mount %q has no tool %q", mount, base)
	}
	var hits []NamedTool
	for _, t := range tools {
		if t.Canonical == ref {
			return t, ""
		}
		if t.Base == ref {
			hits = append(hits, t)
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], ""
	case 0:
		var bases []string
		for _, t := range tools {
			if t.Mount == "" {
				bases = append(bases, t.Base)
			}
		}
		return NamedTool{}, fmt.Sprintf("no such tool; use a built-in (%s) or MOUNT/TOOL such as docs/concept_read", strings.Join(bases, ", "))
	}
	var refs []string
	for _, t := range hits {
		refs = append(refs, "{{tool:"+t.Mount+"/"+t.Base+"}}")
	}
	return NamedTool{}, fmt.Sprintf("several mounts offer %q; write one of %s", ref, strings.Join(refs, ", "))
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
