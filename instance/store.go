package instance

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/oklog/ulid/v2"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver
)

// DBFile is the name of the state database inside the state directory.
const DBFile = "state.db"

// migrations are applied in order; PRAGMA user_version counts those applied.
// Never edit one that has shipped: append a new one.
var migrations = []string{
	`CREATE TABLE instances (
		id         TEXT PRIMARY KEY,
		name       TEXT,
		agent      TEXT NOT NULL,
		created_at TEXT NOT NULL,
		record     TEXT NOT NULL
	);
	CREATE UNIQUE INDEX instances_name ON instances(name) WHERE name IS NOT NULL;
	CREATE TABLE questions (
		id          TEXT PRIMARY KEY,
		instance_id TEXT NOT NULL REFERENCES instances(id) ON DELETE CASCADE,
		question    TEXT NOT NULL,
		choices     TEXT NOT NULL,
		status      TEXT NOT NULL,
		asked_at    TEXT NOT NULL,
		answer      TEXT,
		answered_at TEXT
	);
	CREATE INDEX questions_instance ON questions(instance_id, status);
	CREATE TABLE events (
		seq         INTEGER PRIMARY KEY AUTOINCREMENT,
		instance_id TEXT NOT NULL REFERENCES instances(id) ON DELETE CASCADE,
		at          TEXT NOT NULL,
		tool        TEXT NOT NULL,
		status      TEXT NOT NULL,
		message     TEXT NOT NULL,
		percent     REAL
	);
	CREATE INDEX events_instance ON events(instance_id, seq);`,
}

// Store is the SQLite state of agentctl: instance records, questions, events.
// It is safe for concurrent use, also by many processes at once.
type Store struct {
	db  *sql.DB
	dir string
	now func() time.Time

	idMu    sync.Mutex
	entropy io.Reader // monotonic ULID entropy

	// beforeCommit, when set (tests only), runs inside CreateInstance after the
	// files are staged and the row inserted, before anything is committed.
	beforeCommit func() error
	// afterResolve, when set (tests only), runs in DeleteInstance after it
	// has resolved the reference.
	afterResolve func()
}

// Option configures a [Store].
type Option func(*Store)

// WithClock sets the clock the store stamps records and events with.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// Open opens (creating if needed) the store in dir and migrates its schema.
func Open(ctx context.Context, dir string, opts ...Option) (*Store, error) {
	if dir == "" {
		return nil, invalidf("no state directory; set --state-dir or AGENTCTL_STATE_DIR")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	// Private: records hold external servers' environment and headers.
	if err := os.MkdirAll(filepath.Join(abs, "instances"), 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	dbPath := filepath.Join(abs, DBFile)
	if err := checkNotEmptied(dbPath, filepath.Join(abs, "instances")); err != nil {
		return nil, err
	}
	dsn := "file:" + dbPath +
		"?_pragma=busy_timeout(30000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open state database %s: %w", dbPath, err)
	}
	s := &Store{db: db, dir: abs, now: time.Now, entropy: ulid.Monotonic(rand.Reader, 0)}
	for _, o := range opts {
		o(s)
	}
	if err := s.init(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open state database %s: %w", dbPath, err)
	}
	for _, f := range []string{DBFile, DBFile + "-wal", DBFile + "-shm"} {
		_ = os.Chmod(filepath.Join(abs, f), 0o600) // SQLite creates them by the umask
	}
	return s, nil
}

