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

// TestEventsShowTheAgentsTextHarmlessly: an event's message comes from the
// model too; `instance events` prints it on one line, with control
// characters (C1 and bidirectional controls among them) escaped, on a
// terminal and piped; -o jsonl keeps it exact.
func TestEventsShowTheAgentsTextHarmlessly(t *testing.T) {
	t.Parallel()
	f := newTestFactory(t, "NO_COLOR=1")
	id := f.createNamed(t, "auggie", "esc")
	st, err := f.Store(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	msg := "step\x1b]0;PWNED\x07 one\r\ntwo\tthree \u202eevil\u009b2J"
	if _, err := st.RecordProgress(context.Background(), id, "report_progress_agentctl", "running", msg, nil); err != nil {
		t.Fatal(err)
	}
	st.Close()
	for _, tty := range []bool{true, false} {
		f.IOStreams.SetStdoutTTY(tty)
		out := f.mustRun(t, NewCmdInstanceEvents(f.Factory, nil), "esc")
		line := strings.TrimSuffix(out, "\n")
		if strings.Contains(line, "\n") || strings.ContainsFunc(line, func(r rune) bool { return r != '\t' && terminalUnsafe(r) }) {
			t.Errorf("events (tty %v): a line break or control character reaches the terminal: %q", tty, out)
		}
		if want := `step\x1b]0;PWNED\x07 one  two three \u202eevil\u009b2J`; !strings.Contains(out, want) {
			t.Errorf("events (tty %v): want %s shown:\n%q", tty, want, out)
		}
	}
	f.IOStreams.SetStdoutTTY(false)
	var ev struct {
		Message string `json:"message"`
	}
	out := f.mustRun(t, NewCmdInstanceEvents(f.Factory, nil), "esc", "-o", "jsonl")
	if err := json.Unmarshal([]byte(out), &ev); err != nil || ev.Message != msg {
		t.Errorf("events -o jsonl: want the message exact: %v\n%s", err, out)
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
