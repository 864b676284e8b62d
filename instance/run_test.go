//go:build unix

package instance_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestRunLockWhileWatched: Running (what `instance logs --follow` asks,
// several times a second) never makes a run be refused, while a run that
// holds the lock refuses a second one and Running sees it.
func TestRunLockWhileWatched(t *testing.T) {
	st := openStore(t)
	rec := create(t, st, "opencode", nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				if _, err := st.Running(rec.ID); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	for i := range 300 {
		release, err := st.RunLock(rec.ID)
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("attempt %d: a run was refused while only watched: %v", i, err)
		}
		release()
	}
	close(stop)
	wg.Wait()

	release, err := st.RunLock(rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if running, err := st.Running(rec.ID); err != nil || !running {
		t.Fatalf("Running = %v, %v during a run", running, err)
	}
	if _, err := st.RunLock(rec.ID); err == nil || !strings.Contains(err.Error(), "is already being run") || !strings.Contains(err.Error(), "instance logs "+rec.ID+" --follow") {
		t.Fatalf("a second run: %v", err)
	}
}

// TestRunningWatchersDoNotSeeEachOther: many watchers asking Running at
// once (several `instance logs --follow`) see no run while none is under
// way; a watcher's look took the lock exclusively, so two at one moment
// each took the other's for a run, and a follower ended early.
func TestRunningWatchersDoNotSeeEachOther(t *testing.T) {
	st := openStore(t)
	rec := create(t, st, "opencode", nil)
	release, err := st.RunLock(rec.ID) // the lock file exists, as after a run
	if err != nil {
		t.Fatal(err)
	}
	release()
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := 0
	for range 4 {
		wg.Go(func() {
			for range 5000 {
				running, err := st.Running(rec.ID)
				if err != nil {
					t.Error(err)
					return
				}
				if running {
					mu.Lock()
					seen++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if seen > 0 {
		t.Errorf("Running saw a run %d times of 20000 while none was under way", seen)
	}
}

// TestRunLockPID: the lock file names the running agentctl, written over
// whatever a run before it left (a longer pid, or text), with nothing of
// that left behind; the refusal of a second run quotes it.
func TestRunLockPID(t *testing.T) {
	st := openStore(t)
	rec := create(t, st, "opencode", nil)
	path := filepath.Join(st.Dir(), "instances", rec.ID, ".run.lock")
	if err := os.WriteFile(path, []byte("4194304\nleft over by an older agentctl\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	release, err := st.RunLock(rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(data)), strconv.Itoa(os.Getpid()); got != want {
		t.Fatalf("the lock file holds %q, want the pid %s", data, want)
	}
	_, err = st.RunLock(rec.ID)
	if err == nil || !strings.Contains(err.Error(), "(agentctl pid "+strconv.Itoa(os.Getpid())+")") {
		t.Fatalf("a second run's refusal should name the running agentctl: %v", err)
	}
}
