package instance_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/instance"
)

// fakeEvents serves scripted batches of events, one batch per poll, then
// empty polls; the instance exists for existsPolls polls after the first.
type fakeEvents struct {
	mu          sync.Mutex
	batches     [][]*instance.Event
	afters      []int64 // the after argument of each Events call
	existsPolls int
	err         error
}

func (f *fakeEvents) Events(_ context.Context, _ string, after int64) ([]*instance.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.afters = append(f.afters, after)
	if f.err != nil {
		return nil, f.err
	}
	if len(f.batches) == 0 {
		return nil, nil
	}
	b := f.batches[0]
	f.batches = f.batches[1:]
	return b, nil
}

func (f *fakeEvents) Exists(context.Context, string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.existsPolls--
	return f.existsPolls >= 0, nil
}

func ev(seq int64, status string) *instance.Event {
	return &instance.Event{Seq: seq, InstanceID: "i1", Status: status, Message: status + " message"}
}

// ticks is a clock whose pauses are over at once; it records their lengths.
type ticks struct {
	mu     sync.Mutex
	pauses []time.Duration
}

func (c *ticks) after(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.pauses = append(c.pauses, d)
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- time.Time{}
	return ch
}

// never is a clock whose pauses never end.
func never(time.Duration) <-chan time.Time { return nil }

func collect(seq func(func(*instance.Event, error) bool)) (seqs []int64, last error) {
	for e, err := range seq {
		if err != nil {
			return seqs, err
		}
		seqs = append(seqs, e.Seq)
	}
	return seqs, nil
}

func TestEventsOnce(t *testing.T) {
	src := &fakeEvents{batches: [][]*instance.Event{{ev(1, "running"), ev(4, "done")}, {ev(9, "running")}}}
	clock := &ticks{}
	p := &instance.Poller{Source: src, After: clock.after}
	seqs, err := collect(p.Events(context.Background(), "i1", false))
	if err != nil || !slices.Equal(seqs, []int64{1, 4}) {
		t.Fatalf("events %v, %v; want 1 4 and no error", seqs, err)
	}
	if len(clock.pauses) != 0 || len(src.afters) != 1 {
		t.Errorf("without follow: %d pauses, %d polls; want 0 and 1", len(clock.pauses), len(src.afters))
	}
}

func TestEventsFollowUntilDeleted(t *testing.T) {
	src := &fakeEvents{batches: [][]*instance.Event{{ev(1, "running"), ev(2, "blocked")}, nil, {ev(7, "running")}}, existsPolls: 3}
	clock := &ticks{}
	p := &instance.Poller{Source: src, Interval: 5 * time.Second, After: clock.after}
	seqs, err := collect(p.Events(context.Background(), "i1", true))
	if !errors.Is(err, instance.ErrDeleted) || !slices.Equal(seqs, []int64{1, 2, 7}) {
		t.Fatalf("events %v, %v; want 1 2 7 then ErrDeleted", seqs, err)
	}
	// Each poll asks for what came after the last event seen.
	if want := []int64{0, 2, 2, 7}; !slices.Equal(src.afters, want) {
		t.Errorf("polled after %v, want %v", src.afters, want)
	}
	if want := []time.Duration{5 * time.Second, 5 * time.Second, 5 * time.Second, 5 * time.Second}; !slices.Equal(clock.pauses, want) {
		t.Errorf("pauses %v, want %v", clock.pauses, want)
	}
}

func TestEventsFollowEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := &fakeEvents{batches: [][]*instance.Event{{ev(1, "running")}}, existsPolls: 100}
	p := &instance.Poller{Source: src, After: never}
	var seqs []int64
	var last error
	for e, err := range p.Events(ctx, "i1", true) {
		if err != nil {
			last = err
			break
		}
		seqs = append(seqs, e.Seq)
		cancel() // interrupted while following
	}
	if !errors.Is(last, context.Canceled) || !slices.Equal(seqs, []int64{1}) {
		t.Fatalf("events %v, %v; want 1 then context.Canceled", seqs, last)
	}

	// A store error after ctx ended is the interruption, not a failure.
	src = &fakeEvents{err: errors.New("interrupted (9)")}
	p = &instance.Poller{Source: src, After: never}
	if _, err := collect(p.Events(ctx, "i1", true)); !errors.Is(err, context.Canceled) {
		t.Errorf("a store error after the end of ctx: %v, want context.Canceled", err)
	}
	// Before, it is the error.
	if _, err := collect(p.Events(context.Background(), "i1", true)); err == nil || err.Error() != "interrupted (9)" {
		t.Errorf("a store error: %v", err)
	}
}

