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
	// 2: `instance list --agent` reads only that agent's rows.
	`CREATE INDEX instances_agent ON instances(agent, id);`,
	// 3: each instance's bearer token, as its SHA-256 only (see token.go);
	// never in the record, which `instance show` prints.
	`CREATE TABLE instance_tokens (
		instance_id TEXT PRIMARY KEY REFERENCES instances(id) ON DELETE CASCADE,
		hash        BLOB NOT NULL
	);`,
	// 4: each instance's latest progress status beside its record, so that
	// `instance list --status` reads the instances_status index instead of
	// every instance's latest event. Backfilled here, in the migration's
	// transaction; from then on the trigger sets it in the statement (and
	// so the transaction) of every event insert, whichever code makes it,
	// an endpoint of an older agentctl that is still serving included.
	`ALTER TABLE instances ADD COLUMN status TEXT NOT NULL DEFAULT '';
	UPDATE instances SET status = (SELECT e.status FROM events e WHERE e.instance_id = instances.id ORDER BY e.seq DESC LIMIT 1)
		WHERE id IN (SELECT instance_id FROM events);
	CREATE INDEX instances_status ON instances(status, id);
	CREATE TRIGGER events_status AFTER INSERT ON events BEGIN
		UPDATE instances SET status = NEW.status WHERE id = NEW.instance_id AND status <> NEW.status;
	END;`,
	// 5: the run an event belongs to: the id of the `instance run` under
	// way (the record's last_run without an end) when it was recorded, ''
	// for none; `instance wait --run` reads a run's events by it.
	`ALTER TABLE events ADD COLUMN run_id TEXT NOT NULL DEFAULT '';`,
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
	// diskFullHook, when set (tests only), is asked before each write of
	// DeleteInstance; true makes it fail as on a full disk (see space.go).
	diskFullHook func() bool
	// exiting: Close leaves the database to the process's exit (see
	// [ClosedByExit]).
	exiting bool
	// lostClientGrace, when set (tests only), replaces [LostClientGrace].
	lostClientGrace time.Duration
}

// Option configures a [Store].
type Option func(*Store)

// WithClock sets the clock the store stamps records and events with.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// walCheckpointPages is the WAL's size, in pages, at which a commit
// checkpoints it into the database (SQLite's default is 1,000), and past
// which a CLI command's Close truncates it (see [Store.trimWAL]). Each
// process's first read rebuilds the WAL's index from the WAL when no other
// process has it open (2-3 µs a page here), and a CLI command is such a
// process: a short WAL keeps that small, at the cost of a checkpoint every
// dozen or so write commands (see [ClosedByExit]).
const walCheckpointPages = 100

// ClosedByExit makes [Store.Close] leave the database open for the
// process's exit to release, for a process that exits right after it is
// done with the store (a CLI command). Closing the last connection makes
// SQLite checkpoint the WAL into the database and delete it: two fsyncs on
// every command, and the next command's first write recreates the WAL and
// syncs its header again. Left to the exit, committed transactions stay in
// the WAL, as after a killed process, until a Close finds it past
// [walCheckpointPages] and folds it in. A backup must then copy the -wal
// file with the database (or use sqlite3's .backup).
func ClosedByExit() Option { return func(s *Store) { s.exiting = true } }

// dsnParams are the connection settings of the state database: wait up to
// 30 s for another process's lock, enforce foreign keys, sync at
// checkpoints only (WAL), checkpoint every [walCheckpointPages], and take
// the write lock at BEGIN.
func dsnParams() string {
	return fmt.Sprintf("?_pragma=busy_timeout(30000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"+
		"&_pragma=wal_autocheckpoint(%d)&_txlock=immediate", walCheckpointPages)
}

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
	db, err := sql.Open("sqlite", "file:"+dbPath+dsnParams())
	if err != nil {
		return nil, fmt.Errorf("open state database %s: %w", dbPath, err)
	}
	s := &Store{db: db, dir: abs, now: time.Now, entropy: ulid.Monotonic(rand.Reader, 0)}
	for _, o := range opts {
		o(s)
	}
	if err := s.init(ctx, inWAL(dbPath)); err != nil {
		db.Close()
		if isDiskFull(err) {
			return nil, &DiskFullError{Dir: abs, Op: "open the state database " + dbPath, Err: err}
		}
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
		"restore %s (and its -wal file) from a backup, or move the state directory %s aside to start afresh", dbPath, instancesDir, n, DBFile, filepath.Dir(dbPath))
}

