package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/agentctl/agentctl/instance/launch"
	"github.com/spf13/cobra"
)

// Main runs agentctl with the process's arguments and streams and returns
// the exit code. It never calls os.Exit.
func Main() int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	f := newFactory(newIOStreams(os.Stdin, os.Stdout, os.Stderr, os.Getenv), os.Getenv, os.Args[0])
	f.exitAfter = true // main exits with the code
	sigs := make(chan os.Signal, 1)
	defer signal.Stop(sigs)
	f.watchSignals = func() {
		// SIGHUP too: a closed terminal or ssh session ends a command as
		// SIGTERM does, cleanly (an endpoint closes its open questions);
		// unless started with nohup, which asks it to outlive them.
		signal.Notify(sigs, launch.SignalsToWatch(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)...)
		go func() {
			if s, ok := <-sigs; ok {
				cancel(signalError{s.(syscall.Signal)})
			}
		}()
	}
	return execute(ctx, f, os.Args[1:])
}

// quickAnnotation marks a command that reads and prints and ends at once
// (markQuick). For it agentctl does not take SIGINT and SIGTERM over:
// os/signal's machinery starts two threads and hands each signal's setup
// between them, about 0.6 ms of a 4 ms start here, and such a command has
// nothing a kill could leave half-done (opening the store may migrate it
// and its Close may checkpoint the WAL, both in SQLite's journal). A signal
// ends it as it ends any program: a shell reports 128+N, the code agentctl
// gives itself for the others; a program that waits for it sees the
// signal itself.
const quickAnnotation = "agentctl/quick"

// markQuick marks cmd as quick (see quickAnnotation) and returns it.
func markQuick(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[quickAnnotation] = "true"
	return cmd
}

// signalError is the cause of a context cancelled by a signal.
type signalError struct{ sig syscall.Signal }

func (e signalError) Error() string { return "interrupted by " + e.sig.String() }

// Run runs agentctl with the given arguments (args[0] is the program).
func Run(ctx context.Context, args []string, in io.Reader, out, errOut io.Writer, getenv func(string) string) int {
	f := newFactory(newIOStreams(in, out, errOut, getenv), getenv, args[0])
	return execute(ctx, f, args[1:])
}

// execute runs the command line args with the factory f and returns the
// exit code, having printed any error.
func execute(ctx context.Context, f *Factory, args []string) int {
	root := newCmdRoot(f, cmdLine{args: args})
	root.SetArgs(args)
	root.SetIn(f.IOStreams.In)
	root.SetOut(f.IOStreams.Out)
	root.SetErr(f.IOStreams.ErrOut)
	err := root.ExecuteContext(ctx)
	code := exitCode(ctx, err)
	if code > 128 {
		return code // interrupted: the user knows
	}
	if err != nil {
		var silent *exitError
		if !(errors.As(err, &silent) && silent.err == errSilent) {
			fmt.Fprintln(f.IOStreams.ErrOut, "agentctl: "+err.Error())
		}
		var ue *usageError
		if errors.As(err, &ue) && !ue.hinted {
			fmt.Fprintln(f.IOStreams.ErrOut, "Run 'agentctl --help' or add --help to the command for usage.")
		}
	}
	return code
}

// errSilent marks an exit whose message was already printed.
var errSilent = errors.New("")

// NewCmdRoot is the agentctl command with every subcommand.
func NewCmdRoot(f *Factory) *cobra.Command { return newCmdRoot(f, everyCommand) }

