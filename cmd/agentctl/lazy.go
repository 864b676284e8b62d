package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// cmdLine is the rest of a command line, for building only the commands it
// can reach: building the whole tree (every command's flags) is most of a
// short command's own time. With all set, every command is built (help,
// completion, tests).
type cmdLine struct {
	args []string
	all  bool
}

// everyCommand builds the whole tree.
var everyCommand = cmdLine{all: true}

// sub is a subcommand, built only when the command line can reach it.
type sub struct {
	names []string                     // its name and aliases, as its Use and Aliases say
	build func(cmdLine) *cobra.Command // given the words after its name
}

// add adds to parent the subcommands the line can reach: the one its next
// word names, else (no such word, a word no subcommand has, or a flag this
// cannot read past) all of them, as help and cobra's suggestions need.
func (l cmdLine) add(parent *cobra.Command, subs ...sub) {
	name, rest, ok := l.next()
	if ok && !l.all {
		for _, s := range subs {
			if slices.Contains(s.names, name) {
				parent.AddCommand(s.build(cmdLine{args: rest}))
				return
			}
		}
	}
	for _, s := range subs {
		parent.AddCommand(s.build(everyCommand))
	}
}

// valueFlags are the flags that can come before a subcommand's name and take
// a value: the root's persistent ones.
var valueFlags = []string{"--" + settingFor(keyConfig).Flag, "--" + settingFor(keyStateDir).Flag, "--" + settingFor(keyStore).Flag, "--" + settingFor(keyAgentsDir).Flag}

// next is the line's next word that is not a flag, and the words after it;
// ok is false when there is none, or a word that may change what the line
// means (help, completion, an unknown flag, --).
func (l cmdLine) next() (name string, rest []string, ok bool) {
	for i := 0; i < len(l.args); i++ {
		a := l.args[i]
		switch {
		case a == "--":
			return "", nil, false
		case slices.Contains(valueFlags, a):
			i++ // its value
		case strings.HasPrefix(a, "-"):
			flag, _, _ := strings.Cut(a, "=")
			if !slices.Contains(valueFlags, flag) {
				return "", nil, false
			}
		case a == "help" || a == "completion" || strings.HasPrefix(a, cobra.ShellCompRequestCmd):
			return "", nil, false
		default:
			return a, l.args[i+1:], true
		}
	}
	return "", nil, false
}
