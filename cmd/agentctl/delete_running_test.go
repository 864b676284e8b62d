//go:build unix

package main

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestDeleteWhileRunning is the bug where `instance delete` (no --force)
// removed an instance whose client `instance run` was running, the client
// going on with its directory gone: through the binary, the delete is
// refused with exit 4, saying a run is in progress with the client's and
// agentctl's pids and how to proceed, and goes through once the run ends.
func TestDeleteWhileRunning(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	rec := e.create(ctx, "--agent", "opencode")
	run, stdout, errb := startWaitingRun(ctx, t, e, fakeClientOnPath(t, "opencode"), rec.ID)
	// On a failure before the run is ended below, end it (before cancel
	// kills it) so that it records its end and its client goes too.
	defer func() {
		if run.ProcessState == nil {
			_ = run.Process.Signal(syscall.SIGINT)
			_, _ = io.Copy(io.Discard, stdout)
			_ = run.Wait()
		}
	}()
	pid := waitRunStart(ctx, t, e, rec.ID, errb)

	res := e.run(ctx, "instance", "delete", rec.ID)
	if res.code != ExitInvalid {
		t.Fatalf("delete during a run: want exit %d\n%s", ExitInvalid, res)
	}
	for _, want := range []string{"a run is in progress", "opencode headless, pid " + strconv.Itoa(pid),
		"agentctl pid " + strconv.Itoa(run.Process.Pid), "instance logs " + rec.ID + " --follow", "--force"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("the refusal does not say %q\n%s", want, res)
		}
	}
	if res := e.run(ctx, "instance", "show", rec.ID); res.code != 0 {
		t.Fatalf("the refused delete deleted the instance:\n%s", res)
	}

	// The run ends on SIGINT, as its client does: exit 130.
	if err := run.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(stdout)
	var ee *exec.ExitError
	if err := run.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("instance run ended with %v, want exit 130; stdout %q, stderr %s", err, rest, errb.String())
	}
	if res := e.run(ctx, "instance", "delete", rec.ID); res.code != 0 {
		t.Fatalf("delete after the run:\n%s", res)
	}
}
