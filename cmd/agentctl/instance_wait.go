package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/spf13/cobra"
)

// InstanceWaitOptions are the inputs of `instance wait`.
type InstanceWaitOptions struct {
	IO    *IOStreams
	Store storeOpener
	// Poll sets the interval and clock of the polling; nil polls every
	// [instance.DefaultPollInterval].
	Poll func(instance.EventSource) *instance.Poller

	Instance string
	// Status, when set, waits for the instance's latest reported status
	// instead of a run's end.
	Status string
	// Run is the run to wait for; "" the latest (or with Next the next).
	Run  string
	Next bool
	// since is when the command was asked to wait: --next takes a run
	// that started after it.
	since   time.Time
	Timeout time.Duration // 0: until interrupted
	// AllowUnanswered takes a done run whose questions went unanswered
	// for a clean done (exit 0, with a warning).
	AllowUnanswered bool
}

// NewCmdInstanceWait is `agentctl instance wait`; runF replaces
// [instanceWaitRun] in tests.
func NewCmdInstanceWait(f *Factory, runF func(context.Context, *InstanceWaitOptions) error) *cobra.Command {
	opts := &InstanceWaitOptions{IO: f.IOStreams, Store: f.Store}
	statuses := instance.ProgressStatuses()
	cmd := &cobra.Command{
		Use:   "wait INSTANCE [--run ID | --next | --status STATUS]",
		Short: "Wait for the instance's run to end, or for a status (for CI)",
		Long: `Wait for a run of the instance ('agentctl instance run') to end, and exit with its
outcome: 0 done, 6 failed, 8 done although a question the agent asked got no
answer; 5 when --timeout passes first (see 'agentctl help exit-codes'). The outcome
is the model's own final report (report_progress done or failed) if that was its
last word in the run, else the client's exit code (0 done, anything else failed):
a model that reported done and then went on working (reported running, or asked
a question) is judged by how the client ended.

By default wait is about the instance's latest run: while it runs, wait waits for
its end; once it has ended, wait reports its outcome at once, so a run that ended
before wait started is not missed; an earlier run's outcome never answers for it.
That is the default because a pipeline that runs an instance means that run, not
whatever the agent said last.

  --run ID     waits for that run: 'instance run' prints its id as it starts, and
               'instance show' keeps the latest (last_run.id);
  --next       waits for the first run that starts after wait was called: start
               wait before 'instance run', and the run cannot slip by (a run
               whose client could not start ends at once, failed: exit 6);
  --status S   waits for the instance's latest reported status to be S (one of
               running, blocked, done, failed): at once if it is already, exit 6
               if it is or becomes failed. That is how wait behaved before runs
               had ids: use it for a client you started yourself, or to wait for
               a status on the way (blocked: the agent asked a question).

An instance never run with 'instance run' has no run to wait for: wait then waits
as --status done does, and says so.

A run that ends done although a question the agent asked in it got no answer (it
expired, or the client stopped waiting) is not a clean done: wait exits 8 and names
the question. --allow-unanswered accepts it (exit 0, with the warning). A run is an
'instance run'; for a client you start yourself, it is what followed the last done or
failed the agent reported.`,
		Example: `  agentctl instance run "$id" --prompt 'Fix the failing test'
  agentctl instance wait "$id"                      # the run that just ended
  agentctl instance wait "$id" --next --timeout 30m # the next run, started elsewhere
  agentctl instance wait "$id" --run "$run_id"
  agentctl instance wait "$id" --status blocked     # until the agent asks`,
		Args:              exactArgs(1, "an instance id, id prefix or label"),
		ValidArgsFunction: completeInstances(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.since = time.Now()
			status := cmd.Flags().Changed("status")
			if status && !slices.Contains(statuses, opts.Status) {
				return usageErrorf("invalid --status %q: use one of %s", opts.Status, strings.Join(statuses, ", "))
			}
			if !status {
				opts.Status = ""
			}
			if cmd.Flags().Changed("run") && strings.TrimSpace(opts.Run) == "" {
				return usageErrorf("--run needs a run id: 'agentctl instance show INSTANCE' names the latest run (last_run.id)")
			}
			switch {
			case status && (opts.Run != "" || opts.Next):
				return usageErrorf("--status waits for the instance's latest reported status; --run and --next wait for a run's end: give one or the other")
			case opts.Run != "" && opts.Next:
				return usageErrorf("give --run ID or --next, not both")
			}
			if opts.Timeout < 0 {
				return usageErrorf("invalid --timeout %s: use a positive duration, or 0 to wait until interrupted", opts.Timeout)
			}
			opts.Instance = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return instanceWaitRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Status, "status", "", "wait for the instance's latest reported status to be this: "+strings.Join(statuses, ", "))
	cmd.Flags().StringVar(&opts.Run, "run", "", "wait for the run with this `ID` to end")
	cmd.Flags().BoolVar(&opts.Next, "next", false, "wait for the first run that starts after this call to end")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 0, "give up after this long (0: wait until interrupted)")
	cmd.Flags().BoolVar(&opts.AllowUnanswered, "allow-unanswered", false, "exit 0 for a done run in which a question got no answer (still warned about)")
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(statuses, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func instanceWaitRun(ctx context.Context, opts *InstanceWaitOptions) error {
	// Resolve the instance before the clock starts, so a short timeout is a
	// timeout, never a failed open.
	return withInstance(ctx, opts.Store, opts.Instance, func(st *instance.Store, r *instance.Record) error {
		if opts.Timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
			defer cancel()
		}
		p := poller(opts.Poll, st)
		p.Outage = narrateOutage(opts.IO, st)
		status := opts.Status
		var e *instance.Event
		var err error
		what := "reached " + status
		if status == "" {
			e, err = p.WaitRun(ctx, r.ID, instance.Which{ID: opts.Run, Next: opts.Next, Since: opts.since})
			if errors.Is(err, instance.ErrNoRun) {
				status, what = instance.StatusDone, "reached "+instance.StatusDone
				opts.IO.Narrate("Instance %s has no run recorded ('agentctl instance run' never ran it): waiting for it to report done.", r.ID)
				e, err = p.Wait(ctx, r.ID, status)
			} else if e != nil {
				what = "run " + e.RunID + " ended " + e.Status
			}
		} else {
			e, err = p.Wait(ctx, r.ID, status)
		}
		var failed *instance.FailedError
		var unanswered *instance.UnansweredError
		switch {
		case errors.As(err, &unanswered) && opts.AllowUnanswered:
			opts.IO.Narrate("Warning: %v", err)
			opts.IO.Narrate("Instance %s %s: %s", r.ID, what, e.Message)
			return nil
		case errors.As(err, &unanswered):
			return &exitError{code: ExitUnanswered, err: fmt.Errorf("%w; pass --allow-unanswered to accept that", err)}
		case err == nil:
			opts.IO.Narrate("Instance %s %s: %s", r.ID, what, e.Message)
			return nil
		case errors.As(err, &failed):
			return &exitError{code: ExitFailed, err: err}
		case errors.Is(err, instance.ErrDeleted):
			hint := "it had not reported " + status
			if status == "" {
				hint = "its run had not ended"
			}
			return &instance.NotFoundError{What: "instance", Ref: r.ID, Deleted: true, Hint: hint}
		case errors.Is(err, context.DeadlineExceeded):
			goal := "reach " + status
			switch {
			case status != "":
			case opts.Next:
				goal = "start and end a run"
			case opts.Run != "":
				goal = "end run " + opts.Run
			default:
				goal = "end its run"
			}
			return &exitError{code: ExitTimeout, err: fmt.Errorf("instance %s did not %s within %s", r.ID, goal, opts.Timeout)}
		}
		return err
	})
}
