package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver/kb"
	"github.com/spf13/cobra"
)

// GCOptions are the inputs of `agentctl gc`.
type GCOptions struct {
	IO       *IOStreams
	Store    storeOpener
	StateDir func() string

	Output string
}

// NewCmdGC is `agentctl gc`; runF replaces [gcRun] in tests.
func NewCmdGC(f *Factory, runF func(context.Context, *GCOptions) error) *cobra.Command {
	opts := &GCOptions{IO: f.IOStreams, Store: f.Store, StateDir: func() string { return f.Config.StateDir() }}
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Remove what interrupted creates and deletes left behind, and indexes of folders that are gone",
		Long: `Remove what interrupted creates and deletes left behind in the state
directory: staging and deleting directories, and instance directories that
no record names. Only leftovers older than an hour are removed, so a create
running at the same moment is never touched. The state directory may hold
another store's instances too (after 'agentctl store migrate', or commands run
with another --store): a directory is removed only when the store in force
made it (each names its store in a .store file; one made by an older agentctl
is kept). A deleting directory whose instance still has its record (a delete
that was killed) is put back, and the instance works again.

gc also removes the search indexes (kb/*.db, with their -wal, -shm and lock
files) of knowledge-base folders that no longer exist, once no process has
written them for an hour and none holds their lock. An index records its
folder when it is brought up to date; one that does not yet (made by an older
agentctl) is kept.

gc then compacts the state database: deletes leave the space their rows took
inside it (so that 'instance delete' works on a full disk, it writes as little
as it can: no compaction on the way), and gc gives that space back to the file
system when at least a quarter of the database is free and the file system has
room for a copy of it, and truncates its WAL. It also puts back the 1 MiB
reserve (.disk-reserve in the state directory) that a delete on a full disk
uses, if there is room; so does 'instance create'.

instance create does the first part itself at most once an hour; gc does it
now, for CI images and cron jobs. It prints each path it removed.`,
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
	addOutputFlag(cmd, &opts.Output, opts.IO)
	return cmd
}

// staleIndexAge is how long a search index whose folder is gone must have
// gone unwritten before gc removes it, as for the other leftovers.
const staleIndexAge = time.Hour

func gcRun(ctx context.Context, opts *GCOptions) error {
	removed := []string{}
	var compacted instance.CompactStats
	err := withStore(ctx, opts.Store, func(st *instance.Store) error {
		r, err := st.Sweep(ctx)
		removed = append(removed, r...)
		if err != nil {
			return err
		}
		compacted, err = st.Compact(ctx)
		return err
	})
	if _, ok := errors.AsType[*noStateError](err); err != nil && !ok {
		return err
	}
	indexes, indexErr := kb.RemoveStaleIndexes(ctx, kbIndexDir(opts.StateDir()), staleIndexAge)
	removed = append(removed, indexes...)
	if indexErr != nil { // what was removed is printed all the same
		indexErr = fmt.Errorf("search indexes of knowledge bases: %w", indexErr)
	}
	if compacted.Vacuumed {
		opts.IO.Narrate("Compacted the state database: %d bytes given back to the file system.", compacted.FreedBytes)
	}
	if compacted.Skipped != "" {
		opts.IO.Narrate("Note: %s.", compacted.Skipped)
	}
	if opts.Output == formatJSON {
		return errors.Join(opts.IO.PrintJSON(removed), indexErr)
	}
	for _, p := range removed {
		if _, err := fmt.Fprintln(opts.IO.Out, p); err != nil {
			return err
		}
	}
	if len(removed) == 0 && indexErr == nil {
		opts.IO.Narrate("Nothing to remove.")
	}
	return indexErr
}
