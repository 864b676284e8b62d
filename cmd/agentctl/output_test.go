package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestJQFiltersJSON: --jq runs a jq expression (gojq) on the JSON a
// command prints: strings come out raw, other values as indented JSON;
// without -o it implies -o json.
func TestJQFiltersJSON(t *testing.T) {
	t.Setenv("JQ_TEST_AGENT", "auggie")
	f := newTestFactory(t, "NO_COLOR=1")
	a := f.createNamed(t, "auggie", "a")
	b := f.createNamed(t, "claude-code", "")
	st, err := f.Store(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.RecordProgress(context.Background(), a, "report_progress", "blocked", "need a decision", nil)
	if err == nil {
		_, err = st.RecordProgress(context.Background(), a, "report_progress", "running", `quotes " and <tags>`, nil)
	}
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	f.terminal(80) // --jq prints the same on a terminal
	for _, tc := range []struct {
		cmd  func() *cobra.Command
		args []string
		want string
	}{
		{func() *cobra.Command { return NewCmdInstanceList(f.Factory, nil) }, []string{"--jq", ".[].id"}, a + "\n" + b + "\n"},
		{func() *cobra.Command { return NewCmdInstanceList(f.Factory, nil) }, []string{"-o", "json", "--jq", "map(.open_questions) | add"}, "0\n"},
		{func() *cobra.Command { return NewCmdInstanceList(f.Factory, nil) }, []string{"--jq", ".[0] | {name, status}"},
			"{\n  \"name\": \"a\",\n  \"status\": \"running\"\n}\n"},
		{func() *cobra.Command { return NewCmdInstanceShow(f.Factory, nil) }, []string{"a", "--jq", `"\(.status) \(.open_questions) \(.last_run)"`}, "running 0 null\n"},
		{func() *cobra.Command { return NewCmdInstanceEvents(f.Factory, nil) }, []string{"a", "--jq", ".[].message"}, "need a decision\nquotes \" and <tags>\n"},
		{func() *cobra.Command { return NewCmdInstanceEvents(f.Factory, nil) }, []string{"a", "-o", "jsonl", "--jq", ".seq"}, "1\n2\n"},
		{func() *cobra.Command { return NewCmdAgentsList(f.Factory, nil) }, []string{"--jq", `.[] | select(.id == "codex") | .template`}, "mcp__{server}/{tool}\n"},
		{func() *cobra.Command { return NewCmdAgentsShow(f.Factory, nil) }, []string{"auggie", "--jq", ".capabilities.tool_names.namespacing"}, "suffix\n"},
		{func() *cobra.Command { return NewCmdToolsList(f.Factory, nil) }, []string{"--agent", "auggie", "--jq", ".[0].tools[0].transport"}, "ask_user_question\n"},
		{func() *cobra.Command { return NewCmdInstanceQuestions(f.Factory, nil) }, []string{"--jq", "length"}, "0\n"},
		{func() *cobra.Command { return NewCmdInstanceList(f.Factory, nil) }, []string{"--jq", "empty"}, ""},
		// $ENV and env are the environment, as in jq.
		{func() *cobra.Command { return NewCmdInstanceList(f.Factory, nil) }, []string{"--jq", `[.[] | select(.agent == $ENV.JQ_TEST_AGENT)] | length`}, "1\n"},
		{func() *cobra.Command { return NewCmdInstanceList(f.Factory, nil) }, []string{"--jq", `env.JQ_TEST_AGENT`}, "auggie\n"},
		// An instance's findings are [] when there are none, never null.
		{func() *cobra.Command { return NewCmdToolsList(f.Factory, nil) }, []string{"--instance", "a", "--jq", ".[0].findings"}, "[]\n"},
	} {
		if out := f.mustRun(t, tc.cmd(), tc.args...); out != tc.want {
			t.Errorf("%s %q: %q, want %q", tc.cmd().Name(), tc.args, out, tc.want)
		}
	}
}

// TestJQErrors: an expression that does not compile is a usage error (exit
// 2) that says where, before anything runs; one that fails on the data is
// an error (exit 1) that says why; --jq with a format that is not JSON is a
// usage error.
func TestJQErrors(t *testing.T) {
	t.Parallel()
	f := newTestFactory(t, "NO_COLOR=1")
	f.createNamed(t, "auggie", "a")
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--jq", ".[] | {id"}, ExitUsage, `invalid --jq expression ".[] | {id": unexpected EOF after ".[] | {id"`},
		{[]string{"--jq", "nosuchfunc(1)"}, ExitUsage, `invalid --jq expression "nosuchfunc(1)": function not defined: nosuchfunc/1`},
		{[]string{"--jq", ""}, ExitUsage, "--jq needs an expression"},
		{[]string{"--jq", ".id"}, ExitError, "--jq: expected an object but got: array"},
		{[]string{"-o", "table", "--jq", ".[]"}, ExitUsage, "--jq filters JSON output: use it with -o json, or leave -o out"},
		{[]string{"-o", "wide", "--jq", ".[]"}, ExitUsage, "--jq filters JSON output"},
		{[]string{"-o", "yaml"}, ExitUsage, `invalid output format "yaml": use -o table, -o json or -o wide`},
	} {
		_, code, err := f.run(t, NewCmdInstanceList(f.Factory, nil), tc.args...)
		if code != tc.code || !strings.Contains(fmt.Sprint(err), tc.msg) {
			t.Errorf("instance list %q: exit %d %v, want exit %d and %q", tc.args, code, err, tc.code, tc.msg)
		}
	}
}

// TestEveryJSONOutputTakesJQ: every command with -o takes --jq, and -o
// json with it prints what the expression makes of the JSON.
func TestEveryJSONOutputTakesJQ(t *testing.T) {
	f := newTestFactory(t)
	var walk func(*cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("output") != nil {
			n++
			if fl := c.Flags().Lookup("jq"); fl == nil {
				t.Errorf("%s has -o but no --jq", c.CommandPath())
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewCmdRoot(f.Factory))
	if n < 20 {
		t.Errorf("only %d commands with -o", n)
	}
}

// TestInstanceEventsJSON: -o json is one JSON array (also with no
// events); -o jsonl one object a line; --follow takes jsonl, not json.
func TestInstanceEventsJSON(t *testing.T) {
	t.Parallel()
	f := newTestFactory(t, "NO_COLOR=1")
	a := f.createNamed(t, "auggie", "a")
	if out := f.mustRun(t, NewCmdInstanceEvents(f.Factory, nil), "a", "-o", "json"); out != "[]\n" {
		t.Errorf("no events, -o json: %q, want []", out)
	}
	if out := f.mustRun(t, NewCmdInstanceEvents(f.Factory, nil), "a", "-o", "jsonl"); out != "" {
		t.Errorf("no events, -o jsonl: %q, want nothing", out)
	}
	st, err := f.Store(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"one", "two"} {
		if _, err := st.RecordProgress(context.Background(), a, "report_progress", "running", m, nil); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	out := f.mustRun(t, NewCmdInstanceEvents(f.Factory, nil), "a", "-o", "json")
	var arr []struct {
		Seq     int64
		Message string
	}
	if err := json.Unmarshal([]byte(out), &arr); err != nil || len(arr) != 2 || arr[1].Message != "two" || !strings.HasPrefix(out, "[\n  {") {
		t.Errorf("-o json: %v %+v, want an array of 2:\n%s", err, arr, out)
	}
	out = f.mustRun(t, NewCmdInstanceEvents(f.Factory, nil), "a", "-o", "jsonl")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for i, l := range lines {
		var e struct{ Seq int64 }
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.Seq != int64(i+1) {
			t.Errorf("-o jsonl line %d: %q (%v)", i, l, err)
		}
	}
	if len(lines) != 2 {
		t.Errorf("-o jsonl: %d lines, want 2:\n%s", len(lines), out)
	}
	_, code, err := f.run(t, NewCmdInstanceEvents(f.Factory, nil), "a", "--follow", "-o", "json")
	if code != ExitUsage || !strings.Contains(fmt.Sprint(err), "use -o jsonl (one JSON object a line) with --follow") {
		t.Errorf("--follow -o json: exit %d %v, want a usage error naming -o jsonl", code, err)
	}
}
