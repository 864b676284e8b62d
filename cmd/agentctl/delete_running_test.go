//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// stubWaitingClient is an opencode that runs until $STUB_DIR/release exists.
const stubWaitingClient = `#!/bin/sh
while [ ! -e "$STUB_DIR/release" ]; do sleep 0.05; done
echo released
`

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

	stub := t.TempDir()
	if err := os.WriteFile(filepath.Join(stub, "opencode"), []byte(stubWaitingClient), 0o755); err != nil {
		t.Fatal(err)
	}
	release := func() {
		if err := os.WriteFile(filepath.Join(stub, "release"), nil, 0o644); err != nil {
			t.Error(err)
		}
	}
	run := exec.CommandContext(ctx, e.bin, "instance", "run", rec.ID, "--prompt", "hold on")
	run.Env = append(e.cliEnv(), "PATH="+stub+string(os.PathListSeparator)+os.Getenv("PATH"), "STUB_DIR="+stub)
	run.Dir = e.work
	var runOut bytes.Buffer
	run.Stdout, run.Stderr = &runOut, &runOut
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		release()
		_ = run.Wait()
	})

	// Once the run has recorded its start, its client's pid is known.
	var shown struct {
		LastRun *struct {
			PID     int     `json:"pid"`
			EndedAt *string `json:"ended_at"`
		} `json:"last_run"`
	}
	for {
		out := e.mustRun(ctx, "instance", "show", rec.ID, "-o", "json")
		if err := json.Unmarshal([]byte(out), &shown); err != nil {
			t.Fatalf("instance show -o json: %v\n%s", err, out)
		}
		if shown.LastRun != nil && shown.LastRun.PID > 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the run never recorded its start\n%s", runOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if shown.LastRun.EndedAt != nil {
		t.Fatalf("the run ended before the delete:\n%s", runOut.String())
	}

	res := e.run(ctx, "instance", "delete", rec.ID)
	if res.code != ExitInvalid {
		t.Fatalf("delete during a run: want exit %d\n%s", ExitInvalid, res)
	}
	for _, want := range []string{"a run is in progress", "opencode headless, pid " + strconv.Itoa(shown.LastRun.PID),
		"agentctl pid " + strconv.Itoa(run.Process.Pid), "instance logs " + rec.ID + " --follow", "--force"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("the refusal does not say %q\n%s", want, res)
		}
	}
	if res := e.run(ctx, "instance", "show", rec.ID); res.code != 0 {
		t.Fatalf("the refused delete deleted the instance:\n%s", res)
	}

	release()
	if err := run.Wait(); err != nil {
		t.Fatalf("instance run: %v\n%s", err, runOut.String())
	}
	if res := e.run(ctx, "instance", "delete", rec.ID); res.code != 0 {
		t.Fatalf("delete after the run:\n%s", res)
	}
}
