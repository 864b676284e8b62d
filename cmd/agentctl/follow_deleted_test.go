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

// TestLogsFollowEndsWhenDeleted: `instance logs --follow` with no run
// under way ends, exit 3, once the instance is deleted, instead of waiting
// for a run that can no longer come.
func TestLogsFollowEndsWhenDeleted(t *testing.T) {
	t.Parallel()
	f := newTestFactory(t, "NO_COLOR=1")
	id := f.createNamed(t, "auggie", "followed")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := f.Store(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := st.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	// An earlier run's output: printed once the command follows.
	if err := os.WriteFile(filepath.Join(r.Dir, instance.RunLogFile), []byte("an earlier run\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	ios := &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &lockedBuffer{}, getenv: func(string) string { return "" }}
	done := make(chan error, 1)
	go func() {
		done <- instanceLogsRun(ctx, &InstanceLogsOptions{IO: ios, Store: f.Store, Instance: "followed", Follow: true, PollInterval: 10 * time.Millisecond})
	}()
	for !strings.Contains(out.String(), "an earlier run") {
		select {
		case err := <-done:
			t.Fatalf("logs --follow ended before following: %v", err)
		case <-ctx.Done():
			t.Fatal("logs --follow printed nothing")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := st.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, instance.ErrDeleted) || exitCode(context.Background(), err) != ExitNotFound || !strings.Contains(err.Error(), "no run of it is left to follow") {
			t.Errorf("logs --follow of a deleted instance: %v (exit %d), want it deleted, exit %d", err, exitCode(context.Background(), err), ExitNotFound)
		}
	case <-ctx.Done():
		t.Fatal("logs --follow kept waiting after the instance was deleted")
	}
}

// TestLogsFollowWaitsOutADelete: a delete holds the run's lock for a
// moment (a run, from --follow's side), moves the instance's directory
// aside, and only then removes its record; --follow between those steps
// must not end as if a run had finished, but say the instance was deleted
// once it is.
func TestLogsFollowWaitsOutADelete(t *testing.T) {
	t.Parallel()
	f := newTestFactory(t, "NO_COLOR=1")
	id := f.createNamed(t, "auggie", "followed")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := f.Store(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := st.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(r.Dir, instance.RunLogFile)
	appendLog := func(s string) {
		t.Helper()
		lf, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer lf.Close()
		if _, err := lf.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	var out lockedBuffer
	ios := &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &lockedBuffer{}, getenv: func(string) string { return "" }}
	done := make(chan error, 1)
	go func() {
		done <- instanceLogsRun(ctx, &InstanceLogsOptions{IO: ios, Store: f.Store, Instance: "followed", Follow: true, PollInterval: 10 * time.Millisecond})
	}()
	printed := func(s string) {
		t.Helper()
		for !strings.Contains(out.String(), s) {
			select {
			case err := <-done:
				t.Fatalf("logs --follow ended before printing %q: %v", s, err)
			case <-ctx.Done():
				t.Fatalf("logs --follow never printed %q", s)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	appendLog("before\n")
	printed("before")
	// The delete's first step: the run's lock, held while --follow polls
	// (it polls again to print each line).
	release, err := st.RunLock(id)
	if err != nil {
		t.Fatal(err)
	}
	appendLog("locked\n")
	printed("locked")
	appendLog("still locked\n")
	printed("still locked")
	// The second: the directory moved aside, the record still there.
	if err := os.Rename(r.Dir, r.Dir+".aside"); err != nil {
		t.Fatal(err)
	}
	release()
	select {
	case err := <-done:
		t.Fatalf("logs --follow ended while the delete was under way: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	// The last: the record removed.
	if _, err := st.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, instance.ErrDeleted) || exitCode(context.Background(), err) != ExitNotFound {
			t.Errorf("logs --follow of a deleted instance: %v, want it deleted, exit %d", err, ExitNotFound)
		}
	case <-ctx.Done():
		t.Fatal("logs --follow kept waiting after the instance was deleted")
	}
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
