//go:build unix

package instance_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/instance"
)

// holdRunLock takes .run.lock of instance rec exclusively, as a real flock
// on a descriptor of its own (what `instance run` holds for the run), with
// pid as the agentctl pid the file names, until release.
func holdRunLock(t *testing.T, rec *instance.Record, pid string) (release func()) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(rec.Dir, ".run.lock"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		t.Fatalf("flock: %v", err)
	}
	if _, err := f.WriteString(pid + "\n"); err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if !done {
			done = true
			f.Close()
		}
	}
	t.Cleanup(release)
	return release
}

// checkKept fails the test unless a refused delete kept rec's record and
// its files.
func checkKept(t *testing.T, st *instance.Store, rec *instance.Record) {
	t.Helper()
	if _, err := st.Get(context.Background(), rec.ID); err != nil {
		t.Fatalf("the refused delete removed the record: %v", err)
	}
	if _, err := os.Stat(rec.MCPConfigPath); err != nil {
		t.Fatalf("the refused delete removed the files: %v", err)
	}
}

// TestDeleteRefusesARunningInstance is the bug where `instance delete`
// (without --force) removed an instance whose client `instance run` was
// running: the run's lock now refuses it, as an endpoint's serve lock
// does (ErrConflict, exit 4), saying a run is in progress, with its pids,
// and how to proceed.
func TestDeleteRefusesARunningInstance(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	rec := create(t, st, "opencode", nil)
	release := holdRunLock(t, rec, "31337")

	refused := func(want ...string) {
		t.Helper()
		_, err := st.Delete(ctx, rec.ID)
		var re *instance.RunningError
		if !errors.Is(err, instance.ErrConflict) || !errors.As(err, &re) {
			t.Fatalf("deleting an instance being run: want a RunningError, got %v", err)
		}
		for _, w := range append([]string{rec.ID, "a run is in progress", "agentctl pid 31337", "wait for it",
			"agentctl instance logs " + rec.ID + " --follow", "kill 31337", "--force"}, want...) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q does not say %q", err, w)
			}
		}
		checkKept(t, st, rec)
	}
	// Before the run has recorded its start, and after: then the client's
	// pid is in the message too.
	refused()
	started := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if _, err := st.StartRun(ctx, rec.ID, instance.Run{Program: "opencode", Mode: "headless", PID: 4242, StartedAt: started},
		instance.Event{Tool: instance.RunTool, Status: "running", Message: "started"}); err != nil {
		t.Fatal(err)
	}
	refused("opencode headless, pid 4242, started 2026-03-01T12:00:00Z")

	// A run's client serves its instance too: the run is what is named.
	unserve, err := st.ServeLock(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	refused()
	unserve()

	// The run over, the delete goes through.
	release()
	if _, err := st.Delete(ctx, rec.ID); err != nil {
		t.Fatalf("delete after the run: %v", err)
	}
}

// TestRunLockAfterADelete: a run that waited for the run lock while a
// delete held it (the delete holds it while it removes the directory) gets
// a lock on a removed file, and must say the instance was deleted rather
// than run it. Here the test is the delete: it holds the lock, removes the
// directory and lets go while RunLock retries. On a machine too slow for
// RunLock to open the file before the removal, or to retry until the
// release, RunLock fails another way and the test proves less, but passes.
func TestRunLockAfterADelete(t *testing.T) {
	st := openStore(t)
	rec := create(t, st, "opencode", nil)
	release := holdRunLock(t, rec, "31337")
	got := make(chan error, 1)
	go func() {
		unlock, err := st.RunLock(rec.ID)
		if err == nil {
			unlock()
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond) // let RunLock open the file and wait
	if err := os.RemoveAll(rec.Dir); err != nil {
		t.Fatal(err)
	}
	release()
	if err := <-got; err == nil {
		t.Fatal("RunLock took the lock of a removed instance directory")
	} else if !errors.Is(err, instance.ErrDeleted) {
		t.Logf("RunLock failed otherwise (a slow machine): %v", err)
	}
}
