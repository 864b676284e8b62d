package main

import (
	"context"

	"github.com/agentctl/agentctl/cmd/internal/provision"
	"github.com/agentctl/agentctl/instance"
	"github.com/spf13/cobra"
)

// InstanceMountRemoveOptions are the inputs of `instance mount remove`.
type InstanceMountRemoveOptions struct {
	IO    *IOStreams
	Store storeOpener

	Instance string
	Mount    string
	Yes      bool
	Output   string
}

// NewCmdInstanceMountRemove is `agentctl instance mount remove`; runF
// replaces [instanceMountRemoveRun] in tests.
func NewCmdInstanceMountRemove(f *Factory, runF func(context.Context, *InstanceMountRemoveOptions) error) *cobra.Command {
	opts := &InstanceMountRemoveOptions{IO: f.IOStreams, Store: f.Store}
	cmd := &cobra.Command{
		Use:               "remove INSTANCE NAME",
		Aliases:           []string{"rm"},
		Short:             "Unmount a knowledge base or an external MCP server from an instance",
		Example:           `  agentctl instance mount remove fix-login notes --yes`,
		Args:              exactArgs(2, "an instance and a mount name"),
		ValidArgsFunction: completeMounts(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Output); err != nil {
				return err
			}
			opts.Instance, opts.Mount = args[0], args[1]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return instanceMountRemoveRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "accept the renames this change causes without asking")
	addOutputFlag(cmd, &opts.Output, opts.IO)
	return cmd
}

func instanceMountRemoveRun(ctx context.Context, opts *InstanceMountRemoveOptions) error {
	return changeMounts(ctx, opts.IO, opts.Store, opts.Instance, opts.Yes, opts.Output, func(rec *instance.Record) (*provision.MountChange, error) {
		return provision.PlanMountRemove(rec, opts.Mount)
	})
}
