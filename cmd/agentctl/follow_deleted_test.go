package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/instance"
)

// follower is `instance logs followed --follow` running in the test's
// process on an instance of its own, with a line of an earlier run in its
// log already printed: it is following.
type follower struct {
	ctx     context.Context
	st      *instance.Store
	rec     *instance.Record
	out     lockedBuffer
	done    chan error
	logPath string
}

func startFollower(t *testing.T) *follower {
	t.Helper()
	f := newTestFactory(t, "NO_COLOR=1")
	id := f.createNamed(t, "auggie", "followed")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	st, err := f.Store(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fw := &follower{ctx: ctx, st: st, done: make(chan error, 1)}
	if fw.rec, err = st.Get(ctx, id); err != nil {
		t.Fatal(err)
	}
	fw.logPath = filepath.Join(fw.rec.Dir, instance.RunLogFile)
	ios := &IOStreams{In: strings.NewReader(""), Out: &fw.out, ErrOut: &lockedBuffer{}, getenv: func(string) string { return "" }}
	go func() {
		fw.done <- instanceLogsRun(ctx, &InstanceLogsOptions{IO: ios, Store: f.Store, Instance: "followed", Follow: true, PollInterval: 10 * time.Millisecond})
	}()
	fw.appendLog(t, "an earlier run\n")
	fw.printed(t, "an earlier run")
	return fw
}

// appendLog adds s to the instance's run log.
func (fw *follower) appendLog(t *testing.T, s string) {
	t.Helper()
	lf, err := os.OpenFile(fw.logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if _, err := lf.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// printed waits until the follower has printed s.
func (fw *follower) printed(t *testing.T, s string) {
	t.Helper()
	for !strings.Contains(fw.out.String(), s) {
		select {
		case err := <-fw.done:
			t.Fatalf("logs --follow ended before printing %q: %v", s, err)
		case <-fw.ctx.Done():
			t.Fatalf("logs --follow never printed %q", s)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// endsDeleted deletes the instance's record and waits for the follower to
// say it was deleted (exit 3).
func (fw *follower) endsDeleted(t *testing.T) {
	t.Helper()
	if _, err := fw.st.Delete(fw.ctx, fw.rec.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-fw.done:
		if !errors.Is(err, instance.ErrDeleted) || exitCode(context.Background(), err) != ExitNotFound || !strings.Contains(err.Error(), "no run of it is left to follow") {
			t.Errorf("logs --follow of a deleted instance: %v (exit %d), want it deleted, exit %d", err, exitCode(context.Background(), err), ExitNotFound)
		}
	case <-fw.ctx.Done():
		t.Fatal("logs --follow kept waiting after the instance was deleted")
	}
}

// TestLogsFollowEndsWhenDeleted: `instance logs --follow` with no run
// under way ends, exit 3, once the instance is deleted, instead of waiting
// for a run that can no longer come.
func TestLogsFollowEndsWhenDeleted(t *testing.T) {
	t.Parallel()
	startFollower(t).endsDeleted(t)
}

// TestLogsFollowWaitsOutADelete: a delete holds the run's lock for a
// moment (a run, from --follow's side), moves the instance's directory
// aside, and only then removes its record; --follow between those steps
// must not end as if a run had finished, but say the instance was deleted
// once it is.
func TestLogsFollowWaitsOutADelete(t *testing.T) {
	t.Parallel()
	fw := startFollower(t)
	// The delete's first step: the run's lock, held while --follow polls
	// (it polls again to print each line).
	release, err := fw.st.RunLock(fw.rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	fw.appendLog(t, "locked\n")
	fw.printed(t, "locked")
	fw.appendLog(t, "still locked\n")
	fw.printed(t, "still locked")
	// The second: the directory moved aside, the record still there.
	if err := os.Rename(fw.rec.Dir, fw.rec.Dir+".aside"); err != nil {
		t.Fatal(err)
	}
	release()
	select {
	case err := <-fw.done:
		t.Fatalf("logs --follow ended while the delete was under way: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	// The last: the record removed.
	fw.endsDeleted(t)
}

// TestQuestionsWaitEndsWhenDeleted: what `instance questions INSTANCE
// --wait` counts says the instance was deleted (exit 3) once it is,
// instead of no question yet, forever.
func TestQuestionsWaitEndsWhenDeleted(t *testing.T) {
	t.Parallel()
	f := newTestFactory(t, "NO_COLOR=1")
	id := f.createNamed(t, "auggie", "asker")
	ctx := context.Background()
	st, err := f.Store(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n, err := openQuestionCount(ctx, st, id); n != 0 || err != nil {
		t.Fatalf("before any question: %d, %v; want 0, nil", n, err)
	}
	if _, err := st.AddQuestion(ctx, id, "Which database?", nil); err != nil {
		t.Fatal(err)
	}
	if n, err := openQuestionCount(ctx, st, id); n != 1 || err != nil {
		t.Fatalf("with a question open: %d, %v; want 1, nil", n, err)
	}
	if _, err := st.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	n, err := openQuestionCount(ctx, st, id)
	if n != 0 || !errors.Is(err, instance.ErrDeleted) || exitCode(context.Background(), err) != ExitNotFound {
		t.Errorf("deleted: %d, %v (exit %d); want 0 and the instance deleted, exit %d", n, err, exitCode(context.Background(), err), ExitNotFound)
	}
}

// TestEventsFollowEndsDeletedWithExit3: `instance events --follow` ends
// with exit 3 once the instance is deleted, as logs --follow, questions
// --wait and wait do, so that a script tells it from an interruption; it
// ended with exit 0.
func TestEventsFollowEndsDeletedWithExit3(t *testing.T) {
	t.Parallel()
	f := newTestFactory(t, "NO_COLOR=1")
	id := f.createNamed(t, "auggie", "watched")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := f.Store(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var out lockedBuffer
	ios := &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &lockedBuffer{}, getenv: func(string) string { return "" }}
	done := make(chan error, 1)
	go func() {
		done <- instanceEventsRun(ctx, &InstanceEventsOptions{IO: ios, Store: f.Store, Instance: id, Follow: true, Output: "jsonl", Poll: func(s instance.EventSource) *instance.Poller {
			return &instance.Poller{Source: s, Interval: 10 * time.Millisecond}
		}})
	}()
	if _, err := st.RecordProgress(ctx, id, "report_progress", "running", "working", nil); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(out.String(), "working") {
		if ctx.Err() != nil {
			t.Fatal("the event was never printed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := st.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, instance.ErrDeleted) || exitCode(context.Background(), err) != ExitNotFound {
			t.Errorf("events --follow of a deleted instance: %v (exit %d), want exit %d", err, exitCode(context.Background(), err), ExitNotFound)
		}
	case <-ctx.Done():
		t.Fatal("events --follow kept waiting after the instance was deleted")
	}
}
