package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Main runs agentctl with the process's arguments and streams and returns
// the exit code. It never calls os.Exit.
func Main() int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		if s, ok := <-sigs; ok {
			cancel(signalError{s.(syscall.Signal)})
		}
	}()
	return Run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr, os.Getenv)
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
	root := NewCmdRoot(f)
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
		if errors.As(err, &ue) {
			fmt.Fprintln(f.IOStreams.ErrOut, "Run 'agentctl --help' or add --help to the command for usage.")
		}
	}
	return code
}

// errSilent marks an exit whose message was already printed.
var errSilent = errors.New("")

// NewCmdRoot is the agentctl command with every subcommand.
func NewCmdRoot(f *Factory) *cobra.Command {
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
		Version:           version,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: false},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return f.Config.load(cmd.Flags())
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{msg: err.Error()} })
	pf := root.PersistentFlags()
	addSettingFlag(pf, keyConfig)
	addSettingFlag(pf, keyStateDir)
	addSettingFlag(pf, keyAgentsDir)

	root.AddCommand(NewCmdAgents(f), NewCmdInstance(f), NewCmdMCP(f), NewCmdVersion(f, nil), newExitCodesTopic())
	makeGroups(root)
	return root
}

// makeGroups makes the root and the commands that only group subcommands
// print their help when called alone and refuse an unknown subcommand.
func makeGroups(root *cobra.Command) {
	root.Args, root.RunE = cobra.ArbitraryArgs, groupRunE
	for _, c := range root.Commands() {
		if c.HasSubCommands() && c.RunE == nil {
			c.Args, c.RunE = cobra.ArbitraryArgs, groupRunE
		}
	}
}

func newExitCodesTopic() *cobra.Command {
	return &cobra.Command{Use: "exit-codes", Short: "What agentctl's exit codes mean", Long: exitCodesHelp}
}

// groupRunE makes a command that only groups subcommands print its help when
// called alone and refuse an unknown subcommand with a usage error.
func groupRunE(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("unknown command %q for %q; see '%s --help'", args[0], cmd.CommandPath(), cmd.CommandPath())
	}
	return cmd.Help()
}
