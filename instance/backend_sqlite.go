package instance

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	_ "modernc.org/sqlite" // the pure-Go SQLite driver
)

// sqliteBackend is the default [backend]: a file in the state directory
// (or where sqlite:PATH says), in WAL mode, one writer at a time.
type sqliteBackend struct {
	path string
	// real is path with every link resolved: SQLite keeps its -wal and
	// -shm files beside it.
	real string
	db   *sql.DB
	*watchSet
	// The watch's parts ([sqliteBackend.watchVersion]), which tests
	// replace: the read of conn's data version, the file events, and the
	// pause between reads when no file changed.
	version  func(conn *sql.Conn) (int64, error)
	files    func(path string) (<-chan struct{}, func())
	fallback time.Duration
}

func newSQLiteBackend(path, real string, db *sql.DB) *sqliteBackend {
	b := &sqliteBackend{path: path, real: real, db: db, version: dataVersion, files: fileChanges, fallback: sqliteWatchFallback}
	b.watchSet = newWatchSet(b.watchVersion)
	return b
}

func (b *sqliteBackend) Kind() string           { return "sqlite" }
func (b *sqliteBackend) Name() string           { return b.path }
func (b *sqliteBackend) rebind(q string) string { return q }

// isUnavailable: a SQLite file is always there to reach; but a write lock
// another process held past the busy timeout (a gc compacting the
// database, a store migrate into it) is worth trying again later, as an
// unreachable server is.
func (b *sqliteBackend) isUnavailable(err error) bool { return isBusy(err) }
func (b *sqliteBackend) isUnique(err error) bool {
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// lockKey: a write transaction begins IMMEDIATE, so it holds the one write
// lock already.
func (b *sqliteBackend) lockKey(context.Context, *sql.Tx, string) error { return nil }

func (b *sqliteBackend) jsonText(col, path string) string {
	return "json_extract(" + col + ", '$." + path + "')"
}

func (b *sqliteBackend) jsonSet(col, key string) string {
	return "json_set(" + col + ", '$." + key + "', json(?))"
}

func (b *sqliteBackend) notify(context.Context, execer, string, string) error { return nil }
func (b *sqliteBackend) failed(error)                                         {}
func (b *sqliteBackend) notifying(q, _ string) string                         { return q }

func (b *sqliteBackend) watch(_ context.Context, channel, payload string) (<-chan struct{}, func()) {
	return b.subscribe(channel, payload)
}

// dataVersion is conn's PRAGMA data_version. Not with a context that can
// end: that costs database/sql and the driver a goroutine each per
// statement, most of what the read costs; with no lock to wait for
// (busy_timeout 0), it is short.
func dataVersion(conn *sql.Conn) (v int64, err error) {
	err = conn.QueryRowContext(context.Background(), "PRAGMA data_version").Scan(&v)
	return v, err
}

// discard closes conn without giving it back to the pool: the watch's
// connection waits for no lock (busy_timeout 0), which the store's other
// work must not inherit, and one whose read failed is not tried again.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	conn.Close()
}

// Close ends the watch ([sqliteBackend.watchVersion]) and discards its
// connection; the store closes the database after.
func (b *sqliteBackend) Close() { b.stop() }

// SQLiteWatchInterval is the least pause between two wakes of a SQLite
// store's watchers ([Store.WatchEvents] and the others), so that a store
// written without pause costs each watcher no more reads than polling at
// that interval would; and how often the store is asked whether anything
// was committed where the system cannot tell when its files change.
const SQLiteWatchInterval = 250 * time.Millisecond

// sqliteWatchFallback is how often a watched SQLite store is asked
// although none of its files changed, in case a change went unreported.
const sqliteWatchFallback = 10 * time.Second

// sqliteSettleStep is how often a watched SQLite store is asked, for up to
// [SQLiteWatchInterval] after a reported write, until a commit shows.
const sqliteSettleStep = 10 * time.Millisecond

