package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentctl/agentctl/instance"
	"github.com/spf13/cobra"
)

// GCOptions are the inputs of `agentctl gc`.
type GCOptions struct {
	IO    *IOStreams
	Store storeOpener

	Output string
}

// NewCmdGC is `agentctl gc`; runF replaces [gcRun] in tests.
func NewCmdGC(f *Factory, runF func(context.Context, *GCOptions) error) *cobra.Command {
	opts := &GCOptions{IO: f.IOStreams, Store: f.Store}
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Remove what interrupted creates and deletes left behind",
		Long: `Remove what interrupted creates and deletes left behind in the state
directory: staging and deleting directories, and instance directories that
no record names. Only leftovers older than an hour are removed, so a create
running at the same moment is never touched.

instance create does this itself at most once an hour; gc does it now, for
CI images and cron jobs. It prints each path it removed.`,
		Example: `  agentctl gc
  agentctl gc -o json | jq length`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(opts.Output); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return gcRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	return cmd
}

func gcRun(ctx context.Context, opts *GCOptions) error {
	removed := []string{}
	err := withStore(ctx, opts.Store, func(st *instance.Store) error {
		r, err := st.Sweep(ctx)
		removed = append(removed, r...)
		return err
	})
	if _, ok := errors.AsType[*noStateError](err); err != nil && !ok {
		return err
	}
	if opts.Output == formatJSON {
		return opts.IO.PrintJSON(removed)
	}
	for _, p := range removed {
		if _, err := fmt.Fprintln(opts.IO.Out, p); err != nil {
			return err
		}
	}
	if len(removed) == 0 {
		opts.IO.Narrate("Nothing to remove.")
	}
	return nil
}
