package instance

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// LostClientGrace is how long the client of a lost run is given to end
// after SIGTERM before [Store.EndLostRun] sends it SIGKILL.
const LostClientGrace = 10 * time.Second

// EndLostRun records the end of a run of instance id that ended without its
// agentctl recording it: that agentctl was stopped by force (SIGKILL, the
// OOM killer, a CI runner's hard stop, a power cut). That is so when the
// instance's latest run event is the run's start ("running"), its last_run
// has no end and no process holds the run lock. What is left of the
// client (where agentctl is killed, the client is sent SIGTERM on Linux;
// elsewhere, or when it ignores that, it runs on) is ended first: SIGTERM
// to it (its process group, headless), SIGKILL after [LostClientGrace]; a
// client that outlives that is left, and the run with it. It then sets
// last_run's end and adds a "failed" event saying what happened, which
// `instance wait` and `list` see, and reports true; as at a run's normal
// end, a final status the model reported during the run stands, and only
// last_run is ended (false). Where run locks are not tracked (Windows) it
// does nothing.
func (s *Store) EndLostRun(ctx context.Context, id string) (bool, error) {
	if !serveLocking || !isID(id) {
		return false, nil
	}
	seq, lost, err := s.lostRunEvent(ctx, id)
	if err != nil || !lost {
		return false, err
	}
	if running, err := s.Running(id); err != nil || running {
		return false, err
	}
	// A run on another host is that host's to judge: its pid and run
	// lock are there, and a process of that pid here is another. (Asked
	// after the local lock, which a run under way here holds: the look of
	// a follower at each wake costs no query then.)
	if run, err := s.LastRun(ctx, id); err != nil || run == nil || s.foreignRun(ctx, id, run) {
		return false, err
	}
	release, err := s.RunLock(id)
	if err != nil {
		return false, nil // a run started meanwhile, or the instance is gone
	}
	defer release()
	// Looked at again with the lock held: the run may have been ended,
	// or another started, since.
	if again, lost, err := s.lostRunEvent(ctx, id); err != nil || !lost || again != seq {
		return false, err
	}
	r, err := s.Get(ctx, id)
	if err != nil {
		return false, err
	}
	run := r.LastRun
	if run == nil || run.EndedAt != nil {
		return false, nil
	}
	ended := ""
	if clientAlive(run) {
		how, ok := endClient(run, s.lostGrace())
		if !ok {
			return false, nil
		}
		ended = "; its client still ran and was ended (" + how + ")"
	}
	msg := fmt.Sprintf("the run of %s (pid %d, started %s) ended without agentctl recording how: the agentctl that ran it was stopped by force "+
		"(SIGKILL, the OOM killer, a CI runner's hard stop)%s; the client's exit code is unknown",
		run.Program, run.PID, run.StartedAt.Format(time.RFC3339), ended)
	if run.Mode == RunHeadless { // an interactive run's output was the terminal's
		msg += ", its output is in " + RunLogFile
	}
	at := s.stamp()
	run.EndedAt = &at // when it was found to have ended: the best known
	return s.EndRun(ctx, id, seq, *run, Event{Tool: RunTool, Status: StatusFailed, Message: msg})
}

// lostRunEvent is the sequence number of instance id's latest run event
// (the tool [RunTool]: a run's start or end), and whether it is a start,
// which only the run's end follows: the model's report_progress events in
// between do not end it.
func (s *Store) lostRunEvent(ctx context.Context, id string) (int64, bool, error) {
	var seq int64
	var status string
	err := s.db.QueryRowContext(ctx, `SELECT seq, status FROM events WHERE instance_id = ? AND tool = ? ORDER BY seq DESC LIMIT 1`, id, RunTool).Scan(&seq, &status)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, s.dbError(err)
	}
	return seq, status == StatusRunning, nil
}

func (s *Store) lostGrace() time.Duration {
	if s.lostClientGrace > 0 {
		return s.lostClientGrace
	}
	return LostClientGrace
}

// LostClientError is a run refused because the client of the instance's
// last run still runs although the agentctl that ran it is gone: one run
// per instance holds until that client has ended.
type LostClientError struct {
	ID  string
	Run *Run
}

func (e *LostClientError) Error() string {
	kill := "kill -TERM -- -" + strconv.Itoa(e.Run.PID) + " (its process group; -KILL if it ignores that)"
	if e.Run.Mode != RunHeadless {
		kill = "kill " + strconv.Itoa(e.Run.PID)
	}
	return fmt.Sprintf("instance %s is in use: the client of its last run (%s %s, pid %d, started %s) still runs, although the agentctl that ran it is gone "+
		"(killed); one run at a time, so this run is refused. `agentctl instance wait %s` ends that client (SIGTERM, then SIGKILL after %s) and records the run failed; "+
		"or end it yourself: %s",
		e.ID, e.Run.Program, e.Run.Mode, e.Run.PID, e.Run.StartedAt.Format(time.RFC3339), e.ID, LostClientGrace, kill)
}

func (e *LostClientError) Unwrap() error { return ErrConflict }

// CheckLostClient, called with the run lock held (so no agentctl runs the
// instance), refuses a new run of instance id while the client of a lost
// run (see [Store.EndLostRun]) still runs: a [*LostClientError].
func (s *Store) CheckLostClient(ctx context.Context, id string) error {
	if !serveLocking {
		return nil
	}
	run, err := s.LastRun(ctx, id)
	if err != nil || run == nil || run.EndedAt != nil {
		return err
	}
	if s.foreignRun(ctx, id, run) {
		return &ForeignRunError{ID: id, Run: run}
	}
	if !clientAlive(run) {
		return nil
	}
	return &LostClientError{ID: id, Run: run}
}

// foreignRun reports whether run, of instance id, is another host's: on
// PostgreSQL, any run of another host name; on SQLite, whose file is one
// machine's, only that of a record made through another state directory
// sharing the file ([Store.Foreign]), whose run lock is there.
func (s *Store) foreignRun(ctx context.Context, id string, run *Run) bool {
	if run.Host == "" || run.Host == s.host {
		return false
	}
	if s.Kind() != "sqlite" {
		return true
	}
	r, err := s.Get(ctx, id)
	return err != nil || s.Foreign(r)
}

// ForeignRunError is a run refused because the instance's last run, on
// another host, has not ended: one run per instance, fleet-wide.
type ForeignRunError struct {
	ID  string
	Run *Run
}

func (e *ForeignRunError) Error() string {
	return fmt.Sprintf("instance %s is in use: its last run (%s %s, pid %d, started %s) is on host %s and has not ended; one run at a time, so this run is refused. "+
		"Wait for it (`agentctl instance wait %s`); if the agentctl that ran it was killed, `agentctl instance wait %s` on %s records its end",
		e.ID, e.Run.Program, e.Run.Mode, e.Run.PID, e.Run.StartedAt.Format(time.RFC3339), e.Run.Host, e.ID, e.ID, e.Run.Host)
}

func (e *ForeignRunError) Unwrap() error { return ErrConflict }