// checkNotEmptied refuses a zero-length database beside instance
// directories: SQLite takes an empty file for an empty database, which would
// orphan every instance (a truncated file, a failed copy or restore). No
// database, or an empty one with no instance directory, is a new store.
func checkNotEmptied(dbPath, instancesDir string) error {
	fi, err := os.Stat(dbPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("state database %s: %w", dbPath, err)
	}
	if fi.Size() != 0 {
		return nil
	}
	entries, err := os.ReadDir(instancesDir)
	if err != nil {
		return fmt.Errorf("state database %s is empty (0 bytes), and its instance directories cannot be read: %w", dbPath, err)
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() && isID(e.Name()) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("state database %s is empty (0 bytes) but %s holds %d instance directories, which it would orphan; "+
		"restore %s from a backup, or move the state directory %s aside to start afresh", dbPath, instancesDir, n, DBFile, filepath.Dir(dbPath))
}

// init turns WAL on and applies pending migrations, safely against other
// processes doing the same at the same moment.
func (s *Store) init(ctx context.Context) error {
	// Switching to WAL needs a moment alone with the file; SQLite reports
	// SQLITE_BUSY at once rather than waiting, so retry briefly.
	var mode string
	for i := 0; ; i++ {
		err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
		if err == nil {
			break
		}
		if i >= 200 || !isBusy(err) {
			return err
		}
		time.Sleep(time.Duration(5+i%10) * time.Millisecond)
	}
	var v int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v == len(migrations) {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: one migrator at a time
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v > len(migrations) {
		return fmt.Errorf("the state database has schema version %d, newer than this agentctl knows (%d); upgrade agentctl", v, len(migrations))
	}
	for i := v; i < len(migrations); i++ {
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(migrations))); err != nil {
		return err
	}
	return tx.Commit()
}

func isBusy(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "SQLITE_BUSY") || strings.Contains(err.Error(), "database is locked"))
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Dir is the absolute state directory.
func (s *Store) Dir() string { return s.dir }

func (s *Store) instancesDir() string { return filepath.Join(s.dir, "instances") }

// timeFormat is fixed-width, so stored times sort as strings.
const timeFormat = "2006-01-02T15:04:05.000000000Z07:00"

func (s *Store) stamp() time.Time { return s.now().UTC() }

// Get returns the instance that ref names: an id, a unique id prefix, or a label.
// A record that cannot be decoded is a [*CorruptRecordError].
func (s *Store) Get(ctx context.Context, ref string) (*Record, error) {
	row, err := s.resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	return decodeRecord(row.id, row.raw)
}

// instanceRow is an instance's row: the columns beside the record, and the
// record as stored.
type instanceRow struct {
	id, name, agent, created, raw string
}

const instanceRowCols = `id, coalesce(name, ''), agent, created_at, record`

func scanInstanceRow(sc interface{ Scan(...any) error }) (*instanceRow, error) {
	var r instanceRow
	if err := sc.Scan(&r.id, &r.name, &r.agent, &r.created, &r.raw); err != nil {
		return nil, err
	}
	return &r, nil
}

