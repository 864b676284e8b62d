package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// walk calls fn for cmd and every command under it.
func walk(cmd *cobra.Command, fn func(*cobra.Command)) {
	fn(cmd)
	for _, c := range cmd.Commands() {
		walk(c, fn)
	}
}

// TestFlagValueNames: pflag takes a back-quoted word of a flag's usage as
// the name of its value in help (`--agent agentctl agents list`); no flag's
// value name may be a command line or anything but one word.
func TestFlagValueNames(t *testing.T) {
	t.Parallel()
	f := newTestFactory(t)
	walk(NewCmdRoot(f.Factory), func(cmd *cobra.Command) {
		check := func(fl *pflag.Flag) {
			name, _ := pflag.UnquoteUsage(fl)
			if strings.ContainsAny(name, " \t") || strings.HasPrefix(name, "agentctl") {
				t.Errorf("%s --%s: its value is called %q in help; quote with '...' in the usage, not backquotes", cmd.CommandPath(), fl.Name, name)
			}
		}
		cmd.LocalFlags().VisitAll(check)
		cmd.PersistentFlags().VisitAll(check)
	})
}
