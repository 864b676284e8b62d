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
)

// Store is the state of agentctl: instance records, their tokens,
// questions, events and runs, in SQLite or PostgreSQL (see [backend]), and
// the instance directories of this host. It is safe for concurrent use, also
// by many processes (and, on PostgreSQL, many hosts) at once.
type Store struct {
	db  *db
	dir string
	now func() time.Time
	// url names the database (see [WithStore]); sqlitePath is the SQLite
	// file's, "" on PostgreSQL.
	url        StoreURL
	sqlitePath string
	// host names this host in the records it creates (see [WithHost]).
	host string
	// configFile is the configuration file given (see [WithConfigFile]).
	configFile string
	// notify is what the store's writes notify (see [WithNotify]).
	notify *Notify

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

// WithStore sets the database the store keeps its state in (see
// [StoreURL]); by default, SQLite in the state directory.
func WithStore(u StoreURL) Option { return func(s *Store) { s.url = u } }

// WithHost sets the name of this host, which the records of the instances
// created here carry (default: os.Hostname).
func WithHost(name string) Option { return func(s *Store) { s.host = name } }

// WithConfigFile names the configuration file the command was given (by
// --config or AGENTCTL_CONFIG): the endpoints it writes entries for read
// the same one ([Store.EndpointEntry]), not the default.
func WithConfigFile(path string) Option { return func(s *Store) { s.configFile = path } }

// Open opens (creating if needed) the store in dir and migrates its schema.
// dir holds the instance directories of this host; the records live in the
// database [WithStore] names, by default SQLite in dir.
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
	s := &Store{dir: abs, now: time.Now, entropy: ulid.Monotonic(rand.Reader, 0)}
	for _, o := range opts {
		o(s)
	}
	if s.host == "" {
		s.host, _ = os.Hostname()
	}
	kind, where, err := parseStore(s.url, abs)
	if err != nil {
		return nil, err
	}
	var sqldb *sql.DB
	var be backend
	switch kind {
	case "postgres":
		sqldb, be, err = openPostgres(ctx, where)
	default:
		if !filepath.IsAbs(where) {
			where, _ = filepath.Abs(where)
		}
		var sb *sqliteBackend
		sqldb, sb, err = openSQLite(ctx, where, s.instancesDir())
		s.sqlitePath, be = where, sb
	}
	if err != nil {
		return nil, err
	}
	s.db = &db{DB: sqldb, be: be}
	return s, nil
}

// dbError names the state database in an error from it.
func (s *Store) dbError(err error) error {
	if s.sqlitePath != "" {
		return fmt.Errorf("state database %s: %w", s.sqlitePath, err)
	}
	return storeError(s.db.be, err)
}

// Close closes the database. With [ClosedByExit] it leaves it open, but
// folds a WAL grown past [walCheckpointPages] into the database first (see
// trimWAL).
func (s *Store) Close() error {
	if sb, ok := s.db.be.(*sqliteBackend); ok {
		sb.Close() // its watch holds a connection, and reads in the WAL
		if s.exiting {
			s.trimWAL()
			return nil
		}
		return s.db.Close()
	}
	err := s.db.Close()
	if c, ok := s.db.be.(interface{ Close() }); ok {
		c.Close()
	}
	return err
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
	sb, ok := s.db.be.(*sqliteBackend)
	if !ok {
		return
	}
	fi, err := os.Stat(sb.real + "-wal")
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

// Kind is the kind of database the store keeps its state in: "sqlite" or
// "postgres".
func (s *Store) Kind() string { return s.db.be.Kind() }

// StoreName names the database the store keeps its state in, as messages
// show it: a SQLite file's path, or a PostgreSQL URL without its password.
func (s *Store) StoreName() string { return s.db.be.Name() }

// Host is the name of this host, as the records of the instances created
// here carry it.
func (s *Store) Host() string { return s.host }

// Ping reports whether the database answers (for /health).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return s.dbError(err)
	}
	return nil
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
	return s.decode(row.id, row.raw)
}

// decode is [decodeRecord] as this host sees the record (see
// [Store.localize]).
func (s *Store) decode(id, raw string) (*Record, error) {
	r, err := decodeRecord(id, raw)
	if err == nil && s.foreignRecord(r) {
		r.foreign = true
		s.localize(r)
	}
	return r, err
}

