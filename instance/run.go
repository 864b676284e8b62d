package instance

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// RunTool is the tool name of the progress events `agentctl instance run`
// records (the model's own reports carry the canonical name of
// report_progress).
const RunTool = "agentctl instance run"

// The statuses an instance's events carry: the values report_progress
// takes (its input schema's enum), in that order, and `instance wait
// --status` waits for; the record owns them, the endpoint's tool offers them.
const (
	StatusRunning = "running"
	StatusBlocked = "blocked"
	StatusDone    = "done"
	StatusFailed  = "failed"
)

// StatusUnanswered is the status of the event ask_user_question records
// when a question ends without an answer: it expired, or the client stopped
// waiting for it. It is not a progress status (report_progress does not
// take it); `instance wait` reports a run that had one.
const StatusUnanswered = "unanswered"

// ProgressStatuses returns the statuses report_progress takes, in the order
// its schema lists them.
func ProgressStatuses() []string {
	return []string{StatusRunning, StatusBlocked, StatusDone, StatusFailed}
}

// The modes of a run ([Run.Mode]): the keys of a definition's [run] recipe
// and of its question policy.
const (
	RunHeadless    = "headless"
	RunInteractive = "interactive"
)

// RunLogFile is the log of the client's output in the instance directory.
const RunLogFile = "run.log"

// runLockFile is held exclusively by the `instance run` process for as long
// as its client runs: one run per instance at a time, and `instance logs
// --follow` knows when a run has ended.
const runLockFile = ".run.lock"

