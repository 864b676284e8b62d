//go:build unix

package instance_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/internal/testkit"
)

// The test binary, run with these set, is a helper process that serves an
// instance (holds its serve lock) until it is killed.
const (
	helperStateEnv    = "AGENTCTL_TEST_SERVE_LOCK_STATE"
	helperInstanceEnv = "AGENTCTL_TEST_SERVE_LOCK_INSTANCE"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperStateEnv); dir != "" {
		serveLockHelper(dir, os.Getenv(helperInstanceEnv))
	}
	if path := os.Getenv(editHelperEnv); path != "" {
		editHelper(path)
	}
	code := m.Run()
	testkit.StopSharedPostgres() // started by the store conformance suite
	os.Exit(code)
}

func serveLockHelper(dir, id string) {
	ctx := context.Background()
	st, err := instance.Open(ctx, dir)
	if err == nil {
		_, err = st.ServeLock(ctx, id)
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin) // until killed
	os.Exit(0)
}

func checkServedRefusal(t *testing.T, st *instance.Store, rec *instance.Record) {
	t.Helper()
	ctx := context.Background()
	if live, err := st.Live(ctx, rec.ID); err != nil || !live {
		t.Fatalf("Live = %v, %v; want true", live, err)
	}
	_, err := st.Delete(ctx, rec.ID)
	var served *instance.ServedError
	if !errors.Is(err, instance.ErrConflict) || !errors.As(err, &served) {
		t.Fatalf("deleting a served instance: want a ServedError, got %v", err)
	}
	for _, want := range []string{rec.ID, "an endpoint", "serving it (agentctl mcp serve, or a session of agentctl serve)", "--force"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	checkKept(t, st, rec)
}

func TestDeleteRefusesAServedInstance(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	rec := create(t, st, "claude-code", nil)
	if live, err := st.Live(ctx, rec.ID); err != nil || live {
		t.Fatalf("never served: Live = %v, %v", live, err)
	}

	// Two endpoints serve it at once; the lock is held by another goroutine.
	locked := make(chan func())
	go func() {
		release, err := st.ServeLock(ctx, rec.ID)
		if err != nil {
			t.Error(err)
			release = func() {}
		}
		locked <- release
	}()
	release1 := <-locked
	release2, err := st.ServeLock(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkServedRefusal(t, st, rec)
	release1()
	release1() // twice is harmless
	checkServedRefusal(t, st, rec)
	release2()

	if live, err := st.Live(ctx, rec.ID); err != nil || live {
		t.Fatalf("released: Live = %v, %v", live, err)
	}
	if _, err := st.Delete(ctx, rec.ID); err != nil {
		t.Fatalf("delete after the endpoints ended: %v", err)
	}
	if _, err := st.ServeLock(ctx, rec.ID); !errors.Is(err, instance.ErrDeleted) {
		t.Fatalf("serving a deleted instance: want ErrDeleted, got %v", err)
	}
	if live, err := st.Live(ctx, rec.ID); err != nil || live {
		t.Fatalf("deleted: Live = %v, %v", live, err)
	}
}

// TestForceDeletesAnInstanceInUse: --force deletes an instance an endpoint
// serves, or whose client a run is running.
func TestForceDeletesAnInstanceInUse(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	for name, hold := range map[string]func(*testing.T, *instance.Record) func(){
		"served": func(t *testing.T, rec *instance.Record) func() {
			release, err := st.ServeLock(ctx, rec.ID)
			if err != nil {
				t.Fatal(err)
			}
			return release
		},
		// As a run holds it (see delete_running_test.go).
		"run": func(t *testing.T, rec *instance.Record) func() { return holdRunLock(t, rec, "31337") },
	} {
		t.Run(name, func(t *testing.T) {
			rec := create(t, st, "claude-code", nil)
			defer hold(t, rec)()
			if _, err := st.DeleteInstance(ctx, rec.ID, instance.DeleteOptions{Force: true}); err != nil {
				t.Fatalf("a forced delete: %v", err)
			}
			if _, err := st.Get(ctx, rec.ID); !errors.Is(err, instance.ErrNotFound) {
				t.Fatalf("record left: %v", err)
			}
			if _, err := os.Stat(rec.Dir); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("directory left: %v", err)
			}
		})
	}
}

// TestServeLockWaitsForADelete: an endpoint starting while a delete holds
// the instance learns that it was deleted.
func TestServeLockWaitsForADelete(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	rec := create(t, st, "claude-code", nil)
	unlock := st.HoldDeleteLockForTest(rec.ID)
	got := make(chan error, 1)
	go func() {
		release, err := st.ServeLock(ctx, rec.ID)
		if err == nil {
			release()
		}
		got <- err
	}()
	if _, err := st.DeleteInstance(ctx, rec.ID, instance.DeleteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	unlock()
	if err := <-got; !errors.Is(err, instance.ErrDeleted) {
		t.Fatalf("want ErrDeleted, got %v", err)
	}
}

func TestServeLockNeedsAnID(t *testing.T) {
	st := openStore(t)
	rec := create(t, st, "claude-code", func(o *instance.CreateOptions) { o.Name = "lbl" })
	for _, ref := range []string{"lbl", rec.ID[:6], strings.ToUpper(rec.ID), "../x"} {
		if _, err := st.ServeLock(context.Background(), ref); !errors.Is(err, instance.ErrInvalid) {
			t.Errorf("ServeLock(%q) = %v, want ErrInvalid", ref, err)
		}
		if _, err := st.Live(context.Background(), ref); !errors.Is(err, instance.ErrInvalid) {
			t.Errorf("Live(%q) = %v, want ErrInvalid", ref, err)
		}
	}
}

// TestServeLockDiesWithItsProcess: the lock is the kernel's, so an endpoint
// killed outright (SIGKILL, no cleanup) leaves nothing that blocks a delete.
func TestServeLockDiesWithItsProcess(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	rec := create(t, st, "claude-code", nil)

	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperStateEnv+"="+st.Dir(), helperInstanceEnv+"="+rec.ID)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "locked\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper: %q %v\n%s", line, err, stderr.String())
	}

	checkServedRefusal(t, st, rec)
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()

	if live, err := st.Live(ctx, rec.ID); err != nil || live {
		t.Fatalf("after the endpoint was killed: Live = %v, %v", live, err)
	}
	if _, err := st.Delete(ctx, rec.ID); err != nil {
		t.Fatalf("delete after the endpoint was killed: %v", err)
	}
}
