package mcpserver

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Text is a text the model reads: an instance's instructions.md or one of
// its skills, as written for its client.
type Text struct {
	// File is where it is, relative to the instance's directory
	// (instructions.md, skills/review.md).
	File string
	Body string
	// Template is the kept template it was expanded from
	// (templates/instructions.md), or empty for a file agentctl generated.
	Template string
}

// LintTexts reports where texts name a tool under a name the client's
// model does not see (rows are a [Description]'s tools, with their names
// for this client):
//
//   - [FindingUnseenName]: a name of a served tool other than the one the
//     model calls it by: docs__concept_read on Auggie, whose model sees
//     docs__concept_read_agentctl; ask_user_question, a built-in's base
//     name, on any client. The name the model calls a tool by
//     ([NamedTool.Prompt]) and all of what it sees ([NamedTool.ModelVisible])
//     are right.
//   - [FindingAmbiguousBare]: a bare name that is the unprefixed form of
//     several tools (concept_read with two knowledge bases): the model
//     has to guess.
//
// A word counts as a tool's name when it is in backticks or holds an
// underscore, so that prose ("fetch the page") is not taken for the tool
// fetch. Each name is reported once per text, with the lines it is on.
// Findings are warnings: the model sees the real names in its tool list
// too, and the endpoint never resolves a name it does not serve.
func LintTexts(rows []ToolRow, texts []Text) []Finding {
	seen := map[string]bool{}
	refers := map[string][]*ToolRow{}
	add := func(name string, r *ToolRow) {
		if name != "" && !slices.Contains(refers[name], r) {
			refers[name] = append(refers[name], r)
		}
	}
	for i := range rows {
		r := &rows[i]
		if r.Status == StatusWithheld {
			continue
		}
		seen[r.promptName()], seen[r.ModelVisible] = true, true
		add(r.Canonical, r)
		add(r.Transport, r)
		add(r.Base, r)
	}
	var out []Finding
	for _, t := range texts {
		lines := map[string][]int{}
		var words []string // in the order they first appear
		for n, word := range toolWords(t.Body) {
			if seen[word] || len(refers[word]) == 0 || slices.Contains(lines[word], n) {
				continue
			}
			if lines[word] == nil {
				words = append(words, word)
			}
			lines[word] = append(lines[word], n)
		}
		for _, word := range words {
			out = append(out, textFinding(t, word, lines[word], refers[word]))
		}
	}
	return out
}

// textFinding is the finding of a text that names word, which is not a
// name the model sees, on lines; rs are the tools word is a name of.
func textFinding(t Text, word string, lines []int, rs []*ToolRow) Finding {
	at := "line " + strconv.Itoa(lines[0])
	if len(lines) > 1 {
		var ns []string
		for _, n := range lines {
			ns = append(ns, strconv.Itoa(n))
		}
		at = "lines " + andList(ns)
	}
	if len(rs) > 1 {
		var names, refs []string
		for _, r := range rs {
			names = append(names, r.promptName())
			refs = append(refs, placeholderFor(r))
		}
		fix := "re-create the instance to have " + t.File + " written again; it names every tool in full"
		if t.Template != "" {
			fix = fmt.Sprintf("name one in full: write %s in the template %s, then re-create the instance with it", strings.Join(refs, " or "), t.Template)
		}
		return Finding{Code: FindingAmbiguousBare, Severity: SeverityWarning, Source: t.File, Tool: word,
			Problem: fmt.Sprintf("%s names %q, the unprefixed form of %s; the model has to guess which", at, word, andList(names)),
			Fix:     fix}
	}
	r := rs[0]
	sees := fmt.Sprintf("the model sees that tool (%s) as %q", r.Source, r.ModelVisible)
	if r.promptName() != r.ModelVisible {
		sees += fmt.Sprintf(", which instructions give as %q", r.promptName())
	}
	fix := fmt.Sprintf("re-create the instance to have %s written again (the name to give is %q)", t.File, r.promptName())
	if t.Template != "" {
		fix = fmt.Sprintf("write %s (%q for this client) in the template %s, then re-create the instance with it", placeholderFor(r), r.promptName(), t.Template)
	}
	return Finding{Code: FindingUnseenName, Severity: SeverityWarning, Source: t.File, Tool: r.Canonical,
		Problem: fmt.Sprintf("%s names %q, but %s", at, word, sees),
		Fix:     fix}
}

// placeholderFor is the placeholder that expands to the name the model
// calls r by.
func placeholderFor(r *ToolRow) string {
	if r.Mount == "" {
		return "{{tool:" + r.Base + "}}"
	}
	return "{{tool:" + r.Mount + "/" + r.Base + "}}"
}

// toolWords yields the words of a Markdown text that may be tool names,
// with their line numbers: runs of letters, digits, '_', '-' and '.'
// (trimmed of '.' and '-' at their ends) that are in a code span or a
// fenced block, or that hold an underscore.
func toolWords(text string) func(yield func(int, string) bool) {
	return func(yield func(int, string) bool) {
		fenced := false
		for n, line := range strings.Split(text, "\n") {
			if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
				fenced = !fenced
				continue
			}
			code := fenced
			start := -1
			for i := 0; i <= len(line); i++ {
				if i < len(line) && isNameByte(line[i]) {
					if start < 0 {
						start = i
					}
					continue
				}
				if start >= 0 {
					w := strings.Trim(line[start:i], ".-")
					if w != "" && (code || strings.Contains(w, "_")) && !yield(n+1, w) {
						return
					}
					start = -1
				}
				if i < len(line) && line[i] == '`' && !fenced {
					code = !code
				}
			}
		}
	}
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}
