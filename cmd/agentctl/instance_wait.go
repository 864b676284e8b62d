package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/instance/provision"
	"github.com/agentctl/agentctl/mcpserver"
	"github.com/spf13/cobra"
)

// InstanceWaitOptions are the inputs of `instance wait`.
type InstanceWaitOptions struct {
	IO    *IOStreams
	Store storeOpener
	// Poll sets the interval and clock of the polling; nil polls every
	// [provision.DefaultPollInterval].
	Poll func(provision.EventSource) *provision.Poller

	Instance string
	Status   string
	Timeout  time.Duration // 0: until interrupted
	// AllowUnanswered takes a done run whose questions went unanswered
	// for a clean done (exit 0, with a warning).
	AllowUnanswered bool
}

// NewCmdInstanceWait is `agentctl instance wait`; runF replaces
// [instanceWaitRun] in tests.
func NewCmdInstanceWait(f *Factory, runF func(context.Context, *InstanceWaitOptions) error) *cobra.Command {
	opts := &InstanceWaitOptions{IO: f.IOStreams, Store: f.Store}
	statuses := mcpserver.ProgressStatuses()
	cmd := &cobra.Command{
		Use:   "wait INSTANCE --status STATUS",
		Short: "Wait until the instance reports a status (for CI)",
		Long: `Wait until the agent reports the given status with report_progress. Exits 0 when it
is reached, 6 when the instance reports "failed" first, 5 when --timeout passes
(see 'agentctl help exit-codes'). Events reported before the wait started count,
from the start of the latest 'instance run' of the instance (all of them if it was
never run that way): a done of an earlier run does not answer for the run under
way, nor for one that failed since.

A run that ends done although a question the agent asked in it got no answer
(it expired, or the client stopped waiting) is not a clean done: wait --status
done then exits 8 and names the question. --allow-unanswered accepts it (exit 0,
with the warning).`,
		Example:           `  agentctl instance wait "$id" --status done --timeout 30m`,
		Args:              exactArgs(1, "an instance id, id prefix or label"),
		ValidArgsFunction: completeInstances(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(statuses, opts.Status) {
				return usageErrorf("invalid --status %q: use one of %s", opts.Status, strings.Join(statuses, ", "))
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
	cmd.Flags().StringVar(&opts.Status, "status", mcpserver.StatusDone, "the status to wait for: "+strings.Join(statuses, ", "))
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
		e, err := poller(opts.Poll, st).Wait(ctx, r.ID, opts.Status)
		var failed *provision.FailedError
		var unanswered *provision.UnansweredError
		switch {
		case errors.As(err, &unanswered) && opts.AllowUnanswered:
			opts.IO.Narrate("Warning: %v", err)
			opts.IO.Narrate("Instance %s reached %s: %s", r.ID, opts.Status, e.Message)
			return nil
		case errors.As(err, &unanswered):
			return &exitError{code: ExitUnanswered, err: fmt.Errorf("%w; pass --allow-unanswered to accept that", err)}
		case err == nil:
			opts.IO.Narrate("Instance %s reached %s: %s", r.ID, opts.Status, e.Message)
			return nil
		case errors.As(err, &failed):
			return &exitError{code: ExitFailed, err: err}
		case errors.Is(err, instance.ErrDeleted):
			return &instance.NotFoundError{What: "instance", Ref: r.ID, Deleted: true, Hint: "it had not reported " + opts.Status}
		case errors.Is(err, context.DeadlineExceeded):
			return &exitError{code: ExitTimeout, err: fmt.Errorf("instance %s did not reach %s within %s", r.ID, opts.Status, opts.Timeout)}
		}
		return err
	})
}
