package main

import (
	"bytes"
	"context"
	"fmt"
	"github.com/agentctl/agentctl/instance"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterruptedExitCodes: an interrupted wait or followed event stream
// exits 128+signal, quietly (the user knows they interrupted it).
func TestInterruptedExitCodes(t *testing.T) {
	t.Parallel()
	bin := realBinary(t)
	dir := t.TempDir()
	env := append(cleanEnviron(), "AGENTCTL_STATE_DIR="+filepath.Join(dir, "state"), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "cfg"))
	create := exec.Command(bin, "instance", "create", "--agent", "auggie", "--name", "w", "--workspace", dir)
	create.Env = env
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	for _, args := range [][]string{
		{"instance", "wait", "w", "--status", "done"},
		{"instance", "events", "w", "--follow"},
	} {
		for sig, want := range map[syscall.Signal]int{syscall.SIGINT: 130, syscall.SIGTERM: 143} {
			cmd := exec.Command(bin, args...)
			cmd.Env = env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitForHandler(t, cmd.Process.Pid, sig)
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != want {
				t.Errorf("%s, %s: %v, want exit %d", args[1], sig, err, want)
			}
			if stderr.Len() != 0 {
				t.Errorf("%s, %s: stderr %q", args[1], sig, stderr.String())
			}
		}
	}
}

// waitForHandler waits until the process has opened the state database,
// which it does after installing its signal handler (the Go runtime's own
// SigCgt mask cannot tell: it catches every signal from the start).
func waitForHandler(t *testing.T, pid int, sig syscall.Signal) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && strings.HasSuffix(target, "state.db") {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("process %d never opened its state before %s", pid, sig)
}

// TestFollowedEventsEndOnASignal: `instance events --follow` stopped by a
// signal ends with the interruption, which exits 128+N like every
// interrupted command (it used to end quietly with exit 0).
func TestFollowedEventsEndOnASignal(t *testing.T) {
	t.Parallel()
	f := newTestFactory(t)
	rec := f.create(t, "auggie")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		ctx, cancel := context.WithCancelCause(context.Background())
		opts := &InstanceEventsOptions{
			IO: f.IOStreams, Store: f.Store, Instance: rec.ID, Follow: true, Output: formatTable,
			// The signal comes while the command waits for the next poll.
			Poll: func(src instance.EventSource) *instance.Poller {
				return &instance.Poller{Source: src, After: func(time.Duration) <-chan time.Time {
					cancel(signalError{sig})
					return nil
				}}
			},
		}
		err := instanceEventsRun(ctx, opts)
		if code := exitCode(ctx, err); code != 128+int(sig) {
			t.Errorf("%s: %v, exit %d; want exit %d", sig, err, code, 128+int(sig))
		}
		cancel(nil)
	}
}