func TestWait(t *testing.T) {
	for _, tc := range []struct {
		name    string
		batches [][]*instance.Event
		status  string
		want    int64 // the event reached; 0 for an error
		wantErr func(error) bool
	}{
		{"reached in the first poll", [][]*instance.Event{{ev(1, "running"), ev(2, "done")}}, instance.StatusDone, 2, nil},
		{"reached later", [][]*instance.Event{{ev(1, "running")}, nil, {ev(3, "blocked")}}, instance.StatusBlocked, 3, nil},
		{"failed first", [][]*instance.Event{{ev(1, "running"), ev(2, "failed")}, {ev(3, "done")}}, instance.StatusDone, 0,
			func(err error) bool {
				var fe *instance.FailedError
				return errors.As(err, &fe) && fe.Event.Seq == 2 && err.Error() == "instance i1 reported failed: failed message"
			}},
		{"failed later", [][]*instance.Event{{ev(1, "running")}, {ev(2, "failed"), ev(3, "done")}}, instance.StatusDone, 0,
			func(err error) bool {
				var fe *instance.FailedError
				return errors.As(err, &fe) && fe.Event.Seq == 2
			}},
		// Only the latest status reported before the wait counts.
		{"the latest status is the one", [][]*instance.Event{{ev(1, "running"), ev(2, "failed"), ev(3, "done")}}, instance.StatusDone, 3, nil},
		{"an earlier status is not", [][]*instance.Event{{ev(1, "blocked"), ev(2, "running")}, nil, {ev(4, "blocked")}}, instance.StatusBlocked, 4, nil},
		{"an earlier done is not", [][]*instance.Event{{ev(1, "done"), ev(2, "running")}, {ev(3, "failed")}}, instance.StatusDone, 0,
			func(err error) bool {
				var fe *instance.FailedError
				return errors.As(err, &fe) && fe.Event.Seq == 3
			}},
		{"waiting for failed", [][]*instance.Event{{ev(1, "running"), ev(2, "failed")}}, instance.StatusFailed, 2, nil},
		{"deleted", [][]*instance.Event{{ev(1, "running")}}, instance.StatusDone, 0,
			func(err error) bool {
				return errors.Is(err, instance.ErrDeleted) && errors.Is(err, instance.ErrNotFound) &&
					err.Error() == `instance "i1" was deleted; it reports nothing more`
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &fakeEvents{batches: tc.batches, existsPolls: 3}
			p := &instance.Poller{Source: src, After: (&ticks{}).after}
			e, err := p.Wait(context.Background(), "i1", tc.status)
			if tc.wantErr != nil {
				if !tc.wantErr(err) {
					t.Fatalf("err %v", err)
				}
				return
			}
			if err != nil || e.Seq != tc.want {
				t.Fatalf("event %v, err %v; want seq %d", e, err, tc.want)
			}
		})
	}
	t.Run("timeout", func(t *testing.T) {
		ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
		defer cancel()
		p := &instance.Poller{Source: &fakeEvents{existsPolls: 100}, After: never}
		if _, err := p.Wait(ctx, "i1", instance.StatusDone); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v, want the deadline", err)
		}
	})
}

func TestWaitOnTheStore(t *testing.T) {
	st := openStore(t)
	rec := create(t, st, "auggie", nil)
	ctx := context.Background()
	if _, err := st.RecordProgress(ctx, rec.ID, "report_progress_agentctl", instance.StatusRunning, "start", nil); err != nil {
		t.Fatal(err)
	}
	tick := make(chan time.Time)
	p := &instance.Poller{Source: st, After: func(time.Duration) <-chan time.Time { return tick }}
	done := make(chan error, 1)
	go func() {
		e, err := p.Wait(ctx, rec.ID, instance.StatusDone)
		if err == nil && e.Message != "all done" {
			err = errors.New("reached with " + e.Message)
		}
		done <- err
	}()
	// The first poll saw only "running": the waiter pauses on the clock.
	tick <- time.Time{}
	if _, err := st.RecordProgress(ctx, rec.ID, "report_progress_agentctl", instance.StatusDone, "all done", nil); err != nil {
		t.Fatal(err)
	}
	// Each tick ends one pause; the waiter takes it only while it pauses.
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return
		case tick <- time.Time{}:
		}
	}
}

func runEv(seq int64, status string) *instance.Event {
	e := ev(seq, status)
	e.Tool = instance.RunTool
	return e
}

