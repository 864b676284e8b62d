package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestQuestionsShowTheAgentsTextHarmlessly: a question's text and choices
// come from the model; `instance questions` (one instance, and the inbox)
// prints them with every control character and bidirectional control
// escaped, on a terminal (table and -o wide) and piped, so that they set
// no window title, clear no screen and no choice looks like another; -o
// json keeps them exact.
func TestQuestionsShowTheAgentsTextHarmlessly(t *testing.T) {
	t.Parallel()
	f := newTestFactory(t, "NO_COLOR=1")
	id := f.createNamed(t, "auggie", "esc")
	st, err := f.Store(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	text := "Deploy?\x1b]0;PWNED\x07\x1b[31mRED\x1b[0m\rOVER\u202eWRITE\x1b[2Jend\u009b1A\nsecond line"
	choices := []string{"yes\x1b[1A", "no\b\b\bXX"}
	if _, err := st.AddQuestion(context.Background(), id, text, choices); err != nil {
		t.Fatal(err)
	}
	st.Close()

	for _, tc := range []struct {
		tty  bool
		args []string
	}{
		{true, []string{"esc"}}, {true, []string{"esc", "-o", "wide"}}, {false, []string{"esc"}},
		{true, nil}, {true, []string{"-o", "wide"}}, {false, nil},
	} {
		f.IOStreams.SetStdoutTTY(tc.tty)
		f.IOStreams.SetTerminalWidth(400)
		out := f.mustRun(t, NewCmdInstanceQuestions(f.Factory, nil), tc.args...)
		if strings.ContainsFunc(out, func(r rune) bool { return r != '\n' && r != '\t' && terminalUnsafe(r) }) {
			t.Errorf("questions %q (tty %v): a control character reaches the terminal: %q", tc.args, tc.tty, out)
		}
		for _, want := range []string{`Deploy?\x1b]0;PWNED\x07\x1b[31mRED`, `\x0dOVER\u202eWRITE\x1b[2Jend\u009b1A`, `yes\x1b[1A | no\x08\x08\x08XX`} {
			if !strings.Contains(out, want) {
				t.Errorf("questions %q (tty %v): want %s shown:\n%s", tc.args, tc.tty, want, out)
			}
		}
	}

	// -o json: exact.
	f.IOStreams.SetStdoutTTY(false)
	for _, args := range [][]string{{"esc", "-o", "json"}, {"-o", "json"}} {
		var qs []struct {
			Question string   `json:"question"`
			Choices  []string `json:"choices"`
		}
		out := f.mustRun(t, NewCmdInstanceQuestions(f.Factory, nil), args...)
		if err := json.Unmarshal([]byte(out), &qs); err != nil || len(qs) != 1 || qs[0].Question != text || strings.Join(qs[0].Choices, "|") != strings.Join(choices, "|") {
			t.Errorf("questions %q: want the text and choices exact: %v\n%s", args, err, out)
		}
	}
}

// TestTerminalLines: each line made harmless, line breaks (LF, CRLF) kept.
func TestTerminalLines(t *testing.T) {
	for in, want := range map[string]string{
		"plain":               "plain",
		"a\nb":                "a\nb",
		"a\r\nb":              "a\nb",
		"a\rb":                `a\x0db`,
		"x\x1b[2J\ny\u2066z":  `x\x1b[2J` + "\n" + `y\u2066z`,
		"tab\there\n\x07bell": "tab here\n" + `\x07bell`,
	} {
		if got := TerminalLines(in); got != want {
			t.Errorf("TerminalLines(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestQuestionGist: `answer` echoes the question's first line, at most
// maxGist characters, quoted, with "…" when there is more.
func TestQuestionGist(t *testing.T) {
	long := strings.Repeat("é", maxGist+1)
	for in, want := range map[string]string{
		"Which database?":          `"Which database?"`,
		"Which one?\n1. a\n2. b":   `"Which one?"…`,
		long:                       `"` + long[:2*maxGist] + `"…`,
		strings.Repeat("x", 3<<20): `"` + strings.Repeat("x", maxGist) + `"…`,
		"bell\x07":                 `"bell\a"`,
	} {
		if got := questionGist(in); got != want {
			t.Errorf("questionGist(%.40q) = %.60q, want %.60q", in, got, want)
		}
	}
}