// resolve finds the row that ref names (see [Store.Get]) without decoding
// its record.
func (s *Store) resolve(ctx context.Context, ref string) (*instanceRow, error) {
	if ref == "" {
		return nil, invalidf("no instance given; pass an instance id, id prefix or label (see `agentctl instance list`)")
	}
	row, err := scanInstanceRow(s.db.QueryRowContext(ctx, `SELECT `+instanceRowCols+` FROM instances WHERE id = ? OR name = ? ORDER BY id = ? DESC LIMIT 1`, ref, ref, ref))
	if err == nil {
		return row, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+instanceRowCols+` FROM instances WHERE id >= ? AND id < ? ORDER BY id LIMIT 6`, ref, ref+"\xff")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var found []*instanceRow
	for rows.Next() {
		r, err := scanInstanceRow(rows)
		if err != nil {
			return nil, err
		}
		found = append(found, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	switch len(found) {
	case 0:
		if lower := strings.ToLower(ref); lower != ref {
			// Ids are lower-case ULIDs; accept the canonical upper-case form too.
			return s.resolve(ctx, lower)
		}
		return nil, &NotFoundError{What: "instance", Ref: ref, Hint: "see `agentctl instance list` for the instances in " + s.dir}
	case 1:
		return found[0], nil
	default:
		ids := make([]string, len(found))
		for i, r := range found {
			ids[i] = r.id
		}
		return nil, &AmbiguousError{What: "instance id prefix", Ref: ref, Matches: ids}
	}
}

// decodeRecord decodes the record stored for instance id.
func decodeRecord(id, raw string) (*Record, error) {
	var r Record
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return nil, &CorruptRecordError{ID: id, Err: err}
	}
	if r.Mounts == nil {
		r.Mounts = []mount.Resolved{}
	}
	if r.Files == nil {
		r.Files = []string{}
	}
	return &r, nil
}

// List returns every instance whose record decodes, oldest first, and a
// [*CorruptRecordError] for each one whose record does not: one broken
// record hides no other instance.
func (s *Store) List(ctx context.Context) ([]*Record, []*CorruptRecordError, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, record FROM instances ORDER BY id`)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	out := []*Record{}
	var broken []*CorruptRecordError
	for rows.Next() {
		var id, raw string
		if err := rows.Scan(&id, &raw); err != nil {
			return nil, nil, err
		}
		r, err := decodeRecord(id, raw)
		var ce *CorruptRecordError
		if errors.As(err, &ce) {
			broken = append(broken, ce)
			continue
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	return out, broken, nil
}

// IDs returns every instance id with its label, for shell completion.
func (s *Store) IDs(ctx context.Context) (map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, coalesce(name, '') FROM instances ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, err
		}
		out[id] = name
	}
	return out, rows.Err()
}

// DeleteOptions are the options of [Store.DeleteInstance].
type DeleteOptions struct {
	// Force deletes the instance even while an endpoint serves it (see
	// [Store.ServeLock]); that endpoint's built-in tools then answer that
	// the instance was deleted.
	Force bool
}

// Delete is [Store.DeleteInstance] without options: it refuses an instance
// that an endpoint is serving.
func (s *Store) Delete(ctx context.Context, ref string) (*Record, error) {
	return s.DeleteInstance(ctx, ref, DeleteOptions{})
}

// DeleteInstance removes the instance ref names, its questions, events and
// directory. Unless o.Force is set, it refuses with a [*ServedError]
// (matching [ErrConflict]) an instance that an endpoint is serving, and
// holds off endpoints starting to serve it until it is done.
func (s *Store) DeleteInstance(ctx context.Context, ref string, o DeleteOptions) (*Record, error) {
	row, err := s.resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	r, err := decodeRecord(row.id, row.raw)
	if err != nil {
		// A record that does not decode is still deleted: everything a
		// delete needs is the id, and what it returns comes from the columns.
		created, _ := time.Parse(timeFormat, row.created)
		r = &Record{ID: row.id, Name: row.name, Agent: row.agent, CreatedAt: created,
			Dir: filepath.Join(s.instancesDir(), row.id), Mounts: []mount.Resolved{}, Files: []string{}}
	}
	if s.afterResolve != nil {
		s.afterResolve()
	}
	if !o.Force {
		unlock, live, err := s.probeServed(row.id, true)
		if err != nil {
			return nil, fmt.Errorf("delete instance %s: %w", row.id, err)
		}
		defer unlock()
		if live {
			return nil, &ServedError{ID: row.id}
		}
	}
	// Move the directory aside first so that a failure leaves the record and
	// its files together; the rename is atomic. The directory is derived
	// from the row's id, never taken from the (editable) record.
	dir := filepath.Join(s.instancesDir(), row.id)
	trash := filepath.Join(s.instancesDir(), ".deleting-"+row.id)
	moved := false
	if err := os.Rename(dir, trash); err == nil {
		moved = true
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("delete instance %s: %w", row.id, err)
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM instances WHERE id = ?`, row.id)
	if err != nil {
		if moved {
			_ = os.Rename(trash, dir)
		}
		return nil, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		// Another delete won the race since Get.
		err = &NotFoundError{What: "instance", Ref: ref, Hint: "it was deleted by someone else just now"}
	}
	if moved {
		if err := os.RemoveAll(trash); err != nil {
			return r, fmt.Errorf("instance %s deleted, but its directory %s could not be removed: %w", row.id, trash, err)
		}
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// AddQuestion stores an open question for the instance.
func (s *Store) AddQuestion(ctx context.Context, instanceID, text string, choices []string) (*Question, error) {
	if choices == nil {
		choices = []string{}
	}
	q := &Question{ID: s.newID(s.now()), InstanceID: instanceID, Text: text, Choices: choices, Status: QuestionOpen, AskedAt: s.stamp()}
	cj, _ := json.Marshal(choices)
	_, err := s.db.ExecContext(ctx, `INSERT INTO questions (id, instance_id, question, choices, status, asked_at) VALUES (?, ?, ?, ?, ?, ?)`,
		q.ID, instanceID, text, string(cj), q.Status, q.AskedAt.Format(timeFormat))
	if err != nil {
		return nil, s.orDeleted(ctx, instanceID, err)
	}
	return q, nil
}

const questionCols = `id, instance_id, question, choices, status, asked_at, coalesce(answer, ''), coalesce(answered_at, '')`

func scanQuestion(sc interface{ Scan(...any) error }) (*Question, error) {
	var q Question
	var choices, asked, answered string
	if err := sc.Scan(&q.ID, &q.InstanceID, &q.Text, &choices, &q.Status, &asked, &q.Answer, &answered); err != nil {
		return nil, err
	}
	_ = json.Unmarshal([]byte(choices), &q.Choices)
	q.AskedAt, _ = time.Parse(timeFormat, asked)
	if answered != "" {
		t, _ := time.Parse(timeFormat, answered)
		q.AnsweredAt = &t
	}
	return &q, nil
}

// Question returns one question of an instance.
func (s *Store) Question(ctx context.Context, instanceID, id string) (*Question, error) {
	q, err := scanQuestion(s.db.QueryRowContext(ctx, `SELECT `+questionCols+` FROM questions WHERE instance_id = ? AND id = ?`, instanceID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &NotFoundError{What: "question", Ref: id, Hint: "see `agentctl instance questions " + instanceID + "`"}
	}
	return q, err
}

// Questions returns an instance's questions, oldest first; only the open ones
// unless all is set.
func (s *Store) Questions(ctx context.Context, instanceID string, all bool) ([]*Question, error) {
	q, args := `SELECT `+questionCols+` FROM questions WHERE instance_id = ?`, []any{instanceID}
	if !all {
		q += ` AND status = ?`
		args = append(args, QuestionOpen)
	}
	rows, err := s.db.QueryContext(ctx, q+` ORDER BY id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*Question{}
	for rows.Next() {
		qq, err := scanQuestion(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, qq)
	}
	return out, rows.Err()
}

// Answer answers an open question. With an empty questionID the instance must
// have exactly one open question, which is answered.
func (s *Store) Answer(ctx context.Context, instanceID, questionID, answer string) (*Question, error) {
	if questionID == "" {
		open, err := s.Questions(ctx, instanceID, false)
		if err != nil {
			return nil, err
		}
		switch len(open) {
		case 0:
			return nil, &NotFoundError{What: "open question for instance", Ref: instanceID, Hint: "nothing is waiting for an answer"}
		case 1:
			questionID = open[0].ID
		default:
			ids := make([]string, len(open))
			for i, q := range open {
				ids[i] = q.ID
			}
			return nil, &AmbiguousError{What: "answer without a question id", Ref: instanceID, Matches: ids}
		}
	}
	q, err := s.Question(ctx, instanceID, questionID)
	if err != nil {
		return nil, err
	}
	if q.Status != QuestionOpen {
		return nil, &InvalidError{Msg: fmt.Sprintf("question %s is %s, not open; it cannot be answered any more", q.ID, q.Status)}
	}
	now := s.stamp()
	res, err := s.db.ExecContext(ctx, `UPDATE questions SET status = ?, answer = ?, answered_at = ? WHERE id = ? AND status = ?`,
		QuestionAnswered, answer, now.Format(timeFormat), q.ID, QuestionOpen)
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, &InvalidError{Msg: fmt.Sprintf("question %s was closed while answering; it cannot be answered any more", q.ID)}
	}
	q.Status, q.Answer, q.AnsweredAt = QuestionAnswered, answer, &now
	return q, nil
}

// closeQuestion gives an open question status ([QuestionExpired] or
// [QuestionCancelled]). It reports false if the question was no longer open
// (an answer won the race), and an error matching [ErrDeleted] if the
// instance was deleted.
func (s *Store) closeQuestion(ctx context.Context, instanceID, questionID, status string) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE questions SET status = ? WHERE instance_id = ? AND id = ? AND status = ?`, status, instanceID, questionID, QuestionOpen)
	if err != nil {
		return false, s.orDeleted(ctx, instanceID, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return true, nil
	}
	return false, s.orDeleted(ctx, instanceID, nil)
}

// ExpireQuestion marks an open question [QuestionExpired]: it got no answer
// in time. It reports false if the question was no longer open (an answer
// won the race), and an error matching [ErrDeleted] if the instance was
// deleted.
func (s *Store) ExpireQuestion(ctx context.Context, instanceID, questionID string) (bool, error) {
	return s.closeQuestion(ctx, instanceID, questionID, QuestionExpired)
}

// CancelQuestion marks an open question [QuestionCancelled]: its call was
// cancelled or its endpoint stopped. It reports false and errors as
// [Store.ExpireQuestion] does.
func (s *Store) CancelQuestion(ctx context.Context, instanceID, questionID string) (bool, error) {
	return s.closeQuestion(ctx, instanceID, questionID, QuestionCancelled)
}

// AddEvent records a progress event and returns it with its sequence number.
func (s *Store) AddEvent(ctx context.Context, e Event) (*Event, error) {
	e.At = s.stamp()
	res, err := s.db.ExecContext(ctx, `INSERT INTO events (instance_id, at, tool, status, message, percent) VALUES (?, ?, ?, ?, ?, ?)`,
		e.InstanceID, e.At.Format(timeFormat), e.Tool, e.Status, e.Message, e.Percent)
	if err != nil {
		return nil, s.orDeleted(ctx, e.InstanceID, err)
	}
	e.Seq, _ = res.LastInsertId()
	return &e, nil
}

// Events returns an instance's events with a sequence number above after.
func (s *Store) Events(ctx context.Context, instanceID string, after int64) ([]*Event, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, instance_id, at, tool, status, message, percent FROM events WHERE instance_id = ? AND seq > ? ORDER BY seq`, instanceID, after)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*Event{}
	for rows.Next() {
		var e Event
		var at string
		var pct sql.NullFloat64
		if err := rows.Scan(&e.Seq, &e.InstanceID, &at, &e.Tool, &e.Status, &e.Message, &pct); err != nil {
			return nil, err
		}
		e.At, _ = time.Parse(timeFormat, at)
		if pct.Valid {
			p := pct.Float64
			e.Percent = &p
		}
		out = append(out, &e)
	}
	return out, rows.Err()
}

// Exists reports whether the instance still exists (for endpoints that
// outlive a delete).
func (s *Store) Exists(ctx context.Context, id string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM instances WHERE id = ?`, id).Scan(&n)
	return n == 1, err
}

// orDeleted explains a failed write or an empty read for instance id: if
// the instance no longer exists (a foreign key failed, or its questions went
// with it) it returns an error matching [ErrDeleted], else err as it is. The
// happy path never pays for the look.
func (s *Store) orDeleted(ctx context.Context, id string, err error) error {
	if ok, xerr := s.Exists(ctx, id); xerr == nil && !ok {
		return deletedError(id)
	}
	return err
}

// AskQuestion stores an open question and returns its id (for the endpoint).
// Like [Store.PollAnswer], [Store.ExpireQuestion] and [Store.RecordProgress]
// it returns an error matching [ErrDeleted] once the instance is deleted.
func (s *Store) AskQuestion(ctx context.Context, instanceID, text string, choices []string) (string, error) {
	q, err := s.AddQuestion(ctx, instanceID, text, choices)
	if err != nil {
		return "", err
	}
	return q.ID, nil
}

// PollAnswer reports a question's answer once it has one (for the endpoint).
func (s *Store) PollAnswer(ctx context.Context, instanceID, questionID string) (string, bool, error) {
	var status, answer string
	err := s.db.QueryRowContext(ctx, `SELECT status, coalesce(answer, '') FROM questions WHERE instance_id = ? AND id = ?`, instanceID, questionID).Scan(&status, &answer)
	if errors.Is(err, sql.ErrNoRows) {
		// Deleting an instance deletes its questions.
		return "", false, s.orDeleted(ctx, instanceID, &NotFoundError{What: "question", Ref: questionID, Hint: "see `agentctl instance questions " + instanceID + "`"})
	}
	if err != nil {
		return "", false, err
	}
	return answer, status == QuestionAnswered, nil
}

// RecordProgress stores a progress event (for the endpoint).
func (s *Store) RecordProgress(ctx context.Context, instanceID, tool, status, message string, percent *float64) (int64, error) {
	e, err := s.AddEvent(ctx, Event{InstanceID: instanceID, Tool: tool, Status: status, Message: message, Percent: percent})
	if err != nil {
		return 0, err
	}
	return e.Seq, nil
}