// TestWaitMeansTheLatestRun: an earlier run's done answers nothing for the
// run under way or a later one; a question the run left unanswered makes
// its done an [instance.UnansweredError], and a later clean run does not
// inherit it.
func TestWaitMeansTheLatestRun(t *testing.T) {
	unanswered := ev(0, instance.StatusUnanswered)
	for _, tc := range []struct {
		name       string
		batches    [][]*instance.Event
		wantSeq    int64
		failed     bool
		unanswered bool
	}{
		{"second run under way", [][]*instance.Event{{runEv(1, "running"), runEv(2, "done"), runEv(3, "running")}, {ev(4, "running")}, {runEv(5, "done")}}, 5, false, false},
		{"second run failed", [][]*instance.Event{{runEv(1, "running"), runEv(2, "done"), runEv(3, "running"), runEv(4, "failed")}}, 0, true, false},
		{"unanswered in the run", [][]*instance.Event{{runEv(1, "running"), {Seq: 2, InstanceID: "i1", Tool: "ask_user_question_agentctl", Status: unanswered.Status, Message: "question q1 got no answer"}, runEv(3, "done")}}, 3, false, true},
		{"unanswered in an earlier run", [][]*instance.Event{{runEv(1, "running"), {Seq: 2, InstanceID: "i1", Status: unanswered.Status}, runEv(3, "done"), runEv(4, "running"), runEv(5, "done")}}, 5, false, false},
		{"no run recorded", [][]*instance.Event{{ev(1, "running")}, {ev(2, "done")}}, 2, false, false},
		// Without `instance run`, a done or failed ends the run: a question
		// unanswered before it is not one of the next.
		{"unanswered without runs", [][]*instance.Event{{ev(1, "running"), {Seq: 2, InstanceID: "i1", Status: unanswered.Status}, ev(3, "done")}}, 3, false, true},
		{"unanswered before an earlier done, without runs", [][]*instance.Event{{ev(1, "running"), {Seq: 2, InstanceID: "i1", Status: unanswered.Status}, ev(3, "done"), ev(4, "running"), ev(5, "done")}}, 5, false, false},
		{"unanswered before an earlier failed, without runs", [][]*instance.Event{{ev(1, "running"), {Seq: 2, InstanceID: "i1", Status: unanswered.Status}, ev(3, "failed"), ev(4, "running")}, {ev(5, "done")}}, 5, false, false},
		// Within a run, the model's own done does not end it: the run's end
		// still counts the question.
		{"unanswered, the model's done, then the run's end", [][]*instance.Event{{runEv(1, "running"), {Seq: 2, InstanceID: "i1", Status: unanswered.Status}, ev(3, "done"), runEv(4, "done")}}, 4, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &fakeEvents{batches: tc.batches, existsPolls: 100}
			p := &instance.Poller{Source: src, After: (&ticks{}).after}
			e, err := p.Wait(context.Background(), "i1", instance.StatusDone)
			var failed *instance.FailedError
			var un *instance.UnansweredError
			switch {
			case tc.failed:
				if !errors.As(err, &failed) {
					t.Fatalf("got %v %v, want failed", e, err)
				}
			case tc.unanswered:
				if !errors.As(err, &un) || e == nil || e.Seq != tc.wantSeq || len(un.Unanswered) != 1 || un.Error() == "" {
					t.Fatalf("got %v %v, want done %d with an unanswered question", e, err, tc.wantSeq)
				}
			default:
				if err != nil || e == nil || e.Seq != tc.wantSeq {
					t.Fatalf("got %v %v, want done %d", e, err, tc.wantSeq)
				}
			}
		})
	}
}

// TestWaitRunNext: --next takes a run that started after the call, even
// one that started (and ended) before the wait's first look, and never
// one that started before the call.
func TestWaitRunNext(t *testing.T) {
	st := openStore(t)
	rec := create(t, st, "auggie", nil)
	ctx := context.Background()
	since := time.Now()
	run := instance.Run{Program: "auggie", Mode: "headless", PID: 1, StartedAt: time.Now().UTC()}
	seq, err := st.StartRun(ctx, rec.ID, run, instance.Event{Tool: instance.RunTool, Status: instance.StatusRunning, Message: "started"})
	if err != nil {
		t.Fatal(err)
	}
	lr, err := st.LastRun(ctx, rec.ID)
	if err != nil || lr.ID == "" {
		t.Fatalf("last_run %+v, %v: want a run id", lr, err)
	}
	end, code := time.Now().UTC(), 0
	run.ID, run.EndedAt, run.ExitCode = lr.ID, &end, &code
	if _, err := st.EndRun(ctx, rec.ID, seq, run, instance.Event{Tool: instance.RunTool, Status: instance.StatusDone, Message: "exited 0"}); err != nil {
		t.Fatal(err)
	}
	p := &instance.Poller{Source: st, After: never}
	e, err := p.WaitRun(ctx, rec.ID, instance.Which{Next: true, Since: since})
	if err != nil || e.RunID != lr.ID || e.Status != instance.StatusDone {
		t.Fatalf("WaitRun next since before the run = %+v, %v; want its done", e, err)
	}
	// The latest run, by default and by id, is answered at once too.
	for _, which := range []instance.Which{{}, {ID: lr.ID}} {
		if e, err := p.WaitRun(ctx, rec.ID, which); err != nil || e.RunID != lr.ID {
			t.Errorf("WaitRun %+v = %+v, %v", which, e, err)
		}
	}
	late, cancel := context.WithDeadline(ctx, time.Unix(0, 0))
	defer cancel()
	if e, err := p.WaitRun(late, rec.ID, instance.Which{Next: true, Since: time.Now()}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitRun next since after the run = %+v, %v; want to wait (the deadline)", e, err)
	}
}