// newCmdRoot is the agentctl command with the subcommands line can reach.
func newCmdRoot(f *Factory, line cmdLine) *cobra.Command {
	root := &cobra.Command{
		Use:   "agentctl",
		Short: "Provision coding-agent instances and serve each one an MCP endpoint with the right tool names",
		Long: `agentctl provisions coding-agent instances (Auggie, Claude Code, Codex, Gemini CLI, ...)
and serves each one an in-process MCP endpoint whose tool names are right for the
client that connects: a client that appends or prepends the server name gets names
that its model sees exactly once.

  agentctl agents list                             the clients agentctl knows
  agentctl instance create --agent auggie -o json  provision an instance
  agentctl mcp serve --instance ID                 the endpoint (the client starts it)

Configuration precedence: flags > AGENTCTL_* environment > config file
($XDG_CONFIG_HOME/agentctl/config.toml, or --config) > defaults.`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		Version:           strings.TrimPrefix(thisVersion().String(), "agentctl "),
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: false},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			// A signal cancels the command's context, so that it stops
			// what it started and exits 128+N (see quickAnnotation).
			if f.watchSignals != nil && cmd.Annotations[quickAnnotation] == "" {
				f.watchSignals()
			}
			if needsNoConfig(cmd) {
				return nil
			}
			return f.Config.load(cmd.Flags())
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{msg: err.Error()} })
	// --version prints what `agentctl version` prints.
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	pf := root.PersistentFlags()
	addSettingFlag(pf, keyConfig)
	addSettingFlag(pf, keyStateDir)
	addSettingFlag(pf, keyStore)
	addSettingFlag(pf, keyAgentsDir)

	line.add(root,
		sub{[]string{"agents"}, func(l cmdLine) *cobra.Command { return NewCmdAgents(f, l) }},
		sub{[]string{"instance", "instances", "i"}, func(l cmdLine) *cobra.Command { return NewCmdInstance(f, l) }},
		sub{[]string{"kb"}, func(l cmdLine) *cobra.Command { return NewCmdKB(f, l) }},
		sub{[]string{"mcp"}, func(l cmdLine) *cobra.Command { return NewCmdMCP(f, l) }},
		sub{[]string{"notify"}, func(l cmdLine) *cobra.Command { return NewCmdNotify(f, l) }},
		sub{[]string{"serve"}, func(cmdLine) *cobra.Command { return NewCmdServe(f, nil) }},
		sub{[]string{"store"}, func(l cmdLine) *cobra.Command { return NewCmdStore(f, l) }},
		sub{[]string{"tools"}, func(l cmdLine) *cobra.Command { return NewCmdTools(f, l) }},
		sub{[]string{"ui"}, func(cmdLine) *cobra.Command { return NewCmdUI(f, nil) }},
		sub{[]string{"version"}, func(cmdLine) *cobra.Command { return NewCmdVersion(f, nil) }},
		sub{[]string{"gc"}, func(cmdLine) *cobra.Command { return NewCmdGC(f, nil) }},
		sub{[]string{"exit-codes"}, func(cmdLine) *cobra.Command { return newExitCodesTopic() }},
	)
	root.SetHelpCommand(newHelpCmd(root))
	makeGroups(root)
	return root
}

// newHelpCmd is `agentctl help [command...]`: cobra's own prints the root's
// help and exits 0 for a topic it does not know, which a script cannot tell
// from success; this one refuses it as a usage error (exit 2) with the
// did-you-mean of an unknown subcommand.
func newHelpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help about any command: agentctl help instance create is agentctl instance create --help.",
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			cmd, _, err := root.Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, c := range cmd.Commands() {
				if c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand() {
					out = append(out, c.Name())
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(_ *cobra.Command, args []string) error {
			cmd := root
			for _, a := range args {
				next, _, err := cmd.Find([]string{a})
				if err != nil || next == cmd {
					return groupRunE(cmd, []string{a})
				}
				cmd = next
			}
			return cmd.Help()
		},
	}
}

// makeGroups makes every command that only groups subcommands (the root
// included) print its help when called alone and refuse an unknown
// subcommand.
func makeGroups(cmd *cobra.Command) {
	if cmd.HasSubCommands() && cmd.RunE == nil && cmd.Run == nil {
		cmd.Args, cmd.RunE = cobra.ArbitraryArgs, groupRunE
	}
	for _, c := range cmd.Commands() {
		makeGroups(c)
	}
}

func newExitCodesTopic() *cobra.Command {
	return &cobra.Command{Use: "exit-codes", Short: "What agentctl's exit codes mean", Long: exitCodesHelp}
}

// groupRunE makes a command that only groups subcommands print its help when
// called alone and refuse an unknown subcommand with a usage error.
func groupRunE(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's own default, which SuggestionsFor does not apply
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %q?)", strings.Join(s, `" or "`))
	}
	msg += fmt.Sprintf("; run '%s --help'", cmd.CommandPath())
	return &usageError{msg: msg, hinted: true}
}

// needsNoConfig reports whether cmd reads no setting: help and its topics,
// completion scripts and version work with a broken config file (a
// completion sourced in a shell's rc file failed in every new shell).
func needsNoConfig(cmd *cobra.Command) bool {
	path := strings.Fields(cmd.CommandPath())
	return len(path) > 1 && slices.Contains([]string{"help", "completion", "version"}, path[1])
}
