//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestOneRunAfterSIGKILL: `instance run` killed with SIGKILL leaves a
// client that ignores SIGTERM running; a second run is refused while it
// runs, naming it; `instance wait` finds the run lost, ends the client
// (SIGKILL after the grace) and reports the run failed; then a run starts.
func TestOneRunAfterSIGKILL(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the client's parent-death signal and /proc are Linux's") // the refusal itself is unix-wide
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	rec := e.create(ctx, "--agent", "opencode")
	path := fakeClientOnPath(t, "opencode")
	cmd, _, stderr := startWaitingRunEnv(ctx, t, e, path, rec.ID, "FAKECLIENT_WAIT=ignore-term", "FAKECLIENT_TIMEOUT=5m")
	client := waitRunStart(ctx, t, e, rec.ID, stderr)
	defer syscall.Kill(-client, syscall.SIGKILL)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The kernel's SIGTERM (the parent-death signal) is ignored: the
	// client runs on.
	if err := syscall.Kill(client, 0); err != nil {
		t.Fatalf("the client (pid %d) is gone after its agentctl was killed: %v", client, err)
	}
	res, rep := e.runWithFake(ctx, path, nil, "instance", "run", rec.ID, "--prompt", "second")
	if res.code != ExitInvalid || rep != nil || !strings.Contains(res.stderr, "still runs, although the agentctl that ran it is gone") ||
		!strings.Contains(res.stderr, "pid "+strconv.Itoa(client)) {
		t.Fatalf("a second run beside the lost client: want it refused (exit %d) naming the client, and no client started\n%s", ExitInvalid, res)
	}
	if err := syscall.Kill(client, 0); err != nil {
		t.Fatalf("the refused run touched the client: %v", err)
	}
	w := e.run(ctx, "instance", "wait", rec.ID, "--timeout", "3m")
	if w.code != ExitFailed || !strings.Contains(w.stderr, "its client still ran and was ended (SIGKILL") {
		t.Fatalf("wait on the lost run: want exit 6 saying the client was ended\n%s", w)
	}
	if err := syscall.Kill(client, 0); err == nil && processRuns(client) {
		t.Fatalf("the lost client (pid %d) still runs after wait ended it", client)
	}
	if res, _ := e.runWithFake(ctx, path, nil, "instance", "run", rec.ID, "--prompt", "third"); res.code != 0 {
		t.Fatalf("a run once the lost client is gone\n%s", res)
	}
}

// processRuns reports whether pid is a process that is not a zombie.
func processRuns(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || !bytes.HasPrefix(bytes.TrimSpace(stat[i+1:]), []byte("Z"))
}
