package instance

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"
)

// DefaultPollInterval is how often a [Poller] asks the store by default.
const DefaultPollInterval = 200 * time.Millisecond

// EventSource is what polling needs of the store; [*Store] has it.
type EventSource interface {
	Events(ctx context.Context, instanceID string, after int64) ([]*Event, error)
	Exists(ctx context.Context, id string) (bool, error)
}

// EventWatcher is what waking a [Poller] early needs of the store:
// [*Store] has it, and wakes it through PostgreSQL's LISTEN/NOTIFY, or
// after a commit to SQLite.
type EventWatcher interface {
	WatchEvents(ctx context.Context, instanceID string) (<-chan struct{}, func())
}

// watch returns the channel that wakes p early for instanceID's events,
// nil when its store has none, and the function that ends the watch.
func (p *Poller) watch(ctx context.Context, instanceID string) (<-chan struct{}, func()) {
	if w, ok := p.Source.(EventWatcher); ok {
		return w.WatchEvents(ctx, instanceID)
	}
	return nil, func() {}
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
	// Outage, when set, is told when a read finds the store unreachable
	// (err) and when it answers again (nil). Meanwhile the poller waits it
	// out, trying again with backoff up to [MaxOutageBackoff], rather than
	// ending: a wait or a follow outlives a database restart.
	Outage func(err error)
}

// MaxOutageBackoff bounds the pause between tries while the store cannot
// be reached.
const MaxOutageBackoff = 5 * time.Second

// TransientSource is what waiting out an outage needs of the store:
// whether an error is of a store that could not be reached. [*Store] has
// it.
type TransientSource interface {
	Transient(err error) bool
}

// Transient reports whether err is of a store that could not be reached
// (see [ErrUnavailable]): trying again later may work.
func (s *Store) Transient(err error) bool {
	return errors.Is(err, ErrUnavailable) || s.db.be.isUnavailable(err)
}

// try calls read until it succeeds, fails for good or ctx ends, waiting out
// a store that cannot be reached (see [Poller.Outage]).
func (p *Poller) try(ctx context.Context, read func() error) error {
	ts, _ := p.Source.(TransientSource)
	backoff, down := 100*time.Millisecond, false
	for {
		err := read()
		if err == nil && down && p.Outage != nil {
			p.Outage(nil)
		}
		if err == nil || ts == nil || !ts.Transient(err) || ctx.Err() != nil {
			return err
		}
		if !down && p.Outage != nil {
			p.Outage(err)
		}
		down = true
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, MaxOutageBackoff)
	}
}

// FailedError is what [Poller.Wait] returns when the instance reported
// status failed before the status waited for.
type FailedError struct{ Event *Event }

func (e *FailedError) Error() string {
	if e.Event.RunID != "" {
		return fmt.Sprintf("instance %s reported failed (run %s): %s", e.Event.InstanceID, e.Event.RunID, e.Event.Message)
	}
	return fmt.Sprintf("instance %s reported failed: %s", e.Event.InstanceID, e.Event.Message)
}

