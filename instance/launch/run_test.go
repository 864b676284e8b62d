//go:build unix

package launch

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/internal/testkit"
)

// recordedRun makes a store (opened with opts) with one instance, and a
// headless plan of the test binary as its client (see child), logging to
// the instance's run.log.
func recordedRun(t *testing.T, mode string, opts ...instance.Option) (*instance.Store, *instance.Record, *Plan) {
	t.Helper()
	ctx := context.Background()
	st, err := instance.Open(ctx, t.TempDir(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cat, err := agents.Load(agents.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	def, err := cat.Lookup("claude-code")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.CreateInstance(ctx, instance.CreateOptions{Definition: def, Workspace: t.TempDir(), Executable: "/opt/agentctl/bin/agentctl"})
	if err != nil {
		t.Fatal(err)
	}
	p := selfPlan(t, mode)
	p.Log = rec.Dir + "/" + instance.RunLogFile
	return st, rec, p
}

// TestRunRecordsTheRun: a recorded run holds the run lock while its client
// runs, copies its output to run.log, and records its start and its end
// (last_run with the exit code, "running" then "failed" with the run's id).
func TestRunRecordsTheRun(t *testing.T) {
	st, rec, p := recordedRun(t, "exit7")
	ctx := context.Background()
	var told instance.Run
	var during error
	end, err := Run(ctx, st, rec, p, Streams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}, func(r instance.Run) {
		told = r
		_, during = st.RunLock(rec.ID) // a second run while this one runs
	})
	if err != nil {
		t.Fatal(err)
	}
	if during == nil || !strings.Contains(during.Error(), "already being run") {
		t.Errorf("a second run while the first ran: %v, want refused", during)
	}
	if told.ID == "" || told.PID == 0 || told.Mode != instance.RunHeadless || end.Run.ID != told.ID {
		t.Errorf("started told %+v, ended %+v", told, end.Run)
	}
	if end.Status != instance.StatusFailed || end.Run.ExitCode == nil || *end.Run.ExitCode != 7 || !strings.Contains(end.Message, "exited with code 7") {
		t.Errorf("outcome %+v", end)
	}
	last, err := st.LastRun(ctx, rec.ID)
	if err != nil || last == nil || last.ID != told.ID || last.EndedAt == nil || *last.ExitCode != 7 {
		t.Errorf("last_run %+v, %v", last, err)
	}
	evs, err := st.Events(ctx, rec.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var statuses []string
	for _, e := range evs {
		if e.Tool == instance.RunTool && e.RunID == told.ID {
			statuses = append(statuses, e.Status)
		}
	}
	if strings.Join(statuses, ",") != "running,failed" {
		t.Errorf("the run's events: %q, want running then failed", statuses)
	}
	log, _ := os.ReadFile(p.Log)
	if !bytes.Contains(log, []byte("=== ")) || !bytes.Contains(log, []byte("to stderr")) {
		t.Errorf("run.log:\n%s", log)
	}
	release, err := st.RunLock(rec.ID)
	if err != nil {
		t.Fatalf("the run lock is still held after the run: %v", err)
	}
	release()
}

// TestRunProgramMissingRecordsAFailedRun: a client that is not installed is
// a ProgramNotFoundError, recorded as a run that ended as it started,
// failed, saying why: `instance wait --next`, waiting since before the
// attempt, sees it end (a FailedError) instead of waiting for a start that
// never comes. A second attempt while a run holds the lock is refused
// before it can replace that run's last_run.
func TestRunProgramMissingRecordsAFailedRun(t *testing.T) {
	st, rec, p := recordedRun(t, "exit7")
	p.Program = "agentctl-no-such-client"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	since := time.Now()
	waited := make(chan error, 1)
	go func() {
		poll := &instance.Poller{Source: st, Interval: 10 * time.Millisecond}
		_, err := poll.WaitRun(ctx, rec.ID, instance.Which{Next: true, Since: since})
		waited <- err
	}()
	_, err := Run(ctx, st, rec, p, Streams{Out: io.Discard, ErrOut: io.Discard}, nil)
	var nf *ProgramNotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("err = %v, want a ProgramNotFoundError", err)
	}
	last, err := st.LastRun(ctx, rec.ID)
	if err != nil || last == nil || last.ID == "" || last.EndedAt == nil || !last.EndedAt.Equal(last.StartedAt) ||
		last.PID != 0 || last.ExitCode != nil || !strings.Contains(last.StartError, "agentctl-no-such-client") {
		t.Fatalf("the run that could not start is recorded as %+v (%v)", last, err)
	}
	var failed *instance.FailedError
	if err := <-waited; !errors.As(err, &failed) || failed.Event.RunID != last.ID || !strings.Contains(failed.Event.Message, "could not start") {
		t.Fatalf("wait --next = %v, want the failed run %s", err, last.ID)
	}

	// Under way elsewhere: refused at the lock, and the last run stays.
	release, err := st.RunLock(rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, err := Run(ctx, st, rec, p, Streams{Out: io.Discard, ErrOut: io.Discard}, nil); err == nil || errors.As(err, &nf) {
		t.Errorf("a second attempt while a run holds the lock: %v, want refused as already being run", err)
	}
	if again, err := st.LastRun(ctx, rec.ID); err != nil || again.ID != last.ID {
		t.Errorf("the refused attempt replaced the last run: %+v (%v)", again, err)
	}
}

// TestRunEndWaitsOutAStoreOutage: a PostgreSQL restart as the client ends
// is waited out, saying so: the run's end was recorded once, refused, and
// the run left "running", which `instance wait` later took for a lost run
// and recorded failed (exit 6) although the client had exited 0.
func TestRunEndWaitsOutAStoreOutage(t *testing.T) {
	ctx := context.Background()
	pg := testkit.StartPostgres(t)
	st, rec, p := recordedRun(t, "gate", instance.WithStore(instance.StoreURL(pg.NewDatabase(t))))
	gate := filepath.Join(t.TempDir(), "gate")
	t.Setenv("LAUNCH_GATE", gate)
	var errOut testkit.Buffer
	restarted := make(chan struct{})
	end, err := Run(ctx, st, rec, p, Streams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &errOut}, func(instance.Run) {
		go func() {
			defer close(restarted)
			for { // once the start is recorded
				if r, err := st.LastRun(ctx, rec.ID); err == nil && r != nil && r.PID != 0 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			pg.Stop(t)                         // the store goes away while the client runs
			_ = os.WriteFile(gate, nil, 0o644) // the client exits 0
			time.Sleep(time.Second)
			pg.Start(t)
		}()
	})
	if err != nil {
		t.Fatalf("Run: %v\nstderr: %s", err, errOut.String())
	}
	<-restarted
	if !strings.Contains(errOut.String(), "the store does not answer") {
		t.Errorf("the wait is not said: %q", errOut.String())
	}
	last, err := st.LastRun(ctx, rec.ID)
	if err != nil || last == nil || last.EndedAt == nil || last.ExitCode == nil || *last.ExitCode != 0 || end.Status != instance.StatusDone {
		t.Fatalf("last_run %+v (%v), outcome %+v", last, err, end)
	}
}
