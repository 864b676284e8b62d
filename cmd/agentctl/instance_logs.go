package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/spf13/cobra"
)

// InstanceLogsOptions are the inputs of `instance logs`.
type InstanceLogsOptions struct {
	IO    *IOStreams
	Store storeOpener
	// PollInterval is how often --follow looks for more output.
	PollInterval time.Duration

	Instance string
	Follow   bool
}

// NewCmdInstanceLogs is `agentctl instance logs`; runF replaces
// [instanceLogsRun] in tests.
func NewCmdInstanceLogs(f *Factory, runF func(context.Context, *InstanceLogsOptions) error) *cobra.Command {
	opts := &InstanceLogsOptions{IO: f.IOStreams, Store: f.Store, PollInterval: 100 * time.Millisecond}
	cmd := &cobra.Command{
		Use:   "logs INSTANCE [--follow]",
		Short: "Print the output of the instance's client runs",
		Long: `Logs prints run.log from the instance directory: the output (stdout and stderr) of
each headless 'agentctl instance run', every run starting with a "===" line that gives
its time and command line. An interactive run has the terminal to itself and is not
logged.

With --follow it keeps printing what the client writes until the run under way ends;
when none is under way, it waits for the next run and follows that one to its end.
If the instance is deleted while it waits, it ends with exit 3.

In a store that many hosts share (--store postgres://...), runs' output is kept in
the store as well, and logs prints another host's instance's from there.`,
		Example: `  agentctl instance logs fix-login
  agentctl instance run "$id" --prompt-file task.md & agentctl instance logs "$id" --follow`,
		Args:              exactArgs(1, "an instance id, id prefix or label"),
		ValidArgsFunction: completeInstances(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Instance = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return instanceLogsRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.Follow, "follow", "f", false, "keep printing new output until the run under way (or the next one) ends")
	return cmd
}

func instanceLogsRun(ctx context.Context, opts *InstanceLogsOptions) error {
	return withInstance(ctx, opts.Store, opts.Instance, func(st *instance.Store, r *instance.Record) error {
		if st.Foreign(r) && st.SharesLogs() {
			return sharedLogs(ctx, opts, st, r)
		}
		path := filepath.Join(r.Dir, instance.RunLogFile)
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) && !opts.Follow {
			opts.IO.Narrate("Instance %s has no run log yet: it has not been run headless with 'agentctl instance run'.", r.ID)
			return nil
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if f != nil {
			defer f.Close()
		}
		if !opts.Follow {
			_, err := io.Copy(opts.IO.Out, f)
			return err
		}
		tick := time.NewTicker(opts.PollInterval)
		defer tick.Stop()
		since := time.Now()
		seen := false
		for {
			// Read the lock before the file: output written before the run
			// ended is then always printed.
			running, err := st.Running(r.ID)
			if err != nil {
				return err
			}
			if running {
				seen = true
			} else if !seen {
				// No run under way: one that started after we began
				// (and may be over already) is the one to follow,
				// unless the instance is gone and no run will come.
				if seen, err = ranSince(ctx, st, r.ID, since); err != nil {
					return err
				}
			}
			if f == nil {
				var err error
				if f, err = os.Open(path); err == nil {
					defer f.Close()
				}
			}
			if f != nil {
				if _, err := io.Copy(opts.IO.Out, f); err != nil {
					return err
				}
			}
			if !running && seen {
				// Deleting an instance holds its run's lock for a moment,
				// which looks like a run from here, then moves its
				// directory aside, then removes its record: say what
				// happened, or wait for the delete to end either way.
				_, err := st.Get(ctx, r.ID)
				if errors.Is(err, instance.ErrNotFound) {
					return deletedMeanwhile(r.ID, "no run of it is left to follow")
				}
				if _, serr := os.Stat(r.Dir); err != nil || !errors.Is(serr, os.ErrNotExist) {
					return nil
				}
				seen = false // a delete under way (its directory moved aside, its record not yet gone)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
		}
	})
}

// ranSince reports whether instance id's latest run started at or after t.
// Its error says the instance was deleted meanwhile; any other failure to
// read the record (the store away for a moment) is no run yet.
func ranSince(ctx context.Context, st *instance.Store, id string, t time.Time) (bool, error) {
	r, err := st.Get(ctx, id)
	if errors.Is(err, instance.ErrNotFound) {
		return false, deletedMeanwhile(id, "no run of it is left to follow")
	}
	return err == nil && r.LastRun != nil && !r.LastRun.StartedAt.Before(t), nil
}

// deletedMeanwhile is the error (exit 3) of a command that followed or
// waited on instance id when it was deleted; hint says what that means for
// the command.
func deletedMeanwhile(id, hint string) error {
	return &instance.NotFoundError{What: "instance", Ref: id, Deleted: true, Hint: hint}
}

// sharedLogs is `instance logs` of an instance that another host runs:
// its output as the shared store keeps it (see [instance.Store.RunLog]),
// followed through the store's notifications, and its polls.
func sharedLogs(ctx context.Context, opts *InstanceLogsOptions, st *instance.Store, r *instance.Record) error {
	var after int64
	printNew := func() (bool, error) {
		chunks, err := st.RunLog(ctx, r.ID, after)
		if err != nil {
			return false, err
		}
		for _, c := range chunks {
			if _, err := opts.IO.Out.Write(c.Data); err != nil {
				return false, err
			}
			after = c.Seq
		}
		return len(chunks) > 0, nil
	}
	if !opts.Follow {
		printed, err := printNew()
		if err == nil && !printed {
			opts.IO.Narrate("Instance %s (of host %s) has no run log in the store yet: it has not been run headless with 'agentctl instance run' since the store was shared.", r.ID, r.Host)
		}
		return err
	}
	wake, stop := st.WatchRunLog(ctx, r.ID)
	defer stop()
	tick := time.NewTicker(max(opts.PollInterval, time.Second))
	defer tick.Stop()
	since := time.Now()
	seen := false
	for {
		// The record before the output: output stored before the run
		// ended is then always printed.
		cur, err := st.Get(ctx, r.ID)
		if errors.Is(err, instance.ErrNotFound) {
			return deletedMeanwhile(r.ID, "no run of it is left to follow")
		}
		if err != nil {
			return err
		}
		lr := cur.LastRun
		running := lr != nil && lr.EndedAt == nil
		if running || (lr != nil && !lr.StartedAt.Before(since)) {
			seen = true
		}
		if _, err := printNew(); err != nil {
			return err
		}
		if !running && seen {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		case <-wake:
		}
	}
}