// UnansweredError is what [Poller.Wait] returns when the instance reached
// status done, but in the same run (since the latest `instance run` start
// before it, or since the first event) a question ended without an answer:
// the agent went on without the person it asked, which a pipeline must
// not take for a clean end.
type UnansweredError struct {
	Event      *Event   // the done event
	Unanswered []*Event // the questions' unanswered events
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
// yields a [*NotFoundError] matching [ErrDeleted] last). An error of the store ends it too: it is
// yielded last, or ctx's error if ctx ended meanwhile.
func (p *Poller) Events(ctx context.Context, instanceID string, follow bool) iter.Seq2[*Event, error] {
	return p.events(ctx, instanceID, nil, follow, 0)
}

// events is [Poller.Events] from the event after seq after, whose first
// poll's answer is first, when not nil (the caller has polled once
// already).
func (p *Poller) events(ctx context.Context, instanceID string, first []*Event, follow bool, after int64) iter.Seq2[*Event, error] {
	return func(yield func(*Event, error) bool) {
		var wake <-chan struct{}
		if follow {
			var stop func()
			wake, stop = p.watch(ctx, instanceID)
			defer stop()
		}
		for {
			evs, err := first, error(nil)
			if first == nil && follow {
				err = p.try(ctx, func() (err error) {
					evs, err = p.Source.Events(ctx, instanceID, after)
					return err
				})
			} else if first == nil {
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
			case <-wake:
			}
			if ok, err := p.Source.Exists(ctx, instanceID); err == nil && !ok {
				yield(nil, &NotFoundError{What: "instance", Ref: instanceID, Deleted: true, Hint: "it reports nothing more"})
				return
			}
		}
	}
}

// Wait polls until the instance's latest reported status is status and
// returns the event that reported it: at once if it is already (a
// [StatusUnanswered] event is not a status and does not count
// as the latest), else at the first event reporting it. Reaching done
// after a question of the same run (since the latest `instance run` start
// before it; without one, since the latest done or failed before it, or
// the first event: see runQuestions) went unanswered returns the done
// event with an [*UnansweredError]. It returns a [*FailedError] if the
// latest status is, or becomes, [StatusFailed] first, an error
// matching [ErrDeleted] if the instance is deleted meanwhile, and
// ctx's error (a deadline is the caller's timeout) if ctx ends first.
func (p *Poller) Wait(ctx context.Context, instanceID, status string) (*Event, error) {
	var first []*Event
	err := p.try(ctx, func() (err error) {
		first, err = p.Source.Events(ctx, instanceID, 0)
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, err
	}
	if first == nil {
		first = []*Event{}
	}
	// What was reported before the wait counts only as the latest status:
	// a done of an earlier run says nothing of the one under way, nor of
	// one that failed since.
	latest := -1
	for i, e := range first {
		if e.Status != StatusUnanswered {
			latest = i
		}
	}
	var run runQuestions
	for i, e := range first {
		run.see(e)
		if i == latest {
			if out, err, ok := reached(e, status, run.unanswered); ok {
				return out, err
			}
		}
	}
	for e, err := range p.events(ctx, instanceID, nil, true, lastSeq(first)) {
		if err != nil {
			return nil, err
		}
		run.see(e)
		if out, err, ok := reached(e, status, run.unanswered); ok {
			return out, err
		}
	}
	return nil, ctx.Err() // not reached: a followed stream ends with an error
}

// runQuestions is the unanswered events of the current run, as events are
// seen. A run is an `instance run` (its start begins one with none); for an
// instance whose client is started otherwise, it is the work since the last
// final report (done or failed), so that a question that expired before
// one "done" does not make every later wait exit 8.
type runQuestions struct {
	unanswered []*Event
	inRun      bool // an `instance run` started and has not ended
	ended      bool // the last event ended a run: the next begins anew
}

func (r *runQuestions) see(e *Event) {
	if r.ended {
		r.unanswered, r.ended = nil, false
	}
	final := e.Status == StatusDone || e.Status == StatusFailed
	switch {
	case e.Tool == RunTool && e.Status == StatusRunning:
		r.unanswered, r.inRun = nil, true
	case e.Tool == RunTool && final:
		r.inRun, r.ended = false, true
	case e.Status == StatusUnanswered:
		r.unanswered = append(r.unanswered, e)
	case final && !r.inRun:
		r.ended = true
	}
}

// reached says whether e ends a wait for status, and how: e reports status
// (with an [*UnansweredError] for a done after unanswered questions), or
// failed.
func reached(e *Event, status string, unanswered []*Event) (*Event, error, bool) {
	switch {
	case e.Status == status && status == StatusDone && len(unanswered) > 0:
		return e, &UnansweredError{Event: e, Unanswered: unanswered}, true
	case e.Status == status:
		return e, nil, true
	case e.Status == StatusFailed:
		return nil, &FailedError{Event: e}, true
	}
	return nil, nil, false
}

func lastSeq(evs []*Event) int64 {
	if n := len(evs); n > 0 {
		return evs[n-1].Seq
	}
	return 0
}

// RunSource is what waiting for a run needs of the store: the events, and
// the record's latest run; [*Store] has it.
type RunSource interface {
	EventSource
	LastRun(ctx context.Context, id string) (*Run, error)
}

// ErrNoRun is what [Poller.WaitRun] returns for the latest run of an
// instance that has never been run with `agentctl instance run`.
var ErrNoRun = errors.New("the instance has no run recorded")

// Which names the run [Poller.WaitRun] waits for.
type Which struct {
	// ID is the run's id; "" the latest run, unless Next.
	ID string
	// Next waits for the first run that starts after Since (the moment
	// the caller was asked to wait): one started since, though before the
	// first look, counts, so that `wait --next &` followed by `run` has no
	// gap however the two processes are scheduled.
	Next  bool
	Since time.Time
}

// WaitRun waits for the end of a run of the instance and returns the event
// of its outcome: the last done or failed its events hold (the model's own
// report stands over the client's exit code), with a [*FailedError] for
// failed and an [*UnansweredError] for done after a question of the run
// went unanswered. The run is which's (the latest: ErrNoRun if there is
// none). A run that has ended already is answered at once. A run that is
// not the instance's is a [*NotFoundError]; the instance deleted
// meanwhile an error matching [ErrDeleted]; ctx's end, ctx's
// error. p.Source must be a [RunSource].
func (p *Poller) WaitRun(ctx context.Context, instanceID string, which Which) (*Event, error) {
	runID, next := which.ID, which.Next
	src, ok := p.Source.(RunSource)
	if !ok {
		return nil, fmt.Errorf("waiting for a run needs a store that records runs")
	}
	lastRun := func() (*Run, error) {
		var r *Run
		err := p.try(ctx, func() (err error) {
			r, err = src.LastRun(ctx, instanceID)
			return err
		})
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, ErrNotFound):
			return nil, &NotFoundError{What: "instance", Ref: instanceID, Deleted: true, Hint: "its run had not ended"}
		}
		return r, err
	}
	wake, stop := p.watch(ctx, instanceID)
	defer stop()
	pause := func() error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.after():
			return nil
		case <-wake:
			return nil
		}
	}
	lr, err := lastRun()
	if err != nil {
		return nil, err
	}
	switch {
	case next:
		var base string
		if lr != nil && lr.StartedAt.Before(which.Since) {
			base = lr.ID
		}
		for lr == nil || lr.ID == "" || lr.ID == base {
			if err := pause(); err != nil {
				return nil, err
			}
			if lr, err = lastRun(); err != nil {
				return nil, err
			}
		}
		runID = lr.ID
	case runID == "":
		if lr == nil || lr.ID == "" {
			return nil, ErrNoRun
		}
		runID = lr.ID
	}
	for lr != nil && lr.ID == runID && lr.EndedAt == nil {
		if err := pause(); err != nil {
			return nil, err
		}
		if lr, err = lastRun(); err != nil {
			return nil, err
		}
	}
	// Ended: its end and its events were recorded in one transaction.
	var evs []*Event
	err = p.try(ctx, func() (err error) {
		evs, err = src.Events(ctx, instanceID, 0)
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, err
	}
	var final *Event
	var unanswered []*Event
	seen := false
	for _, e := range evs {
		if e.RunID != runID {
			continue
		}
		seen = true
		switch e.Status {
		case StatusDone, StatusFailed:
			final = e
		case StatusUnanswered:
			unanswered = append(unanswered, e)
		}
	}
	if !seen && (lr == nil || lr.ID != runID) {
		return nil, &NotFoundError{What: "run", Ref: runID,
			Hint: "`agentctl instance show " + instanceID + "` names the latest run; `agentctl instance events " + instanceID + " -o json` the run of each event"}
	}
	if final == nil { // a run recorded without its events' run ids
		final = &Event{InstanceID: instanceID, Tool: RunTool, Status: StatusFailed, RunID: runID,
			Message: "the run ended without a final status recorded"}
		if lr != nil && lr.ID == runID && lr.ExitCode != nil && *lr.ExitCode == 0 {
			final.Status, final.Message = StatusDone, "the client exited with code 0"
		}
	}
	out, err, _ := reached(final, StatusDone, unanswered)
	return out, err
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