// watchVersion is SQLite's watch. SQLite has no notifications, but a
// connection's PRAGMA data_version changes whenever another connection, of
// this process or another, commits, and every commit writes the database's
// WAL file. One held connection asks when the system reports a write to
// the database's files (fsnotify, which viper links already; every
// [SQLiteWatchInterval] where there is none; and again shortly while a
// reported write shows no commit yet), and a change wakes every watcher,
// since it does not say what changed: an idle store costs its watchers
// nothing, and a change reaches them at once. After a reported write it
// keeps asking, every [SQLiteWatchInterval] and then less and less often,
// for a commit published later still (a writer that syncs its WAL before
// publishing). A read that fails discards its connection and wakes every
// watcher, at each try (every [SQLiteWatchInterval]) until a new
// connection answers and once more then, since a commit meanwhile went
// unseen; likewise at the start. Should the system stop reporting the
// files' writes (their folder removed), it polls.
func (b *sqliteBackend) watchVersion(ctx context.Context, w *watchSet) {
	changed, stopFiles := b.files(b.real)
	defer stopFiles()
	poll := SQLiteWatchInterval
	if changed != nil {
		poll = b.fallback
	}
	// next is the pause before the next read while no write is reported:
	// SQLiteWatchInterval after one, doubling up to poll.
	next := poll
	t := time.NewTimer(poll)
	defer t.Stop()
	var (
		conn *sql.Conn
		last int64 // the version conn gave last, when seen
		seen bool
		// missed: a commit before the first version seen may have come
		// after a watcher's read (at the start, or after a failure).
		missed = true
		// settle: until when a reported write may still become a commit.
		settle time.Time
	)
	defer func() {
		if conn != nil {
			discard(conn)
		}
	}()
	for {
		var v int64
		err := ctx.Err()
		if err == nil && conn == nil {
			conn, err = b.db.Conn(ctx)
			if err == nil {
				// Never wait for a lock: busy is a failure, which wakes.
				_, err = conn.ExecContext(ctx, "PRAGMA busy_timeout = 0")
			}
		}
		if err == nil {
			v, err = b.version(conn)
		}
		woke := true // also after a failure, to be tried again soon
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if conn != nil {
				discard(conn)
				conn = nil
			}
			seen, missed = false, true
		case !seen: // versions of different connections do not compare
			last, seen, woke = v, true, missed
			missed = false
		case v != last:
			last = v
		default:
			woke = false
		}
		pause := time.Duration(0)
		switch {
		case woke:
			w.wake("")
			// At most one wake per interval. What comes meanwhile, and a
			// commit whose writes were reported with the one just seen,
			// is read after the pause.
			pause = SQLiteWatchInterval
		case changed != nil && time.Now().Before(settle):
			// A write was reported, but no commit shows yet: SQLite
			// writes a commit to the WAL first and publishes it in its
			// shared memory after, which the system does not report.
			pause = sqliteSettleStep
		}
		if pause > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
			continue
		}
		t.Reset(next)
		select {
		case <-ctx.Done():
			return
		case _, ok := <-changed:
			if !ok { // no more reports: poll
				changed, poll = nil, SQLiteWatchInterval
			}
			settle, next = time.Now().Add(SQLiteWatchInterval), SQLiteWatchInterval
		case <-t.C:
			next = min(2*next, poll)
		}
	}
}

// fileChanges returns a channel that receives after the system reports a
// write to the SQLite database at path (links resolved) or to its WAL
// (coalesced: one receive may stand for many), and is closed when the
// system stops reporting them (their folder removed), and the function
// that ends the watch; nil when the system cannot report them (no file
// events here, or the limit of them reached).
func fileChanges(path string) (<-chan struct{}, func()) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, func() {}
	}
	// The folder, not the files: the WAL may be made anew.
	dir := filepath.Dir(path)
	if err := fw.Add(dir); err != nil {
		fw.Close()
		return nil, func() {}
	}
	base := filepath.Base(path)
	changed, done := make(chan struct{}, 1), make(chan struct{})
	go func() {
		defer close(done)
		defer close(changed)
		for {
			select {
			case ev, ok := <-fw.Events:
				if !ok || filepath.Clean(ev.Name) == dir && ev.Op&(fsnotify.Remove|fsnotify.Rename) != 0 {
					return
				}
				if n := filepath.Base(ev.Name); ev.Op == fsnotify.Chmod || n != base && n != base+"-wal" {
					continue
				}
			case _, ok := <-fw.Errors: // events lost (an overflow): ask
				if !ok {
					return
				}
			}
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	}()
	return changed, func() {
		fw.Close()
		<-done
	}
}

// openSQLite opens (creating if needed) the SQLite database at path, whose
// instance directories are in instancesDir, and migrates its schema.
func openSQLite(ctx context.Context, path, instancesDir string) (*sql.DB, *sqliteBackend, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, fmt.Errorf("state database %s: %w", path, err)
	}
	if err := checkNotEmptied(path, instancesDir); err != nil {
		return nil, nil, err
	}
	db, err := sql.Open("sqlite", "file:"+uriPath(path)+dsnParams())
	if err != nil {
		return nil, nil, fmt.Errorf("open state database %s: %w", path, err)
	}
	if err := sqliteInit(ctx, db, inWAL(path)); err != nil {
		db.Close()
		if isDiskFull(err) {
			return nil, nil, &DiskFullError{Dir: filepath.Dir(path), Op: "open the state database " + path, Err: err}
		}
		return nil, nil, fmt.Errorf("open state database %s: %w", path, err)
	}
	// SQLite keeps the -wal and -shm files beside the database's real
	// path, where path is a link.
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		real = path
	}
	for _, f := range []string{real, real + "-wal", real + "-shm"} {
		_ = os.Chmod(f, 0o600) // SQLite creates them by the umask
	}
	return db, newSQLiteBackend(path, real, db), nil
}

// DBFile is the name of the state database inside the state directory.
const DBFile = "state.db"

