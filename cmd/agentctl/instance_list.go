package main

import (
	"context"
	"errors"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/spf13/cobra"
)

// InstanceListOptions are the inputs of `instance list`.
type InstanceListOptions struct {
	IO    *IOStreams
	Store storeOpener

	Output string
}

// NewCmdInstanceList is `agentctl instance list`; runF replaces
// [instanceListRun] in tests.
func NewCmdInstanceList(f *Factory, runF func(context.Context, *InstanceListOptions) error) *cobra.Command {
	opts := &InstanceListOptions{IO: f.IOStreams, Store: f.Store}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List instances, oldest first",
		Example: `  agentctl instance list
  agentctl instance list -o json | jq -r '.[].id'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(opts.Output); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return instanceListRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	return cmd
}

func instanceListRun(ctx context.Context, opts *InstanceListOptions) error {
	recs := []*instance.Record{}
	var broken []*instance.CorruptRecordError
	err := withStore(ctx, opts.Store, func(st *instance.Store) error {
		var err error
		recs, broken, err = st.List(ctx)
		return err
	})
	var ns *noStateError
	if err != nil && !errors.As(err, &ns) {
		return err
	}
	// A broken record is a warning, not a failure (exit 0): the list of the
	// others is still right, and the warning says how to remove it.
	for _, b := range broken {
		opts.IO.Narrate("warning: %v", b)
	}
	if opts.Output == formatJSON {
		for i, r := range recs {
			recs[i] = r.Redacted()
		}
		return opts.IO.PrintJSON(recs)
	}
	rows := make([][]string, len(recs))
	for i, r := range recs {
		rows[i] = []string{r.ID, orDash(r.Name), r.Agent, string(r.Capabilities.ToolNames.Namespacing),
			r.ServerName, r.CreatedAt.Format(time.RFC3339), r.Workspace}
	}
	return opts.IO.PrintTable([]string{"ID", "NAME", "AGENT", "NAMESPACING", "SERVER", "CREATED", "WORKSPACE"}, rows)
}
