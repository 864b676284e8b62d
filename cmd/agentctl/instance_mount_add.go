package main

import (
	"context"

	"github.com/agentctl/agentctl/cmd/internal/provision"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/spf13/cobra"
)

// InstanceMountAddOptions are the inputs of `instance mount add`.
type InstanceMountAddOptions struct {
	IO    *IOStreams
	Store storeOpener

	Instance string
	Mounts   []mount.Mount
	// PrefixMode, when given (--tool-prefix-mode or
	// AGENTCTL_TOOL_PREFIX_MODE), becomes the instance's tool prefix mode;
	// empty keeps the one it was created with.
	PrefixMode mount.PrefixMode
	Yes        bool
	Output     string
}

// NewCmdInstanceMountAdd is `agentctl instance mount add`; runF replaces
// [instanceMountAddRun] in tests.
func NewCmdInstanceMountAdd(f *Factory, runF func(context.Context, *InstanceMountAddOptions) error) *cobra.Command {
	opts := &InstanceMountAddOptions{IO: f.IOStreams, Store: f.Store}
	var mounts mountFlags
	cmd := &cobra.Command{
		Use:   "add INSTANCE [--kb NAME=DIR] [--mcp NAME=COMMAND] ...",
		Short: "Mount knowledge bases or external MCP servers into an instance",
		Long: `Mount knowledge bases or external MCP servers into an instance; the renames
this causes are listed, and need --yes off a terminal.

As at create, a relative knowledge-base folder, and a server command that is a
relative path (./ev.sh, bin/server; a bare name such as npx stays a PATH lookup),
are made absolute against the directory this command runs in, and must exist; the
servers run in the instance's workspace, so a relative path among their arguments
is a path in the workspace.`,
		Example: `  agentctl instance mount add fix-login --kb notes=./notes --yes
  agentctl instance mount add fix-login --mcp 'browser=npx -y @playwright/mcp'
  agentctl instance mount add fix-login --kb '3D docs=./3d,prefix=docs3d' --yes`,
		Args:              exactArgs(1, "an instance id, id prefix or label"),
		ValidArgsFunction: completeInstances(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Output); err != nil {
				return err
			}
			if mounts.empty() {
				return usageErrorf("nothing to add: give one or more --kb NAME=DIR or --mcp NAME=COMMAND")
			}
			var err error
			if opts.Mounts, err = mounts.mounts(nil); err != nil { // config-file mounts apply at create only
				return err
			}
			// Like the config file's mounts, its tool_prefix_mode applies at
			// create only: without the flag or the variable the instance
			// keeps its mode.
			if c := f.Config; c.given[keyToolPrefixMode] {
				if opts.PrefixMode, err = c.PrefixMode(); err != nil {
					return err
				}
			}
			opts.Instance = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return instanceMountAddRun(cmd.Context(), opts)
		},
	}
	mounts.register(cmd.Flags())
	addSettingFlag(cmd.Flags(), keyToolPrefixMode)
	_ = cmd.RegisterFlagCompletionFunc("tool-prefix-mode", cobra.FixedCompletions([]string{"mount-name", "off"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "accept the renames this change causes without asking")
	addOutputFlag(cmd, &opts.Output, opts.IO)
	return cmd
}

func instanceMountAddRun(ctx context.Context, opts *InstanceMountAddOptions) error {
	return changeMounts(ctx, opts.IO, opts.Store, opts.Instance, opts.Yes, opts.Output, func(rec *instance.Record) (*provision.MountChange, error) {
		return provision.PlanMountAdd(rec, opts.Mounts, opts.PrefixMode)
	})
}
