package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestLazyTreeReachesEveryCommand: for every command of the whole tree, by
// its name and by each alias, with root flags before it, the tree built for
// that command line finds the same command, and builds no sibling on the way
// (a sibling built means the line fell back to building everything: a name
// or alias missing from its sub entry).
func TestLazyTreeReachesEveryCommand(t *testing.T) {
	f := newTestFactory(t).Factory
	full := NewCmdRoot(f)
	var walk func(c *cobra.Command, path []string)
	n := 0
	walk = func(c *cobra.Command, path []string) {
		for _, child := range c.Commands() {
			for _, name := range append([]string{child.Name()}, child.Aliases...) {
				p := append(slices.Clone(path), name)
				for _, line := range [][]string{p, append([]string{"--state-dir", "/s", "--config=/c"}, p...)} {
					root := newCmdRoot(f, cmdLine{args: append(slices.Clone(line), "--help")})
					got, _, err := root.Find(p)
					if err != nil || got.CommandPath() != child.CommandPath() {
						t.Fatalf("%q: found %v (%v), want %s", line, got, err, child.CommandPath())
					}
					for c := got; c.Parent() != nil; c = c.Parent() {
						if k := len(c.Parent().Commands()); k != 1 {
							t.Errorf("%q: %s was built with %d subcommands, want only %s", line, c.Parent().CommandPath(), k, c.Name())
						}
					}
				}
			}
			n++
			walk(child, append(slices.Clone(path), child.Name()))
		}
	}
	walk(full, nil)
	if n < 30 {
		t.Fatalf("walked %d commands; the tree has more", n)
	}
}

// TestLazyTreeBuildsAllWhenItMust: help, completion, a group alone, an
// unknown word and an unknown flag before the command's name build every
// command, so that help lists them all and suggestions still work.
func TestLazyTreeBuildsAllWhenItMust(t *testing.T) {
	f := newTestFactory(t).Factory
	count := func(c *cobra.Command) int {
		n := 0
		var walk func(*cobra.Command)
		walk = func(c *cobra.Command) {
			n++
			for _, s := range c.Commands() {
				walk(s)
			}
		}
		walk(c)
		return n
	}
	all := count(NewCmdRoot(f))
	for _, line := range []string{"", "help instance run", "__complete instance r", "completion bash", "instnace list", "--bogus instance list", "-- instance list"} {
		if got := count(newCmdRoot(f, cmdLine{args: strings.Fields(line)})); got != all {
			t.Errorf("%q built %d commands, want all %d", line, got, all)
		}
	}
	inst := newCmdRoot(f, cmdLine{args: []string{"instance"}})
	if g, _, _ := inst.Find([]string{"instance"}); g == nil || len(g.Commands()) < 10 {
		t.Errorf("`agentctl instance` alone should build every instance subcommand for its help")
	}
	if got := count(newCmdRoot(f, cmdLine{args: []string{"version"}})); got != 2 {
		t.Errorf("`agentctl version` built %d commands, want the root and version", got)
	}
}
