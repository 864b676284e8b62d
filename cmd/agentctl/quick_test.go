package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
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

// TestPackageInitIsLight: agentctl's own packages do next to nothing at
// package initialisation, which every command pays for, `version` too:
// catalogs, schemas, colour profiles, terminal detection and compiled
// expressions are made when a command needs them. The bound is on what
// GODEBUG=inittrace=1 says each allocates (deterministic, unlike its
// clock), well above today's (the largest, instance's tables: 15 KiB in 50
// allocations) and below what parsing a catalog, compiling a schema or a
// regular expression allocates.
func TestPackageInitIsLight(t *testing.T) {
	cmd := exec.Command(realBinary(t), "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("version: %v\n%s", err, stderr.String())
	}
	// init PKG @T ms, C ms clock, B bytes, N allocs
	re := regexp.MustCompile(`(?m)^init (github\.com/agentctl/agentctl\S*) @\S+ ms, \S+ ms clock, (\d+) bytes, (\d+) allocs$`)
	seen := 0
	for _, m := range re.FindAllStringSubmatch(stderr.String(), -1) {
		seen++
		bytes, _ := strconv.Atoi(m[2])
		allocs, _ := strconv.Atoi(m[3])
		// A regular expression compiled at init is about 100 allocations.
		if bytes > 48<<10 || allocs > 80 {
			t.Errorf("package %s allocates %d bytes (%d allocations) at init: make what it builds when a command needs it (sync.OnceValue)", m[1], bytes, allocs)
		}
	}
	if seen == 0 {
		t.Fatalf("no init lines for agentctl's packages in GODEBUG=inittrace=1's output:\n%s", stderr.String())
	}
}
