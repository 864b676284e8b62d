package main

import (
	"context"
	"slices"
	"testing"

	"github.com/spf13/cobra"
)

// TestQuickCommands pins the commands for which agentctl leaves SIGINT and
// SIGTERM to their default (see quickAnnotation): only ones that read,
// print and end. Everything that waits, follows, serves, starts a process
// or writes must keep its signals, to stop what it started and exit 128+N.
func TestQuickCommands(t *testing.T) {
	var quick []string
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Annotations[quickAnnotation] != "" {
			quick = append(quick, c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewCmdRoot(newUnloadedTestFactory(t).Factory))
	slices.Sort(quick)
	want := []string{"agentctl agents list", "agentctl agents show", "agentctl instance list", "agentctl instance show", "agentctl version"}
	if !slices.Equal(quick, want) {
		t.Fatalf("quick commands: %q, want %q", quick, want)
	}
}

// TestSignalsWatchedBeforeACommand: the root starts watching signals
// (Factory.watchSignals) before a command that is not quick runs, once,
// and not before a quick one.
func TestSignalsWatchedBeforeACommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"version"}, 0},
		{[]string{"agents", "list"}, 0},
		{[]string{"instance", "list"}, 0},
		{[]string{"instance", "events", "nosuch"}, 1}, // fails, but after the pre-run
		{[]string{"kb", "search", t.TempDir(), "q"}, 1},
	} {
		f := newUnloadedTestFactory(t)
		n := 0
		f.watchSignals = func() { n++ }
		execute(context.Background(), f.Factory, c.args)
		if n != c.want {
			t.Errorf("%q: signals watched %d times, want %d", c.args, n, c.want)
		}
	}
}