// sqliteMigrations are applied in order; PRAGMA user_version counts those
// applied.
// Never edit one that has shipped: append a new one.
var sqliteMigrations = []string{
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
	// 6: the host that holds each instance's files (`instance list --host`),
	// the fleet's open questions oldest first (`instance questions`), and
	// headless runs' output in chunks, for `instance logs` on other hosts
	// (written when the store is shared; see runlog.go).
	`ALTER TABLE instances ADD COLUMN host TEXT NOT NULL DEFAULT '';
	CREATE INDEX instances_host ON instances(host, id);
	CREATE INDEX questions_open ON questions(status, id);
	CREATE TABLE run_logs (
		seq         INTEGER PRIMARY KEY AUTOINCREMENT,
		instance_id TEXT NOT NULL REFERENCES instances(id) ON DELETE CASCADE,
		run_id      TEXT NOT NULL,
		at          TEXT NOT NULL,
		data        BLOB NOT NULL
	);
	CREATE INDEX run_logs_instance ON run_logs(instance_id, seq);`,
	// 7: notifications' outbox (a delivery survives the process that made
	// it; its id makes a retry recognisable), and the operators of the web
	// page: their tokens and sessions, as SHA-256 hashes only.
	`CREATE TABLE notify_outbox (
		id           TEXT PRIMARY KEY,
		target       TEXT NOT NULL,
		event        TEXT NOT NULL,
		instance_id  TEXT NOT NULL,
		payload      TEXT NOT NULL,
		created_at   TEXT NOT NULL,
		status       TEXT NOT NULL,
		attempts     INTEGER NOT NULL DEFAULT 0,
		next_at      TEXT NOT NULL,
		last_error   TEXT NOT NULL DEFAULT '',
		delivered_at TEXT
	);
	CREATE INDEX notify_outbox_due ON notify_outbox(status, next_at);
	CREATE TABLE operator_tokens (
		id         TEXT PRIMARY KEY,
		hash       BLOB NOT NULL UNIQUE,
		created_at TEXT NOT NULL,
		revoked_at TEXT
	);
	CREATE TABLE ui_sessions (
		hash       BLOB PRIMARY KEY,
		token_id   TEXT NOT NULL REFERENCES operator_tokens(id) ON DELETE CASCADE,
		csrf       TEXT NOT NULL,
		created_at TEXT NOT NULL,
		expires_at TEXT NOT NULL
	);`,
	// 8: each question carries its instance's label, agent and host (none
	// of which changes after create), so that the fleet's inbox reads the
	// questions alone: backfilled here, then set by the trigger at each
	// insert (see questionInstanceBackfill).
	`ALTER TABLE questions ADD COLUMN instance_name TEXT;
	ALTER TABLE questions ADD COLUMN agent TEXT NOT NULL DEFAULT '';
	ALTER TABLE questions ADD COLUMN host TEXT NOT NULL DEFAULT '';
	` + questionInstanceBackfill + `;
	CREATE TRIGGER questions_instance AFTER INSERT ON questions BEGIN
		UPDATE questions SET (instance_name, agent, host) = (SELECT i.name, i.agent, i.host FROM instances i WHERE i.id = NEW.instance_id)
			WHERE id = NEW.id AND EXISTS (SELECT 1 FROM instances i WHERE i.id = NEW.instance_id);
	END;`,
}

// uriPath is path as a SQLite URI holds it: a state directory named
// "s#1" or "a?b" would end the file name there, and the database would be
// made elsewhere, without its settings.
func uriPath(path string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
}

// dsnParams are the connection settings of the state database: wait up to
// 30 s for another process's lock, enforce foreign keys, sync at
// checkpoints only (WAL), checkpoint every [walCheckpointPages], and take
// the write lock at BEGIN.
func dsnParams() string {
	return fmt.Sprintf("?_pragma=busy_timeout(30000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"+
		"&_pragma=wal_autocheckpoint(%d)&_txlock=immediate", walCheckpointPages)
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
func sqliteInit(ctx context.Context, db *sql.DB, wal bool) error {
	// Switching to WAL needs a moment alone with the file; SQLite reports
	// SQLITE_BUSY at once rather than waiting, so retry briefly.
	var mode string
	for i := 0; !wal; i++ {
		err := db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
		if err == nil {
			break
		}
		if i >= 200 || !isBusy(err) {
			return err
		}
		time.Sleep(time.Duration(5+i%10) * time.Millisecond)
	}
	var v int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v == len(sqliteMigrations) {
		return nil
	}
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: one migrator at a time
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v > len(sqliteMigrations) {
		return fmt.Errorf("the state database has schema version %d, newer than this agentctl knows (%d); upgrade agentctl", v, len(sqliteMigrations))
	}
	for i := v; i < len(sqliteMigrations); i++ {
		if _, err := tx.ExecContext(ctx, sqliteMigrations[i]); err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(sqliteMigrations))); err != nil {
		return err
	}
	return tx.Commit()
}

func isBusy(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "SQLITE_BUSY") || strings.Contains(err.Error(), "database is locked"))
}
