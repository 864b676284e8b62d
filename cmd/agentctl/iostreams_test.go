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

// tableLines is the lines of a drawn table, each checked to be at most
// width columns wide.
func tableLines(t *testing.T, out string, width int) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for _, line := range lines {
		if w := ansi.StringWidth(line); w > width {
			t.Fatalf("a line of %d columns on a terminal of %d:\n%s", w, width, out)
		}
	}
	return lines
}

// columnText is the text of column col of a drawn table, its lines
// joined: a cell as a person reads it, wrapped or not.
func columnText(out string, col int) string {
	var b strings.Builder
	for _, line := range strings.Split(out, "\n") {
		cells := strings.Split(line, "│")
		if len(cells) > col+1 {
			b.WriteString(strings.TrimSpace(cells[col+1]))
		}
	}
	return b.String()
}

func TestPrintTableFitsTheTerminal(t *testing.T) {
	t.Run("a narrow terminal: the widest column wraps, nothing is cut", func(t *testing.T) {
		io, _, out, _ := newTestIOStreams("NO_COLOR=1")
		io.SetStdoutTTY(true)
		io.SetTerminalWidth(50)
		rows := [][]string{{"auggie", "/home/me/src/a-much-longer-workspace-path", "suffix"}, {"codex", "/srv/app", "prefix"}}
		if err := io.PrintTable([]string{"AGENT", "WORKSPACE", "NAMESPACING"}, rows); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		tableLines(t, got, 50)
		if strings.Contains(got, "…") {
			t.Errorf("a cell was cut:\n%s", got)
		}
		if columnText(got, 1) != "WORKSPACE/home/me/src/a-much-longer-workspace-path/srv/app" || !strings.Contains(got, "│ NAMESPACING │") {
			t.Errorf("not every cell whole:\n%s", got)
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
		if w := ansi.StringWidth(first); w >= 200 || strings.Count(out.String(), "\n") != 6 {
			t.Errorf("a table of %d columns was stretched or wrapped:\n%s", w, out)
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

// TestDrawTableHidesColumns: on a terminal too narrow for every column,
// the optional ones are left out, the highest hide first, and ids are
// never cut nor wrapped; -o wide (wide) draws them all, whole.
func TestDrawTableHidesColumns(t *testing.T) {
	cols := []tableColumn{
		{header: "ID"}, {header: "NAME"}, {header: "AGENT"}, {header: "NAMESPACING", hide: 3},
		{header: "SERVER", hide: 2}, {header: "CREATED", hide: 1}, {header: "WORKSPACE", hide: 4, wrap: true},
	}
	for _, tc := range []struct {
		width      int
		wide       bool
		want, gone []string
	}{
		{80, false, []string{"ID", "NAME", "AGENT", "CREATED"}, []string{"NAMESPACING", "SERVER", "WORKSPACE"}},
		{70, false, []string{"ID", "NAME", "AGENT"}, []string{"CREATED", "NAMESPACING", "SERVER", "WORKSPACE"}},
		{110, false, []string{"ID", "CREATED", "SERVER", "NAMESPACING"}, []string{"WORKSPACE"}},
		{80, true, []string{"ID", "NAMESPACING", "SERVER", "CREATED", "WORKSPACE"}, nil},
	} {
		io, _, out, _ := newTestIOStreams("NO_COLOR=1")
		io.SetStdoutTTY(true)
		io.SetTerminalWidth(tc.width)
		if err := io.DrawTable(cols, instanceRows, tc.wide); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		if !tc.wide {
			tableLines(t, got, tc.width)
		}
		header := strings.Split(got, "\n")[1]
		for _, h := range tc.want {
			if !strings.Contains(header, "│ "+h+" ") {
				t.Errorf("width %d wide %v: no %s column:\n%s", tc.width, tc.wide, h, got)
			}
		}
		for _, h := range tc.gone {
			if strings.Contains(header, h) {
				t.Errorf("width %d wide %v: a %s column:\n%s", tc.width, tc.wide, h, got)
			}
		}
		if !strings.Contains(got, "│ 01kbq3w5x9a7c2d4e6f8g0h1j2 │") || strings.Contains(got, "…") {
			t.Errorf("width %d wide %v: an id cut or wrapped:\n%s", tc.width, tc.wide, got)
		}
	}
}

func TestLayoutColumns(t *testing.T) {
	cols := []tableColumn{{header: "A"}, {header: "B", hide: 1}, {header: "C", wrap: true}, {header: "D", hide: 2, wrap: true}}
	natural := []int{10, 10, 30, 10} // 60, and 13 of borders: 73
	for _, tc := range []struct {
		width         int
		wide          bool
		shown, widths []int
	}{
		{73, false, []int{0, 1, 2, 3}, []int{10, 10, 30, 10}},
		{72, false, []int{0, 1, 2}, []int{10, 10, 30}},       // D (hide 2) goes first
		{60, false, []int{0, 1, 2}, []int{10, 10, 30}},       // 60 = 50 + 10: B fits still
		{59, false, []int{0, 2}, []int{10, 30}},              // then B
		{40, false, []int{0, 2}, []int{10, 23}},              // then C wraps
		{20, false, []int{0, 2}, []int{10, minWrapWidth}},    // never below minWrapWidth: too wide
		{20, true, []int{0, 1, 2, 3}, []int{10, 10, 30, 10}}, // wide: everything
	} {
		shown, widths := layoutColumns(cols, natural, tc.width, tc.wide)
		if !slices.Equal(shown, tc.shown) || !slices.Equal(widths, tc.widths) {
			t.Errorf("width %d wide %v: columns %v widths %v, want %v %v", tc.width, tc.wide, shown, widths, tc.shown, tc.widths)
		}
	}
}

// TestTerminalWidthFromColumns: $COLUMNS, when a number, is the width,
// before what the terminal says; else the terminal's, else 80.
func TestTerminalWidthFromColumns(t *testing.T) {
	for _, tc := range []struct {
		columns  string
		terminal int
		want     int
	}{
		{"", 0, 80}, {"", 132, 132}, {"100", 132, 100}, {"100", 0, 100}, {"wide", 132, 132}, {"-3", 0, 80},
	} {
		io, _, _, _ := newTestIOStreams("COLUMNS=" + tc.columns)
		if tc.terminal > 0 {
			io.SetTerminalWidth(tc.terminal)
		}
		if got := io.TerminalWidth(); got != tc.want {
			t.Errorf("COLUMNS=%q terminal %d: width %d, want %d", tc.columns, tc.terminal, got, tc.want)
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
