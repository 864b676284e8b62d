package main

import (
	"context"

	"github.com/agentctl/agentctl/instance"
	"github.com/spf13/cobra"
)

// NewCmdInstanceDisconnect is `agentctl instance disconnect`; runF replaces
// its run in tests.
func NewCmdInstanceDisconnect(f *Factory, runF func(context.Context, *InstanceConnectOptions) error) *cobra.Command {
	opts := &InstanceConnectOptions{IO: f.IOStreams, Store: f.Store, Getenv: f.Config.getenv}
	cmd := &cobra.Command{
		Use:   "disconnect INSTANCE [--scope workspace|user]",
		Short: "Remove the instance's MCP server from the file its client reads",
		Long: `Disconnect removes exactly the entry 'agentctl instance connect' wrote (the
instance's server name S) from the file its client reads, keeping everything else
in it; when it was the last server an empty map is left, not a deleted file (a
Continue block file, which holds only it, is removed). An entry named S that does
not start this instance belongs to someone else and is refused unless --force.
An absent entry or file is no error.

` + connectFilesHelp,
		Example: `  agentctl instance disconnect fix-login
  agentctl instance disconnect fix-login --scope user -o json`,
		Args:              exactArgs(1, "an instance id, id prefix or label"),
		ValidArgsFunction: completeInstances(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkConnectFlags(opts); err != nil {
				return err
			}
			opts.Instance = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return instanceConnectRun(cmd.Context(), opts, instance.Disconnect)
		},
	}
	addConnectFlags(cmd, opts, "remove an entry named S that starts something else")
	return cmd
}
