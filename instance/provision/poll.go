package provision

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
)

// DefaultPollInterval is how often a [Poller] asks the store by default.
const DefaultPollInterval = 200 * time.Millisecond

// EventSource is what polling needs of the store; [*instance.Store] has it.
type EventSource interface {
	Events(ctx context.Context, instanceID string, after int64) ([]*instance.Event, error)
	Exists(ctx context.Context, id string) (bool, error)
}

// Poller polls the store for an instance's progress events: the loop behind
// `instance events --follow` and `instance wait`.
type Poller struct {
	Source EventSource
	// Interval is the pause between polls (default [DefaultPollInterval]).
	Interval time.Duration
	// After returns a channel that receives once the pause is over (default
	// [time.After]). Tests give one whose ticks they send.
	After func(time.Duration) <-chan time.Time
}

// FailedError is what [Poller.Wait] returns when the instance reported
// status failed before the status waited for.
type FailedError struct{ Event *instance.Event }

func (e *FailedError) Error() string {
	return fmt.Sprintf("instance %s reported failed: %s", e.Event.InstanceID, e.Event.Message)
}

// UnansweredError is what [Poller.Wait] returns when the instance reached
// status done, but in the same run (since the latest `instance run` start
// before it, or since the first event) a question ended without an answer:
// the agent went on without the person it asked, which a pipeline must
// not take for a clean end.
type UnansweredError struct {
	Event      *instance.Event   // the done event
	Unanswered []*instance.Event // the questions' unanswered events
}

func (e *UnansweredError) Error() string {
	n := len(e.Unanswered)
	msg := fmt.Sprintf("instance %s reported done, but %d question(s) in this run got no answer: %s",
		e.Event.InstanceID, n, e.Unanswered[n-1].Message)
	if n > 1 {
		msg += fmt.Sprintf(" (and %d more; see `agentctl instance events %s`)", n-1, e.Event.InstanceID)
	}
	return msg
}

// Events yields the instance's events, oldest first. Without follow it
// yields the events stored now and stops. With follow it then polls, pausing
// between polls, and yields new events as they come, until the caller stops,
// ctx ends (it yields ctx's error last) or the instance is deleted (it
// yields a [*instance.NotFoundError] matching [instance.ErrDeleted] last). An error of the store ends it too: it is
// yielded last, or ctx's error if ctx ended meanwhile.
func (p *Poller) Events(ctx context.Context, instanceID string, follow bool) iter.Seq2[*instance.Event, error] {
	return p.events(ctx, instanceID, nil, follow)
}

// events is [Poller.Events] whose first poll's answer is first, when not
// nil (the caller has polled once already).
func (p *Poller) events(ctx context.Context, instanceID string, first []*instance.Event, follow bool) iter.Seq2[*instance.Event, error] {
	return func(yield func(*instance.Event, error) bool) {
		var after int64
		for {
			evs, err := first, error(nil)
			if first == nil {
				evs, err = p.Source.Events(ctx, instanceID, after)
			}
			first = nil
			if err != nil {
				if ctx.Err() != nil {
					err = ctx.Err() // a query interrupted by the end of ctx
				}
				yield(nil, err)
				return
			}
			for _, e := range evs {
				after = e.Seq // seq is global and increasing, not per instance
				if !yield(e, nil) {
					return
				}
			}
			if !follow {
				return
			}
			select {
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			case <-p.after():
			}
			if ok, err := p.Source.Exists(ctx, instanceID); err == nil && !ok {
				yield(nil, &instance.NotFoundError{What: "instance", Ref: instanceID, Deleted: true, Hint: "it reports nothing more"})
				return
			}
		}
	}
}

// Wait polls until the instance reports status and returns that event.
// Events reported before the wait started count, from the start of the
// latest `instance run` recorded when the wait starts (every event, if
// none was): an earlier run's end does not answer for a later one. Reaching done after a
// question of the same run went unanswered returns the done event with an
// [*UnansweredError]. It returns a [*FailedError]
// if the instance reports [mcpserver.StatusFailed] first, an error matching
// [instance.ErrDeleted] if it is deleted meanwhile, and ctx's error (a deadline is the caller's
// timeout) if ctx ends first.
func (p *Poller) Wait(ctx context.Context, instanceID, status string) (*instance.Event, error) {
	first, err := p.Source.Events(ctx, instanceID, 0)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, err
	}
	if first == nil {
		first = []*instance.Event{}
	}
	// Only the latest run counts: a done of an earlier run says nothing
	// of the one under way, nor of one that failed since.
	var from int64
	for _, e := range first {
		if e.Tool == instance.RunTool && e.Status == mcpserver.StatusRunning {
			from = e.Seq
		}
	}
	var unanswered []*instance.Event // in the current run
	for e, err := range p.events(ctx, instanceID, first, true) {
		if err != nil {
			return nil, err
		}
		if e.Seq < from {
			continue
		}
		switch {
		case e.Tool == instance.RunTool && e.Status == mcpserver.StatusRunning:
			unanswered = nil // a new run starts
		case e.Status == mcpserver.StatusUnanswered:
			unanswered = append(unanswered, e)
		}
		if e.Status == status {
			if status == mcpserver.StatusDone && len(unanswered) > 0 {
				return e, &UnansweredError{Event: e, Unanswered: unanswered}
			}
			return e, nil
		}
		if e.Status == mcpserver.StatusFailed {
			return nil, &FailedError{Event: e}
		}
	}
	return nil, ctx.Err() // not reached: a followed stream ends with an error
}

func (p *Poller) after() <-chan time.Time {
	d := p.Interval
	if d <= 0 {
		d = DefaultPollInterval
	}
	if p.After != nil {
		return p.After(d)
	}
	return time.After(d)
}
