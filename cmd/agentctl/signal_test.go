package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterruptedWaitExitCodes: an interrupted command exits 128+signal,
// quietly (the user knows they interrupted it).
func TestInterruptedWaitExitCodes(t *testing.T) {
	bin := realBinary(t)
	dir := t.TempDir()
	env := append(os.Environ(), "AGENTCTL_STATE_DIR="+filepath.Join(dir, "state"), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "cfg"))
	create := exec.Command(bin, "instance", "create", "--agent", "auggie", "--name", "w", "--workspace", dir)
	create.Env = env
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	for sig, want := range map[syscall.Signal]int{syscall.SIGINT: 130, syscall.SIGTERM: 143} {
		wait := exec.Command(bin, "instance", "wait", "w", "--status", "done")
		wait.Env = env
		var stderr bytes.Buffer
		wait.Stderr = &stderr
		if err := wait.Start(); err != nil {
			t.Fatal(err)
		}
		waitForHandler(t, wait.Process.Pid, sig)
		wait.Process.Signal(sig)
		err := wait.Wait()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != want {
			t.Fatalf("%s: %v, want exit %d", sig, err, want)
		}
		if stderr.Len() != 0 {
			t.Fatalf("%s: stderr %q", sig, stderr.String())
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