// Foreign reports whether r's files are another host's: it was created on
// a host of another name that shares the store.
func (s *Store) Foreign(r *Record) bool { return r.foreign || s.foreignRecord(r) }

// foreignRecord is [Store.Foreign] of a record with the paths it was
// created with. A SQLite file is one machine's: a record of another host
// name whose directory is in this state directory is this host's, under an
// old name (a container's host name changes at each start, and so may a
// laptop's); only one made through another state directory sharing the
// file is another's.
func (s *Store) foreignRecord(r *Record) bool {
	if r.Host == "" || r.Host == s.host {
		return false
	}
	if s.Kind() != "sqlite" {
		return true
	}
	rel, err := filepath.Rel(s.instancesDir(), r.Dir)
	return err != nil || !filepath.IsLocal(rel)
}

// localize points a record made on another host (see [Store.Foreign]) at
// this host's directory for it, which serving and running it here use (for
// its locks and logs, and the client files made again here): Dir and
// MCPConfigPath move under this host's state directory. The record in the
// store keeps its own host's paths. restore undoes it.
func (s *Store) localize(r *Record) (restore func()) {
	if !s.foreignRecord(r) {
		return func() {}
	}
	dir, cfg := r.Dir, r.MCPConfigPath
	local := filepath.Join(s.instancesDir(), r.ID)
	r.Dir = local
	if rel, err := filepath.Rel(dir, cfg); err == nil && filepath.IsLocal(rel) {
		r.MCPConfigPath = filepath.Join(local, rel)
	}
	return func() { r.Dir, r.MCPConfigPath = dir, cfg }
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

// maxAmbiguous is how many of the instances an ambiguous id prefix matches
// its error lists.
const maxAmbiguous = 6

// resolve finds the row that ref names (see [Store.Get]) without decoding
// its record.
func (s *Store) resolve(ctx context.Context, ref string) (*instanceRow, error) {
	return s.resolveRef(ctx, ref, true)
}

// resolveRef is [Store.resolve]; labels false matches ids and id prefixes
// only.
func (s *Store) resolveRef(ctx context.Context, ref string, labels bool) (*instanceRow, error) {
	if ref == "" {
		return nil, invalidf("no instance given; pass an instance id, id prefix or label (see `agentctl instance list`)")
	}
	var q *sql.Row
	if labels {
		q = s.db.QueryRowContext(ctx, `SELECT `+instanceRowCols+` FROM instances WHERE id = ? OR name = ? ORDER BY id = ? DESC LIMIT 1`, ref, ref, ref)
	} else {
		q = s.db.QueryRowContext(ctx, `SELECT `+instanceRowCols+` FROM instances WHERE id = ?`, ref)
	}
	row, err := scanInstanceRow(q)
	if err == nil {
		return row, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+instanceRowCols+` FROM instances WHERE id >= ? AND id < ? ORDER BY id LIMIT ?`, ref, ref+"\U0010FFFF", maxAmbiguous+1)
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
		if lower := strings.ToLower(ref); lower != ref && labels {
			// Ids are lower-case ULIDs; accept the canonical upper-case form
			// too (of an id, never of a label: labels differ by case), and
			// name the reference in an error as it was given.
			row, err := s.resolveRef(ctx, lower, false)
			var amb *AmbiguousError
			var nf *NotFoundError
			switch {
			case errors.As(err, &amb):
				amb.Ref = ref
			case errors.As(err, &nf):
				nf.Ref = ref
			}
			return row, err
		}
		return nil, &NotFoundError{What: "instance", Ref: ref, Hint: "see `agentctl instance list` for the instances in " + s.dir}
	case 1:
		return found[0], nil
	default:
		ids := make([]string, 0, maxAmbiguous)
		for _, r := range found[:min(len(found), maxAmbiguous)] {
			ids = append(ids, r.id)
		}
		return nil, &AmbiguousError{What: "instance id prefix", Ref: ref, Matches: ids, More: len(found) > maxAmbiguous}
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

// Count is the number of instances in the store.
func (s *Store) Count(ctx context.Context) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM instances`).Scan(&n); err != nil {
		return 0, s.dbError(err)
	}
	return n, nil
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
	// Prepare, when not nil, is called with the record once the delete
	// may go ahead (not refused, its locks held), before anything is
	// removed: what still needs the instance's directory goes there
	// (taking its entries out of the files its client reads).
	Prepare func(r *Record)
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
	if o.Prepare != nil {
		o.Prepare(r)
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