// inWAL reports whether the database file at path is in WAL mode already,
// as its header says (bytes 18 and 19, the file format's write and read
// versions, are 2 in WAL mode; the mode persists in the file). Unreadable
// or short: false, and init sets the mode.
func inWAL(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var hdr [20]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return false
	}
	return string(hdr[:16]) == "SQLite format 3\x00" && hdr[18] == 2 && hdr[19] == 2
}

// init turns WAL on (unless the file says it is on: a statement fewer for
// every command) and applies pending migrations, safely against other
// processes doing the same at the same moment.
func (s *Store) init(ctx context.Context, wal bool) error {
	// Switching to WAL needs a moment alone with the file; SQLite reports
	// SQLITE_BUSY at once rather than waiting, so retry briefly.
	var mode string
	for i := 0; !wal; i++ {
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

// dbError names the state database in an error from it.
func (s *Store) dbError(err error) error {
	return fmt.Errorf("state database %s: %w", filepath.Join(s.dir, DBFile), err)
}

func isBusy(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "SQLITE_BUSY") || strings.Contains(err.Error(), "database is locked"))
}

// Close closes the database. With [ClosedByExit] it leaves it open, but
// folds a WAL grown past [walCheckpointPages] into the database first (see
// trimWAL).
func (s *Store) Close() error {
	if s.exiting {
		s.trimWAL()
		return nil
	}
	return s.db.Close()
}

// walFrameBytes is the size of one WAL frame: a page (SQLite's default
// 4,096 bytes, which the store keeps) and its 24-byte header.
const walFrameBytes = 4096 + 24

// trimWAL checkpoints the WAL into the database and truncates it, when it
// holds more than [walCheckpointPages] frames, unless another process is
// using the database at that moment (it does not wait: the next command
// will). A process that exits without closing the database leaves its
// commits in the WAL; the next process to open it rebuilds the WAL's index
// from the whole file, which also forgets what was checkpointed (it lives
// in that index), so no later writer restarts the WAL from its start. Left
// so, the WAL grew by every write command, and every command's first read
// and every automatic checkpoint cost more as it did.
func (s *Store) trimWAL() {
	fi, err := os.Stat(filepath.Join(s.dir, DBFile+"-wal"))
	if err != nil || fi.Size() <= 32+walCheckpointPages*walFrameBytes {
		return
	}
	ctx := context.Background()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		return
	}
	defer conn.ExecContext(ctx, "PRAGMA busy_timeout = 30000")
	var busy, frames, done int
	_ = conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &frames, &done)
}

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
	// [Store.ServeLock]), whose built-in tools then answer that the
	// instance was deleted, or while `instance run` runs its client (see
	// [Store.RunLock]), which then runs on without its directory.
	Force bool
}

// Delete is [Store.DeleteInstance] without options: it refuses an instance
// that an endpoint is serving or a run is running.
func (s *Store) Delete(ctx context.Context, ref string) (*Record, error) {
	return s.DeleteInstance(ctx, ref, DeleteOptions{})
}

// DeleteInstance removes the instance ref names, its questions, events and
// directory. Unless o.Force is set, it refuses with a [*ServedError]
// (matching [ErrConflict]) an instance that an endpoint is serving, and
// with a [*RunningError] (matching [ErrConflict] too) one whose client
// `instance run` is running, and holds off endpoints and runs starting
// on it until it is done. It works on a full file system too, taking the
// least space it can (see space.go); when even that fails, the error is a
// [*DiskFullError] saying what was done.
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
		unlockRun, running, pid, err := s.probeRun(row.id)
		if err != nil {
			return nil, fmt.Errorf("delete instance %s: %w", row.id, err)
		}
		defer unlockRun()
		switch {
		case running:
			// Before live: a run's client serves its instance too, and
			// the run is what says how to stop it.
			return nil, s.runningError(ctx, row.id, pid)
		case live:
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
	n, err := s.deleteRow(ctx, row.id)
	if isDiskFull(err) {
		// The directory goes first, then the reserve (see space.go).
		var partly string
		n, partly, err = s.deleteRowsOnFullDisk(ctx, row.id, trash, dir, moved)
		if err != nil && partly != "" {
			return nil, s.diskFull("delete instance "+row.id, partly, "agentctl instance delete "+row.id, err)
		}
		if _, serr := os.Lstat(trash); serr != nil {
			moved = false // removed on the way
		}
	}
	if err != nil {
		if moved {
			_ = os.Rename(trash, dir)
		}
		return nil, s.diskFull("delete instance "+row.id, "", "", err)
	}
	if n == 0 {
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