// Run is what the record keeps of the latest `instance run`.
type Run struct {
	// ID names the run (a lower-case ULID, so later runs sort later): the
	// events recorded while it runs carry it, and `instance wait --run`
	// waits for it. Records written before runs had ids have none.
	ID string `json:"id,omitempty"`
	// Program is the client program as started (the recipe's, not a path).
	Program string `json:"program"`
	// Mode is [RunHeadless] or [RunInteractive].
	Mode      string     `json:"mode"`
	PID       int        `json:"pid,omitempty"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// ExitCode is the client's exit code (128+N when signal N ended it);
	// nil while it runs.
	ExitCode *int `json:"exit_code,omitempty"`
	// Signal names the signal agentctl forwarded to end the run, if any.
	Signal string `json:"signal,omitempty"`
	// StartError says why the client could not start (not installed, no
	// workspace): the run ended as it started, without a pid or exit code.
	StartError string `json:"start_error,omitempty"`
	// Host is the host the run is on (the store's [WithHost] name): PID
	// and the run lock are that host's, so only it can tell whether the
	// run was lost. Runs recorded before runs had hosts have none.
	Host string `json:"host,omitempty"`
}

// RunLock marks instance id (exactly, not a reference) as being run by
// this process until release is called or the process ends. A second run
// of the same instance fails at once with an error saying so. Where file
// locks are not tracked (Windows) it only checks that the directory exists.
func (s *Store) RunLock(id string) (release func(), err error) {
	if !isID(id) {
		return nil, invalidf("%q is not an instance id; resolve a reference with Get first", id)
	}
	path := s.lockPath(id, runLockFile)
	f, pid, err := s.openRunLock(id, true, false)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("instance %s: its directory %s is missing; delete the instance and create it again", id, filepath.Dir(path))
	case errors.Is(err, errLocked):
		msg := fmt.Sprintf("instance %s is already being run", id)
		if pid > 0 {
			msg += " (agentctl pid " + strconv.Itoa(pid) + ")"
		}
		return nil, &InvalidError{Msg: msg + "; follow it to its end with `agentctl instance logs " + id + " --follow`, or create another instance"}
	case err != nil:
		return nil, err
	}
	if !serveLocking {
		return func() { f.Close() }, nil
	}
	// A delete that held the lock while we waited has removed the file
	// with the directory: the lock is on a file nobody else sees.
	held, err1 := f.Stat()
	now, err2 := os.Stat(path)
	if err1 != nil || err2 != nil || !os.SameFile(held, now) {
		f.Close()
		return nil, deletedError(id)
	}
	// The pid, padded to a fixed width over what an earlier run wrote:
	// truncating a non-empty file costs a journal commit (0.2-0.4 ms here),
	// so only a file longer than the line (not of our writing) is cut.
	line := pidLine(os.Getpid())
	_, _ = f.WriteAt(line, 0)
	if fi, err := f.Stat(); err == nil && fi.Size() > int64(len(line)) {
		_ = f.Truncate(int64(len(line)))
	}
	return func() { f.Close() }, nil
}

// lockRun takes the run lock f exclusively without waiting for a run, or
// fails with errLocked. [Store.Running] holds the lock for an instant to
// look: a lock held that briefly is not a run, so it tries again for a
// moment.
func lockRun(f *os.File) error {
	err := lockFile(f, true, false)
	for deadline := time.Now().Add(250 * time.Millisecond); errors.Is(err, errLocked) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
		err = lockFile(f, true, false)
	}
	return err
}

// openRunLock opens instance id's run lock file (creating it if create)
// and takes the lock without waiting for a run: shared, trying once, when
// look (a look at whether a run holds it), else exclusively for a moment
// ([lockRun]). It returns the file locked, for the caller to close to let
// go (where locks are not tracked, just open). When a run holds the lock
// it returns errLocked and heldBy, the pid of the run's agentctl as the
// file names it (0 if it names none). An error opening the file is
// returned as it is: os.ErrNotExist for a missing directory (or, unless
// create, a missing file).
func (s *Store) openRunLock(id string, create, look bool) (f *os.File, heldBy int, err error) {
	path := s.lockPath(id, runLockFile)
	flag := os.O_RDWR
	if create {
		flag |= os.O_CREATE
	}
	if f, err = os.OpenFile(path, flag, 0o600); err != nil {
		return nil, 0, err
	}
	if !serveLocking {
		return f, 0, nil
	}
	if look {
		// Shared: a look conflicts with a run's lock, not with another
		// look, which would take it for a run.
		err = lockFile(f, false, false)
	} else {
		err = lockRun(f)
	}
	if err != nil {
		if errors.Is(err, errLocked) {
			b, _ := os.ReadFile(path)
			heldBy, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		f.Close()
		return nil, heldBy, err
	}
	return f, 0, nil
}

// probeRun reports whether an `instance run` of instance id is under way
// (see [Store.RunLock]), and the pid of its agentctl, as the lock file
// names it (0 if it does not). Unless running, it returns holding the run
// lock, creating the file if needed, so that no run starts until unlock:
// [Store.DeleteInstance] keeps it while it deletes, and a run that waited
// for it finds its instance deleted. A missing directory runs nothing.
func (s *Store) probeRun(id string) (unlock func(), running bool, pid int, err error) {
	nothing := func() {}
	if !serveLocking {
		return nothing, false, 0, nil
	}
	f, pid, err := s.openRunLock(id, true, false)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nothing, false, 0, nil
	case errors.Is(err, errLocked):
		return nothing, true, pid, nil
	case err != nil:
		return nil, false, 0, err
	}
	return func() { f.Close() }, false, 0, nil
}

// RunningError is a delete refused because `agentctl instance run` is
// running the instance's client (it holds the run lock).
type RunningError struct {
	ID string
	// AgentctlPID is the pid of the agentctl that runs it, as its run
	// lock names it; 0 if unknown.
	AgentctlPID int
	// Run is the record's last_run when it is this run (no end yet); nil
	// if the run has not recorded its start yet.
	Run *Run
}

func (e *RunningError) Error() string {
	var about []string
	if e.Run != nil {
		about = append(about, e.Run.Program+" "+e.Run.Mode)
		if e.Run.PID > 0 {
			about = append(about, "pid "+strconv.Itoa(e.Run.PID))
		}
		if !e.Run.StartedAt.IsZero() {
			about = append(about, "started "+e.Run.StartedAt.Format(time.RFC3339))
		}
	}
	stop := "Ctrl-C where it runs"
	if e.AgentctlPID > 0 {
		about = append(about, "agentctl pid "+strconv.Itoa(e.AgentctlPID))
		stop += ", or `kill " + strconv.Itoa(e.AgentctlPID) + "`: agentctl passes the signal on to the client and records the end"
	}
	msg := fmt.Sprintf("instance %s is in use: a run is in progress (agentctl instance run is running its client", e.ID)
	if len(about) > 0 {
		msg += ": " + strings.Join(about, ", ")
	}
	return msg + "); wait for it to end (`agentctl instance logs " + e.ID + " --follow` follows it to its end), stop it (" + stop +
		"), or pass --force to delete it anyway (the client then runs on without its directory)"
}

func (e *RunningError) Unwrap() error { return ErrConflict }

// runningError is the refusal to delete instance id while a run holds its
// lock, pid being the run's agentctl (0 if unknown). The record is read
// again: the delete's may predate the start of the run.
func (s *Store) runningError(ctx context.Context, id string, pid int) error {
	re := &RunningError{ID: id, AgentctlPID: pid}
	if r, err := s.Get(ctx, id); err == nil && r.LastRun != nil && r.LastRun.EndedAt == nil {
		re.Run = r.LastRun
	}
	return re
}

// pidLine is pid as the run lock file holds it: padded with spaces to a
// width no pid exceeds, so that writing it over an earlier one leaves
// nothing of that behind.
func pidLine(pid int) []byte {
	return fmt.Appendf(nil, "%-20d\n", pid)
}

// Running reports whether an `instance run` of instance id is under way
// (see [Store.RunLock]); always false where locks are not tracked.
func (s *Store) Running(id string) (bool, error) {
	if !serveLocking {
		return false, nil
	}
	f, _, err := s.openRunLock(id, false, true)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	case errors.Is(err, errLocked):
		return true, nil
	case err != nil:
		return false, err
	}
	f.Close()
	return false, nil
}

// NewRunID returns a new run id (see [Run.ID]).
func (s *Store) NewRunID() string { return s.newID(s.now()) }

// StartRun records the start of a run in one transaction: r as the
// record's last_run (given an id with [Store.NewRunID] if it has none) and
// ev, the "running" event, which carries that id. It returns the event's
// sequence number, for [Store.EndRun].
func (s *Store) StartRun(ctx context.Context, id string, r Run, ev Event) (int64, error) {
	if r.ID == "" {
		r.ID = s.NewRunID()
	}
	r.Host = cmp.Or(r.Host, s.host)
	var seq int64
	var ids []string
	n := s.notifyFor(NotifyRunStarted)
	err := s.inTx(ctx, id, func(tx *dbTx) error {
		if err := setLastRun(ctx, tx, id, r); err != nil {
			return err
		}
		var err error
		seq, _, err = insertEvent(ctx, tx, s.stamp(), id, ev)
		if err != nil || n == nil {
			return err
		}
		ids, err = s.enqueue(ctx, tx, n, id, []string{NotifyRunStarted}, func(b *Notification) {
			b.Run = notificationRun(r, ev.Status, ev.Message)
		})
		return err
	})
	if err != nil {
		return 0, s.orDeleted(ctx, id, err)
	}
	n.enqueued(s, ids)
	return seq, nil
}

// NotStarted records a run whose client could not start, in one
// transaction: r (with its StartError) as the record's last_run, started
// and ended at r.StartedAt, and ev (failed, saying why) as its one event, so
// that `instance wait`, --next included, sees the run end failed instead of
// waiting for a start that never comes. Notified as a failed run's end.
func (s *Store) NotStarted(ctx context.Context, id string, r Run, ev Event) error {
	if r.ID == "" {
		r.ID = s.NewRunID()
	}
	r.Host = cmp.Or(r.Host, s.host)
	open := r
	open.EndedAt = nil
	ended := r.StartedAt
	r.EndedAt = &ended
	nt := s.notifyFor(NotifyRunEnded, NotifyFailed)
	var ids []string
	err := s.inTx(ctx, id, func(tx *dbTx) error {
		// Open first, so that the event is the run's (see insertEvent).
		if err := setLastRun(ctx, tx, id, open); err != nil {
			return err
		}
		if _, _, err := insertEvent(ctx, tx, s.stamp(), id, ev); err != nil {
			return err
		}
		if err := setLastRun(ctx, tx, id, r); err != nil || nt == nil {
			return err
		}
		var err error
		ids, err = s.enqueue(ctx, tx, nt, id, []string{NotifyFailed, NotifyRunEnded}, func(b *Notification) {
			b.Run = notificationRun(r, ev.Status, ev.Message)
		})
		return err
	})
	if err != nil {
		return s.orDeleted(ctx, id, err)
	}
	nt.enqueued(s, ids)
	return nil
}

// notificationRun is run r, of status and message, as a notification
// carries it.
func notificationRun(r Run, status, message string) *NotificationRun {
	nr := &NotificationRun{ID: r.ID, Mode: r.Mode, Status: status, ExitCode: r.ExitCode, Signal: r.Signal, Message: message, EndedAt: r.EndedAt}
	if !r.StartedAt.IsZero() {
		at := r.StartedAt
		nr.StartedAt = &at
	}
	return nr
}

// EndRun records the end of a run in one transaction: r as the record's
// last_run and ev as the final event, unless the latest status reported
// after seq by another than the run itself (the model's report_progress;
// an unanswered question is no status) is a final one (done, failed): the
// model's word then stands. A final report followed by more work (a
// "running" report, a question) does not: the run's own end is recorded,
// else the instance would show the later status for ever. It reports
// whether ev was added.
func (s *Store) EndRun(ctx context.Context, id string, after int64, r Run, ev Event) (added bool, err error) {
	r.Host = cmp.Or(r.Host, s.host)
	nt := s.notifyFor(NotifyRunEnded, NotifyFailed)
	var ids []string
	err = s.inTx(ctx, id, func(tx *dbTx) error {
		var status, message string
		err := tx.QueryRowContext(ctx, `SELECT status, message FROM events WHERE instance_id = ? AND seq > ? AND tool <> ? AND status <> ? ORDER BY seq DESC LIMIT 1`,
			id, after, RunTool, StatusUnanswered).Scan(&status, &message)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if status != StatusDone && status != StatusFailed {
			// Before last_run gets its end: the event is the run's.
			if _, _, err := insertEvent(ctx, tx, s.stamp(), id, ev); err != nil {
				return err
			}
			added = true
			status, message = ev.Status, ev.Message
		}
		if err := setLastRun(ctx, tx, id, r); err != nil || nt == nil {
			return err
		}
		// The run's end, as the record has it: its own event, or the
		// model's final word, which stands (and, when it was a failure,
		// has been notified as one already).
		events := []string{NotifyRunEnded}
		if added && ev.Status == StatusFailed {
			events = []string{NotifyFailed, NotifyRunEnded}
		}
		ids, err = s.enqueue(ctx, tx, nt, id, events, func(b *Notification) { b.Run = notificationRun(r, status, message) })
		return err
	})
	if err != nil {
		return false, s.orDeleted(ctx, id, err)
	}
	nt.enqueued(s, ids)
	return added, nil
}

// inTx runs fn in a write transaction that holds instance id's lock (see
// [backend.lockKey]): the writes of one instance's events, runs and record
// are serialised, on PostgreSQL as in SQLite, so that its events commit in
// the order of their sequence numbers and a follower that resumes after
// the last one it saw misses none.
func (s *Store) inTx(ctx context.Context, id string, fn func(*dbTx) error) error {
	tx, err := s.db.BeginTx(ctx) // BEGIN IMMEDIATE
	if err != nil {
		return s.dbError(err)
	}
	defer tx.Rollback()
	if err := tx.lock(ctx, "instance:"+id); err != nil {
		return s.dbError(err)
	}
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// insertEvent stores e as instance id's event at at, and returns its
// sequence number and run: the one INSERT of [Store.AddEvent] and the
// runs'. The event belongs to the run the record's last_run names while
// that has no end, whoever records it (the model's report_progress in the
// endpoint as much as `instance run` itself), read in the statement.
//
// The RETURNING rows are read to their end: a statement reset before it
// has finished (as QueryRow's Scan does) never reaches SQLite's WAL hook,
// and a long-lived endpoint's WAL then grows with every event, never
// checkpointed.
//
// It wakes the instance's followers once tx commits (see [Store.Watch]).
func insertEvent(ctx context.Context, tx *dbTx, at time.Time, id string, e Event) (seq int64, run string, err error) {
	be := tx.be
	rows, err := tx.QueryContext(ctx, `INSERT INTO events (instance_id, at, tool, status, message, percent, run_id) VALUES (?, ?, ?, ?, ?, ?,
		coalesce((SELECT `+be.jsonText("record", "last_run.id")+` FROM instances WHERE id = ? AND `+be.jsonText("record", "last_run.ended_at")+` IS NULL), ''))
		RETURNING seq, run_id`,
		id, at.Format(timeFormat), e.Tool, e.Status, e.Message, e.Percent, id)
	if err != nil {
		return 0, "", err
	}
	defer rows.Close()
	got := false
	for rows.Next() {
		if err := rows.Scan(&seq, &run); err != nil {
			return 0, "", err
		}
		got = true
	}
	if err := rows.Err(); err != nil {
		return 0, "", err
	}
	if !got {
		return 0, "", sql.ErrNoRows
	}
	return seq, run, tx.notify(ctx, chanEvents, id)
}

// setLastRun sets the record's last_run in place, without decoding the
// record.
func setLastRun(ctx context.Context, tx *dbTx, id string, r Run) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `UPDATE instances SET record = `+tx.be.jsonSet("record", "last_run")+` WHERE id = ?`, string(b), id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return deletedError(id)
	}
	return nil
}

// EndpointEntry is the entry that starts instance r's endpoint, as create
// writes it into the client's configuration: executable (agentctl's
// absolute path) with `mcp serve --instance ID --state-dir DIR`.
func (s *Store) EndpointEntry(r *Record, executable string) ServerEntry {
	args := []string{"mcp", "serve", "--instance", r.ID, "--state-dir", s.dir}
	if s.url != "" {
		// Without its password: the endpoint finds that where libpq's
		// tools do (PGPASSWORD, ~/.pgpass), never in a client's file.
		args = append(args, "--store", s.StoreName())
	}
	if s.configFile != "" {
		// Its [[notify]] targets, host and log level are the endpoint's
		// too: without it the endpoint read the default file.
		args = append(args, "--config", s.configFile)
	}
	return ServerEntry{Command: executable, Args: args}
}

// HeadlessRun reports whether a headless `agentctl instance run` of
// instance id is under way ([Store.RunMode]).
func (s *Store) HeadlessRun(ctx context.Context, id string) (bool, error) {
	mode, err := s.RunMode(ctx, id)
	return mode == RunHeadless, err
}

// RecordUnanswered stores the event, of status [StatusUnanswered], that a
// question of tool ended without an answer.
func (s *Store) RecordUnanswered(ctx context.Context, id, tool, message string) error {
	_, err := s.RecordProgress(ctx, id, tool, StatusUnanswered, message, nil)
	return err
}

// RunMode says how the `agentctl instance run` of instance id under way
// runs ("headless" or "interactive", the record's last_run mode), or ""
// when none is: the last run has ended, or nothing holds the run lock (the
// run was killed; [Store.EndLostRun] ends its record later). The endpoint's
// ask_user_question asks where the question policy says for that mode.
func (s *Store) RunMode(ctx context.Context, id string) (string, error) {
	r, err := s.Get(ctx, id)
	if err != nil {
		return "", err
	}
	if r.LastRun == nil || r.LastRun.EndedAt != nil {
		return "", nil
	}
	if serveLocking {
		running, err := s.Running(r.ID)
		if err != nil {
			return "", err
		}
		if !running {
			return "", nil
		}
	}
	return r.LastRun.Mode, nil
}

// runConfigPrefix starts the name of the private directory that holds a
// run's copy of the instance's MCP configuration ([PrivateRunCopy]).
const runConfigPrefix = ".run-config-"

// PrivateRunCopy is for clients that rewrite the configuration file they
// are handed while they run (Qwen Code, Cline), with a mode of their own: it
// copies r's MCP configuration, under the same relative name, into a new
// directory of r's that only the user can enter, and returns a copy of r
// pointing at it and a function that removes the directory. The
// instance's own file keeps its content and its mode 0600, so the token an
// HTTP instance's file holds never sits in a file others may read.
func PrivateRunCopy(r *Record) (*Record, func(), error) {
	rel, err := filepath.Rel(r.Dir, r.MCPConfigPath)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, nil, fmt.Errorf("instance %s: its configuration %s is not in its directory %s", r.ID, r.MCPConfigPath, r.Dir)
	}
	data, err := os.ReadFile(r.MCPConfigPath)
	if err != nil {
		return nil, nil, fmt.Errorf("instance %s: read its MCP configuration: %w", r.ID, err)
	}
	dir, err := os.MkdirTemp(r.Dir, runConfigPrefix)
	if err != nil {
		return nil, nil, fmt.Errorf("instance %s: make the run's private configuration directory: %w", r.ID, err)
	}
	cleanup := func() { os.RemoveAll(dir) }
	path := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		cleanup()
		return nil, nil, err
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("instance %s: write the run's copy of its MCP configuration: %w", r.ID, err)
	}
	c := *r
	c.MCPConfigPath = path
	return &c, cleanup, nil
}

// LastRun is the record's latest `instance run` of instance id, nil if it
// has never been run that way.
func (s *Store) LastRun(ctx context.Context, id string) (*Run, error) {
	r, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return r.LastRun, nil
}
