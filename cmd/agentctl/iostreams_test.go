package main

import (
	"bytes"
	"github.com/charmbracelet/x/ansi"
	"slices"
	"strings"
	"testing"
)

// newTestIOStreams returns streams over buffers (stdin, stdout, stderr),
// none of them a terminal until the test says so with SetStdinTTY and the
// like; env ("NAME=value" pairs) is the environment the colour decision sees.
func newTestIOStreams(env ...string) (ios *IOStreams, in, out, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	ios = &IOStreams{In: in, Out: out, ErrOut: errOut, getenv: func(k string) string { return vars[k] }}
	return ios, in, out, errOut
}

func TestColorEnabled(t *testing.T) {
	tests := []struct {
		tty  bool
		env  map[string]string
		want bool
	}{
		{true, nil, true},
		{false, nil, false},
		{true, map[string]string{"NO_COLOR": "1"}, false},
		{true, map[string]string{"NO_COLOR": "anything"}, false},
		{true, map[string]string{"CLICOLOR": "0"}, false},
		{true, map[string]string{"TERM": "dumb"}, false},
		{false, map[string]string{"CLICOLOR_FORCE": "1"}, true},
		{false, map[string]string{"CLICOLOR_FORCE": "0"}, false},
		{true, map[string]string{"CLICOLOR_FORCE": "1", "NO_COLOR": "1"}, false},
	}
	for _, tt := range tests {
		got := colorEnabled(tt.tty, func(k string) string { return tt.env[k] })
		if got != tt.want {
			t.Errorf("tty=%v env=%v: colour %v, want %v", tt.tty, tt.env, got, tt.want)
		}
	}
}

