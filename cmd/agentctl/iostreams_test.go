package main

import (
	"bytes"
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
