package main

import (
	"context"

	"github.com/agentctl/agentctl/instance"
	"github.com/spf13/cobra"
)

// NewCmdInstanceDisconnect is `agentctl instance disconnect`; runF replaces
// its run in tests.
func NewCmdInstanceDisconnect(f *Factory, runF func(context.Context, *InstanceConnectOptions) error) *cobra.Command {
	opts := &InstanceConnectOptions{IO: f.IOStreams, Store: f.Store, Getenv: f.Config.getenv, Definition: f.Definition, Executable: f.Executable}
	cmd := &cobra.Command{
		Use:   "disconnect INSTANCE [--scope workspace|user]",
		Short: "Remove the instance's MCP server from the file its client reads",
		Long: `Disconnect removes the entry 'agentctl instance connect' wrote (the instance's
server name S) from the file its client reads, changing no other byte of it; when
it was the last server an empty map is left, not a deleted file (a Continue block
file, which holds only it, is removed). An absent entry or file is no error.

Only an entry that is still what agentctl wrote (what connect wrote there, or
what the instance would write now) is removed. An entry named S that was changed
since (by hand), or that does not start this instance, is left as it is and
refused (exit code 4) unless --force, which removes it anyway.

The file is edited as connect edits it: under an advisory lock, replaced
atomically only if no other program changed it meanwhile (else the edit is made
again on its version). Before each change the file as it was is kept as
FILE.agentctl-bak.1, older copies rotated to FILE.agentctl-bak.2 ... .5, and
FILE.agentctl-bak keeps it as it was before agentctl first changed it. The
instance's bearer token (an HTTP instance's) is taken out of those backups, even
when the entry was gone already: they stay in the workspace, where 'git add .'
would take them.

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
	addConnectFlags(cmd, opts, "remove the entry named S even if it was changed since connect wrote it, or starts something else (the file is backed up first)")
	return cmd
}