func TestPrintTable(t *testing.T) {
	rows := [][]string{{"auggie", "suffix"}, {"claude-code", "prefix"}}
	t.Run("piped: tab-separated, no header, no escapes", func(t *testing.T) {
		io, _, out, _ := newTestIOStreams()
		if err := io.PrintTable([]string{"ID", "NAMESPACING"}, rows); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != "auggie\tsuffix\nclaude-code\tprefix\n" {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("terminal without colour: a drawn table, no escapes", func(t *testing.T) {
		io, _, out, _ := newTestIOStreams("NO_COLOR=1")
		io.SetStdoutTTY(true)
		if err := io.PrintTable([]string{"ID", "NAMESPACING"}, rows); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		if !strings.Contains(got, "│ ID") || !strings.Contains(got, "claude-code") || !strings.Contains(got, "─") {
			t.Fatalf("not a table:\n%s", got)
		}
		if strings.Contains(got, "\x1b[") {
			t.Fatalf("escape codes without colour: %q", got)
		}
	})
	t.Run("terminal with colour", func(t *testing.T) {
		io, _, out, _ := newTestIOStreams()
		io.SetStdoutTTY(true)
		if err := io.PrintTable([]string{"ID", "NAMESPACING"}, rows); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "\x1b[") {
			t.Fatalf("no colour: %q", out.String())
		}
	})
}

// instanceRows are rows like instance list's, 126 columns wide as a table.
var instanceRows = [][]string{
	{"01kbq3w5x9a7c2d4e6f8g0h1j2", "fix-login", "auggie", "suffix", "agentctl", "2026-11-30T12:00:00Z", "/home/me/src/app"},
	{"01kbq3w6y0b8d3e5f7g9h1j3k4", "-", "claude-code", "prefix", "agentctl", "2026-11-30T12:01:00Z", "/home/me/src/a-much-longer-workspace-path"},
}
var instanceHeaders = []string{"ID", "NAME", "AGENT", "NAMESPACING", "SERVER", "CREATED", "WORKSPACE"}

func TestPrintTableFitsTheTerminal(t *testing.T) {
	t.Run("a narrow terminal: the widest column is cut with an ellipsis", func(t *testing.T) {
		io, _, out, _ := newTestIOStreams("NO_COLOR=1")
		io.SetStdoutTTY(true)
		io.SetTerminalWidth(50)
		rows := [][]string{{"auggie", "/home/me/src/a-much-longer-workspace-path", "suffix"}, {"codex", "/srv/app", "prefix"}}
		if err := io.PrintTable([]string{"AGENT", "WORKSPACE", "NAMESPACING"}, rows); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
			if w := ansi.StringWidth(line); w != 50 {
				t.Fatalf("a line of %d columns on a terminal of 50:\n%s", w, got)
			}
		}
		for _, want := range []string{"│ auggie ", "│ /home/me/src/a-much-lo… │", "│ NAMESPACING │", "│ /srv/app "} {
			if !strings.Contains(got, want) {
				t.Errorf("no %q in\n%s", want, got)
			}
		}
	})
	t.Run("instance list on 70 columns", func(t *testing.T) {
		io, _, out, _ := newTestIOStreams("NO_COLOR=1")
		io.SetStdoutTTY(true)
		io.SetTerminalWidth(70)
		if err := io.PrintTable(instanceHeaders, instanceRows); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
			if w := ansi.StringWidth(line); w > 70 {
				t.Fatalf("a line of %d columns on a terminal of 70:\n%s", w, got)
			}
		}
		// A cut id is still a unique prefix that commands take.
		if !strings.Contains(got, "│ 01kbq…") || !strings.Contains(got, "…") {
			t.Errorf("not cut from the end with an ellipsis:\n%s", got)
		}
	})
	t.Run("a wide terminal: the table as it is", func(t *testing.T) {
		io, _, out, _ := newTestIOStreams("NO_COLOR=1")
		io.SetStdoutTTY(true)
		io.SetTerminalWidth(200)
		if err := io.PrintTable(instanceHeaders, instanceRows); err != nil {
			t.Fatal(err)
		}
		first := strings.SplitN(out.String(), "\n", 2)[0]
		if w := ansi.StringWidth(first); w >= 200 || strings.Contains(out.String(), "…") {
			t.Errorf("a table of %d columns was stretched or cut:\n%s", w, out)
		}
	})
	t.Run("piped: tab-separated values whatever the width", func(t *testing.T) {
		io, _, out, _ := newTestIOStreams()
		io.SetTerminalWidth(70)
		if err := io.PrintTable(instanceHeaders, instanceRows); err != nil {
			t.Fatal(err)
		}
		want := strings.Join(instanceRows[0], "\t") + "\n" + strings.Join(instanceRows[1], "\t") + "\n"
		if got := out.String(); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
}

func TestFitWidths(t *testing.T) {
	for _, tc := range []struct {
		widths []int
		budget int
		want   []int
	}{
		{[]int{5, 10}, 15, nil},
		{[]int{5, 10}, 14, []int{5, 9}},
		{[]int{5, 10, 8}, 18, []int{5, 6, 7}}, // the widest first, then the widest of equals
		{[]int{3, 3}, 1, []int{1, 1}},         // never below one
	} {
		if got := fitWidths(tc.widths, tc.budget); !slices.Equal(got, tc.want) {
			t.Errorf("fitWidths(%v, %d) = %v, want %v", tc.widths, tc.budget, got, tc.want)
		}
	}
}

// TestColorWhenPiped: CLICOLOR_FORCE colours piped output too (the README
// says so), which stays tab-separated; NO_COLOR still wins.
func TestColorWhenPiped(t *testing.T) {
	fields := [][2]string{{"id", "01kbq3"}, {"agent", "auggie"}}
	for _, tc := range []struct {
		env   []string
		color bool
	}{
		{nil, false},
		{[]string{"CLICOLOR_FORCE=1"}, true},
		{[]string{"CLICOLOR_FORCE=1", "NO_COLOR=1"}, false},
		{[]string{"CLICOLOR_FORCE=0"}, false},
	} {
		io, _, out, _ := newTestIOStreams(tc.env...)
		if err := io.PrintFields(fields); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		if colored := strings.Contains(got, "\x1b["); colored != tc.color {
			t.Errorf("%v: colour %v, want %v: %q", tc.env, colored, tc.color, got)
		}
		if plain := ansi.Strip(got); plain != "id\t01kbq3\nagent\tauggie\n" {
			t.Errorf("%v: not tab-separated: %q", tc.env, plain)
		}
		// Tables stay plain tab-separated values.
		out.Reset()
		if err := io.PrintTable([]string{"ID"}, [][]string{{"01kbq3"}}); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != "01kbq3\n" {
			t.Errorf("%v: table %q", tc.env, got)
		}
	}
}
