package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/spf13/cobra"
)

// InstanceEventsOptions are the inputs of `instance events`.
type InstanceEventsOptions struct {
	IO    *IOStreams
	Store storeOpener
	// Poll sets the interval and clock of --follow; nil polls every
	// [instance.DefaultPollInterval].
	Poll func(instance.EventSource) *instance.Poller

	Instance string
	Follow   bool
	Output   string
}

// NewCmdInstanceEvents is `agentctl instance events`; runF replaces
// [instanceEventsRun] in tests.
func NewCmdInstanceEvents(f *Factory, runF func(context.Context, *InstanceEventsOptions) error) *cobra.Command {
	opts := &InstanceEventsOptions{IO: f.IOStreams, Store: f.Store}
	cmd := &cobra.Command{
		Use:   "events INSTANCE",
		Short: "Show the progress events an instance reported (--follow to keep watching)",
		Long: `Show the progress events the agent recorded with report_progress, oldest first.
--follow keeps printing new events until interrupted, or until the instance is
deleted (then it ends with exit 3, as 'instance logs --follow' does).

On a terminal each event is a line: its number, local time, status, percent and
message. Piped, tab-separated values: SEQ, TIME (RFC 3339, UTC), STATUS,
PERCENT, MESSAGE. -o json prints the events as one JSON array; -o jsonl prints
each as a JSON object on a line of its own (JSON Lines) as it comes, which is
what --follow takes (with -o json it is refused: an array that never ends is no
JSON). --jq filters either: the array, or each line (with --follow and no -o,
each line).`,
		Example: `  agentctl instance events fix-login
  agentctl instance events fix-login --jq '.[-1].status'
  agentctl instance events fix-login --follow -o jsonl --jq .message`,
		Args:              exactArgs(1, "an instance id, id prefix or label"),
		ValidArgsFunction: completeInstances(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Follow && opts.Output == formatJSON && !cmd.Flags().Changed("output") {
				opts.Output = formatJSONL // --jq, which said json for want of -o
			}
			if opts.Follow && opts.Output == formatJSON {
				return usageErrorf("--follow prints events as they come, which a JSON array cannot hold: use -o jsonl (one JSON object a line) with --follow")
			}
			opts.Instance = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return instanceEventsRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.Follow, "follow", "f", false, "keep printing new events")
	addOutputFlag(cmd, &opts.Output, opts.IO, formatJSONL)
	return cmd
}

// poller is the poller of src that the options ask for.
func poller(poll func(instance.EventSource) *instance.Poller, src instance.EventSource) *instance.Poller {
	if st, ok := src.(*instance.Store); ok {
		src = &lostRuns{Store: st}
	}
	if poll != nil {
		return poll(src)
	}
	return &instance.Poller{Source: src}
}

// narrateOutage says on stderr when the store stops answering while a
// command waits on it, and when it answers again.
func narrateOutage(io *IOStreams, st *instance.Store) func(error) {
	return func(err error) {
		if err != nil {
			io.Narrate("The store %s does not answer (%v); waiting for it, and trying again.", st.StoreName(), err)
			return
		}
		io.Narrate("The store %s answers again.", st.StoreName())
	}
}

func instanceEventsRun(ctx context.Context, opts *InstanceEventsOptions) error {
	return withInstance(ctx, opts.Store, opts.Instance, func(st *instance.Store, r *instance.Record) error {
		p := poller(opts.Poll, st)
		p.Outage = narrateOutage(opts.IO, st)
		var array jsonArray
		if opts.Output == formatJSON {
			array = opts.IO.JSONArray()
		}
		var deleted error
		for e, err := range p.Events(ctx, r.ID, opts.Follow) {
			if errors.Is(err, instance.ErrDeleted) {
				// Exit 3, as logs --follow, questions --wait and wait
				// end: a script tells it from an interruption.
				deleted = deletedMeanwhile(r.ID, "it reports nothing more")
				break
			}
			if err != nil {
				return err
			}
			if array != nil {
				err = array.Write(e)
			} else {
				err = printEvent(opts.IO, opts.Output, e)
			}
			if err != nil {
				return err
			}
		}
		if array != nil {
			if err := array.Close(); err != nil {
				return err
			}
		}
		return deleted
	})
}

// printEvent prints one event as it comes: a JSON line, a line for people
// on a terminal, or tab-separated values.
func printEvent(io *IOStreams, output string, e *instance.Event) error {
	if output == formatJSONL {
		return io.PrintJSONLine(e)
	}
	pct := "-"
	if e.Percent != nil {
		pct = fmt.Sprintf("%g%%", *e.Percent)
	}
	// The message comes from the model: one line (its breaks are spaces),
	// no tab into TSV, and every other control character, C1 and
	// bidirectional controls among them, shown escaped, not acted on by
	// the terminal ([TerminalText]).
	msg := TerminalText(strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, e.Message))
	var err error
	if io.IsStdoutTTY() {
		_, err = fmt.Fprintf(io.Out, "%4d  %s  %-7s  %5s  %s\n", e.Seq, e.At.Local().Format(time.TimeOnly), e.Status, pct, msg)
	} else {
		_, err = fmt.Fprintf(io.Out, "%d\t%s\t%s\t%s\t%s\n", e.Seq, e.At.Format(time.RFC3339Nano), e.Status, pct, msg)
	}
	return err
}

// lostRuns is the store as `instance wait` and `events` poll it: on the
// way, at most once a second, it records the end of a run whose agentctl
// was killed before it could (see [instance.Store.EndLostRun]), so that a
// wait ends on "failed" rather than on a "running" nothing will end. The
// second is the wall clock's, not the poller's (a test's fake clock does
// not space the checks).
type lostRuns struct {
	*instance.Store
	last time.Time
}

func (l *lostRuns) Events(ctx context.Context, id string, after int64) ([]*instance.Event, error) {
	l.endLost(ctx, id)
	return l.Store.Events(ctx, id, after)
}

func (l *lostRuns) LastRun(ctx context.Context, id string) (*instance.Run, error) {
	l.endLost(ctx, id)
	return l.Store.LastRun(ctx, id)
}

func (l *lostRuns) endLost(ctx context.Context, id string) {
	if now := time.Now(); now.Sub(l.last) >= time.Second {
		l.last = now
		// A failure here is the store's, which the query after reports.
		_, _ = l.Store.EndLostRun(ctx, id)
	}
}
