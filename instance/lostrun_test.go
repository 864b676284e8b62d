//go:build unix

package instance_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/internal/testkit"
)

// deadPID is the pid of a process that has ended (and been reaped).
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestEndLostRun: a run whose agentctl was killed (its "running" the last
// event, no end in last_run, the run lock free, the client gone) is
// recorded as failed, once; nothing else is.
func TestEndLostRun(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	start := func(t *testing.T, pid int) *instance.Record {
		t.Helper()
		rec := create(t, st, "auggie", func(o *instance.CreateOptions) { o.Workspace = t.TempDir() })
		run := instance.Run{Program: "auggie", Mode: "headless", PID: pid, StartedAt: time.Now().UTC()}
		if _, err := st.StartRun(ctx, rec.ID, run, instance.Event{Tool: instance.RunTool, Status: "running", Message: "started"}); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	last := func(t *testing.T, id string) *instance.Event {
		t.Helper()
		evs, err := st.Events(ctx, id, 0)
		if err != nil || len(evs) == 0 {
			t.Fatalf("events: %v, %v", evs, err)
		}
		return evs[len(evs)-1]
	}

	t.Run("lost", func(t *testing.T) {
		rec := start(t, deadPID(t))
		ended, err := st.EndLostRun(ctx, rec.ID)
		if err != nil || !ended {
			t.Fatalf("EndLostRun = %v, %v; want true", ended, err)
		}
		if e := last(t, rec.ID); e.Status != "failed" || e.Tool != instance.RunTool || !strings.Contains(e.Message, "ended without agentctl recording how") || !strings.Contains(e.Message, "its output is in run.log") {
			t.Errorf("last event %+v", e)
		}
		if r, err := st.Get(ctx, rec.ID); err != nil || r.LastRun == nil || r.LastRun.EndedAt == nil || r.LastRun.EndedAt.Before(r.LastRun.StartedAt) {
			t.Errorf("last_run after EndLostRun: %+v, %v; want an end after its start", r.LastRun, err)
		}
		if again, err := st.EndLostRun(ctx, rec.ID); err != nil || again {
			t.Errorf("a second EndLostRun = %v, %v; want false", again, err)
		}
	})
	t.Run("another host's run", func(t *testing.T) {
		// On a shared store (PostgreSQL) the pid is another host's: here
		// it is some other process, which must be left alone, and the run
		// is not this host's to end.
		pg := testkit.StartPostgres(t)
		shared, err := instance.Open(ctx, t.TempDir(), instance.WithStore(instance.StoreURL(pg.NewDatabase(t))), instance.WithHost("here"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { shared.Close() })
		here := exec.Command("sleep", "30")
		here.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // as a headless client leads its group
		if err := here.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = here.Process.Kill(); _ = here.Wait() }()
		rec := create(t, shared, "auggie", func(o *instance.CreateOptions) { o.Workspace = t.TempDir() })
		run := instance.Run{Program: "auggie", Mode: "headless", PID: here.Process.Pid, StartedAt: time.Now().UTC(), Host: "elsewhere"}
		if _, err := shared.StartRun(ctx, rec.ID, run, instance.Event{Tool: instance.RunTool, Status: "running", Message: "started"}); err != nil {
			t.Fatal(err)
		}
		if ended, err := shared.EndLostRun(ctx, rec.ID); err != nil || ended {
			t.Errorf("EndLostRun of another host's run = %v, %v; want false", ended, err)
		}
		if err := here.Process.Signal(syscall.Signal(0)); err != nil {
			t.Errorf("the process of that pid here was signalled: %v", err)
		}
		if r, err := shared.LastRun(ctx, rec.ID); err != nil || r == nil || r.EndedAt != nil {
			t.Errorf("last_run %+v (%v); want the run still running", r, err)
		}
		release, err := shared.RunLock(rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		var fe *instance.ForeignRunError
		if err := shared.CheckLostClient(ctx, rec.ID); !errors.As(err, &fe) || !errors.Is(err, instance.ErrConflict) || !strings.Contains(err.Error(), "is on host elsewhere and has not ended") {
			t.Errorf("a new run here while another host's runs: %v", err)
		}

		// A SQLite store is one machine's: a run recorded under another
		// host name (the container's name changed since) is this one's to
		// judge, and a lost one is ended, as ever.
		dir := t.TempDir()
		before, err := instance.Open(ctx, dir, instance.WithHost("old-name"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { before.Close() })
		renamed := create(t, before, "auggie", func(o *instance.CreateOptions) { o.Workspace = t.TempDir() })
		if _, err := before.StartRun(ctx, renamed.ID, instance.Run{Program: "auggie", Mode: "headless", PID: deadPID(t), StartedAt: time.Now().UTC()},
			instance.Event{Tool: instance.RunTool, Status: "running", Message: "started"}); err != nil {
			t.Fatal(err)
		}
		after, err := instance.Open(ctx, dir, instance.WithHost("new-name"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { after.Close() })
		if r, err := after.Get(ctx, renamed.ID); err != nil || after.Foreign(r) || r.Dir != renamed.Dir {
			t.Errorf("on SQLite, a record of this state directory made under an old host name: foreign %v, dir %s (%v); want this host's, in %s", after.Foreign(r), r.Dir, err, renamed.Dir)
		}
		if ended, err := after.EndLostRun(ctx, renamed.ID); err != nil || !ended {
			t.Errorf("EndLostRun on SQLite of a run recorded under an old host name = %v, %v; want true", ended, err)
		}
	})
	t.Run("run lock held", func(t *testing.T) {
		rec := start(t, deadPID(t))
		release, err := st.RunLock(rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		if ended, err := st.EndLostRun(ctx, rec.ID); err != nil || ended {
			t.Errorf("EndLostRun with the run lock held = %v, %v; want false", ended, err)
		}
	})
	t.Run("client alive", func(t *testing.T) {
		// A client that ignores SIGTERM, in a process group of its own as
		// a headless client is, outlives its killed agentctl: a new run is
		// refused while it runs; EndLostRun ends it (SIGKILL after the
		// grace) and records the run.
		client := exec.Command("sh", "-c", `trap "" TERM; echo up; sleep 60`)
		client.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := client.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := client.Start(); err != nil {
			t.Fatal(err)
		}
		reaped := make(chan struct{})
		waiting := false
		defer func() {
			syscall.Kill(-client.Process.Pid, syscall.SIGKILL)
			if waiting {
				<-reaped
			} else {
				client.Wait()
			}
		}()
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil { // the trap is set
			t.Fatal(err)
		}
		waiting = true
		go func() { client.Wait(); close(reaped) }()
		rec := start(t, client.Process.Pid)
		var lce *instance.LostClientError
		if err := st.CheckLostClient(ctx, rec.ID); !errors.As(err, &lce) || !errors.Is(err, instance.ErrConflict) ||
			!strings.Contains(err.Error(), "still runs, although the agentctl that ran it is gone") ||
			!strings.Contains(err.Error(), "kill -TERM -- -"+strconv.Itoa(client.Process.Pid)) {
			t.Fatalf("CheckLostClient with the client alive: %v", err)
		}
		st.SetLostClientGraceForTest(100 * time.Millisecond)
		defer st.SetLostClientGraceForTest(0)
		ended, err := st.EndLostRun(ctx, rec.ID)
		if err != nil || !ended {
			t.Fatalf("EndLostRun with the client alive = %v, %v; want true", ended, err)
		}
		select {
		case <-reaped:
		case <-time.After(time.Minute):
			t.Fatal("the client still runs after EndLostRun")
		}
		if e := last(t, rec.ID); e.Status != "failed" || !strings.Contains(e.Message, "its client still ran and was ended (SIGKILL, 100ms after SIGTERM)") {
			t.Errorf("last event %+v", e)
		}
		if err := st.CheckLostClient(ctx, rec.ID); err != nil {
			t.Errorf("CheckLostClient once the client is gone: %v", err)
		}
	})
	t.Run("ended", func(t *testing.T) {
		rec := start(t, deadPID(t))
		r, _ := st.Get(ctx, rec.ID)
		run := *r.LastRun
		end, code := time.Now().UTC(), 0
		run.EndedAt, run.ExitCode = &end, &code
		if _, err := st.EndRun(ctx, rec.ID, 0, run, instance.Event{Tool: instance.RunTool, Status: "done", Message: "exited 0"}); err != nil {
			t.Fatal(err)
		}
		if ended, err := st.EndLostRun(ctx, rec.ID); err != nil || ended {
			t.Errorf("EndLostRun after a recorded end = %v, %v; want false", ended, err)
		}
	})
	t.Run("the model reported progress since", func(t *testing.T) {
		// report_progress during the run (running, blocked on a question)
		// does not end it: the run is still lost.
		rec := start(t, deadPID(t))
		for _, status := range []string{"running", "blocked"} {
			if _, err := st.AddEvent(ctx, instance.Event{InstanceID: rec.ID, Tool: "report_progress", Status: status, Message: "working"}); err != nil {
				t.Fatal(err)
			}
		}
		if ended, err := st.EndLostRun(ctx, rec.ID); err != nil || !ended {
			t.Fatalf("EndLostRun after the model's progress = %v, %v; want true", ended, err)
		}
		if e := last(t, rec.ID); e.Status != "failed" || e.Tool != instance.RunTool {
			t.Errorf("last event %+v, want the run's failed", e)
		}
	})
	t.Run("the model's final word stands", func(t *testing.T) {
		rec := start(t, deadPID(t))
		if _, err := st.AddEvent(ctx, instance.Event{InstanceID: rec.ID, Tool: "report_progress", Status: "done", Message: "finished"}); err != nil {
			t.Fatal(err)
		}
		if ended, err := st.EndLostRun(ctx, rec.ID); err != nil || ended {
			t.Errorf("EndLostRun after the model's done = %v, %v; want false (no event added)", ended, err)
		}
		if e := last(t, rec.ID); e.Status != "done" || e.Tool != "report_progress" {
			t.Errorf("last event %+v, want the model's done", e)
		}
		if r, err := st.Get(ctx, rec.ID); err != nil || r.LastRun == nil || r.LastRun.EndedAt == nil {
			t.Errorf("last_run after the model's done: %+v, %v; want it ended", r.LastRun, err)
		}
	})
	t.Run("pid reused", func(t *testing.T) {
		// The client's pid now names a process that started long after
		// the run: another one, so the client is gone.
		if _, err := os.Stat("/proc/self/stat"); err != nil {
			t.Skip("no /proc: a process's start time is not known here")
		}
		other := exec.Command("sleep", "60")
		if err := other.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { other.Process.Kill(); other.Wait() }()
		rec := create(t, st, "auggie", func(o *instance.CreateOptions) { o.Workspace = t.TempDir() })
		run := instance.Run{Program: "auggie", Mode: "headless", PID: other.Process.Pid, StartedAt: time.Now().UTC().Add(-time.Hour)}
		if _, err := st.StartRun(ctx, rec.ID, run, instance.Event{Tool: instance.RunTool, Status: "running", Message: "started"}); err != nil {
			t.Fatal(err)
		}
		if ended, err := st.EndLostRun(ctx, rec.ID); err != nil || !ended {
			t.Errorf("EndLostRun with the pid reused by a later process = %v, %v; want true", ended, err)
		}
	})
	t.Run("zombie", func(t *testing.T) {
		// A child not waited for is a zombie once it exits: gone, though
		// signal 0 still finds it.
		cmd := exec.Command("true")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Wait()
		rec := start(t, cmd.Process.Pid)
		deadline := time.Now().Add(time.Minute)
		for {
			ended, err := st.EndLostRun(ctx, rec.ID)
			if err != nil {
				t.Fatal(err)
			}
			if ended {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("a run whose client is a zombie was never recorded as ended")
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}
