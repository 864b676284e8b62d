package kb

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver, with FTS5
)

// indexSchemaVersion is the index database's schema (PRAGMA user_version).
// An index of another version is dropped and rebuilt from the files: it
// holds nothing the folder does not.
const indexSchemaVersion = 1

// indexSchema: files has a row per concept seen, with what its file was
// when it was indexed; fts has the text of those with indexed = 1, under the
// same rowid. (files.unreadable, ctime_ns and hash came after version 1:
// init adds them to an index without them, rather than rebuilding; older
// binaries, which name the columns they write, leave them 0, so a row an
// older binary wrote is read again: its ctime is not the file's.) fts is contentless (it keeps the index, not the text), so the
// database stays a fraction of the corpus. meta holds "reconciled": when
// the last complete reconcile started and the MaxBytes it indexed up to.
var indexSchema = []string{
	`DROP TABLE IF EXISTS files`,
	`DROP TABLE IF EXISTS fts`,
	`DROP TABLE IF EXISTS meta`,
	`CREATE TABLE files (
		doc      INTEGER PRIMARY KEY,
		id       TEXT NOT NULL UNIQUE,
		size     INTEGER NOT NULL,
		mtime_ns INTEGER NOT NULL, -- -1: modified as it was read; read again
		inode    INTEGER NOT NULL,
		indexed  INTEGER NOT NULL, -- 0: over the MaxBytes of the process that saw it, or unreadable
		title    TEXT NOT NULL,
		unreadable INTEGER NOT NULL DEFAULT 0, -- 1: could not be read (permissions)
		ctime_ns INTEGER NOT NULL DEFAULT 0, -- status change time; -1: changed as it was read; 0: unknown
		hash     INTEGER NOT NULL DEFAULT 0 -- of the content indexed (contentHash); 0: unknown
	)`,
	`CREATE VIRTUAL TABLE fts USING fts5(title, body, content='', contentless_delete=1, tokenize='porter unicode61')`,
	`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID`,
}

// IndexPath returns the file that holds the search index of the folder dir
// under indexDir: one database per folder, named by the SHA-256 of the
// folder's real path (its first 128 bits, in hex), so every process that mounts the folder, under any
// name or through any link, shares it.
func IndexPath(indexDir, dir string) (string, error) {
	real, err := realPath(dir)
	if err != nil {
		return "", err
	}
	return indexPathOf(indexDir, real), nil
}

// indexPathOf is [IndexPath] of a folder's real path.
func indexPathOf(indexDir, real string) string {
	sum := sha256.Sum256([]byte(real))
	return filepath.Join(indexDir, hex.EncodeToString(sum[:16])+".db")
}

// realPath is the absolute path of dir with every link resolved.
func realPath(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// ftsIndex is an open index database.
type ftsIndex struct {
	db   *sql.DB
	path string
	// file is the database file as opened: a damaged index that SQLite
	// does not take for a database is replaced by a new file (see
	// resetIndex), which [Base.index] notices.
	file os.FileInfo
	// private is a temporary folder holding the index of a base opened
	// without [Options.IndexDir]; Close removes it.
	private string
	// matched, when not nil, is called by a search between its FTS5 query
	// and its look-up of the hits' rows (tests set it to change the index
	// there).
	matched func()
	// noPrune makes search run every query whole (tests compare); splits
	// counts the searches answered by the cheaper queries (pruned).
	noPrune bool
	splits  atomic.Int64
}

// openIndex opens (creating it when missing) the index database at path.
func openIndex(ctx context.Context, path string) (*ftsIndex, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, indexFault(path, fmt.Errorf("create its folder: %w", err))
	}
	if err := notAFile(path); err != nil {
		return nil, indexFault(path, err)
	}
	db, err := sql.Open("sqlite", indexDSN(path))
	if err != nil {
		return nil, indexFault(path, err)
	}
	ix := &ftsIndex{db: db, path: path}
	if err := ix.init(ctx); err != nil {
		db.Close()
		return nil, indexFault(path, err)
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		_ = os.Chmod(f, 0o600) // it holds the words of the concepts; SQLite creates by the umask
	}
	ix.file, _ = os.Stat(path)
	return ix, nil
}

// indexDSN is the data source name of the index database at path.
func indexDSN(path string) string {
	return fileURI(path) + "?_pragma=busy_timeout(30000)&_pragma=synchronous(NORMAL)&_txlock=immediate"
}

// fileURI is the SQLite URI of the file at path, its name escaped as a URI
// needs: '?', '#' and '%' would end or change it (a state directory named
// "s#x" put the index outside it, without its settings, one index for
// every knowledge base).
func fileURI(path string) string {
	return "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
}

// init turns WAL on and creates the schema, or recreates it when its version
// is not this one's; safe against other processes doing the same.
func (ix *ftsIndex) init(ctx context.Context) error {
	// What the file holds, before anything is written to it: a database
	// that is not a search index is not made one.
	if err := ix.checkSchema(ctx); err != nil {
		return err
	}
	var mode string
	for i := 0; ; i++ {
		err := ix.db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
		if err == nil {
			break
		}
		if i >= 200 || !isBusy(err) {
			return err
		}
		time.Sleep(time.Duration(5+i%10) * time.Millisecond)
	}
	var v int
	if err := ix.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v == indexSchemaVersion {
		return ix.addColumns(ctx)
	}
	tx, err := ix.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: one creator at a time
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v == indexSchemaVersion {
		return nil
	}
	if err := createSchema(ctx, tx); err != nil {
		return err
	}
	return tx.Commit()
}

// addedColumns are the columns of files that came after version 1, in the
// order they came, with their definitions.
var addedColumns = [][2]string{
	{"unreadable", "INTEGER NOT NULL DEFAULT 0"},
	{"ctime_ns", "INTEGER NOT NULL DEFAULT 0"},
	{"hash", "INTEGER NOT NULL DEFAULT 0"},
}

// addColumns adds to an index of this version the columns that came
// after it was made (addedColumns).
func (ix *ftsIndex) addColumns(ctx context.Context) error {
	missing := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) (int, error) {
		var n int
		err := q.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('files') WHERE name IN ('unreadable', 'ctime_ns', 'hash')`).Scan(&n)
		return len(addedColumns) - n, err
	}
	if n, err := missing(ix.db); n == 0 || err != nil {
		return err
	}
	tx, err := ix.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: one at a time
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if n, err := missing(tx); n == 0 || err != nil {
		return err
	}
	for _, c := range addedColumns {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('files') WHERE name = ?`, c[0]).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, `ALTER TABLE files ADD COLUMN `+c[0]+` `+c[1]); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// checkSchema returns a damagedError (so that the database is moved aside
// and an index built in its place: see resetIndex) if the database holds
// something that is not a search index of this package: a table, index,
// view or trigger of its own, or, at this schema version, not all of the
// index's tables. (An index of another version is recreated by init.) A
// new, empty database passes.
func (ix *ftsIndex) checkSchema(ctx context.Context) error {
	rs, err := ix.db.QueryContext(ctx, `SELECT name FROM sqlite_schema`)
	if err != nil {
		return err
	}
	defer rs.Close()
	var foreign []string
	ours := map[string]bool{}
	for rs.Next() {
		var name string
		if err := rs.Scan(&name); err != nil {
			return err
		}
		switch {
		case name == "files", name == "fts", name == "meta":
			ours[name] = true
		case strings.HasPrefix(name, "fts_"), strings.HasPrefix(name, "sqlite_"):
		default:
			foreign = append(foreign, name)
		}
	}
	if err := rs.Err(); err != nil {
		return err
	}
	if len(foreign) > 0 {
		slices.Sort(foreign)
		return &damagedError{fmt.Sprintf("a SQLite database of another schema, not a search index (it has %s)", strings.Join(foreign[:min(len(foreign), 5)], ", "))}
	}
	if len(ours) == 0 {
		return nil // new
	}
	var v int
	if err := ix.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v == indexSchemaVersion && len(ours) < 3 {
		return &damagedError{"a SQLite database of another schema, not a search index (tables files, fts and meta are not all there)"}
	}
	return nil
}

// createSchema creates the index's tables within tx, dropping any there
// were, and sets its schema version.
func createSchema(ctx context.Context, tx *sql.Tx) error {
	for _, q := range indexSchema {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
	}
	_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", indexSchemaVersion))
	return err
}

func isBusy(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "SQLITE_BUSY") || strings.Contains(err.Error(), "database is locked"))
}

// replaced reports whether the file at the index's path is not the one it
// opened (another process replaced a damaged one).
func (ix *ftsIndex) replaced() bool {
	if ix.file == nil || ix.private != "" {
		return false
	}
	fi, err := os.Stat(ix.path)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	return err == nil && !os.SameFile(fi, ix.file)
}

func (ix *ftsIndex) close() error {
	err := ix.db.Close()
	if ix.private != "" {
		if rerr := os.RemoveAll(ix.private); err == nil {
			err = rerr
		}
	}
	return err
}

// reconciledAt returns when the last complete reconcile, by any process,
// started, and the MaxBytes it indexed up to; zero if none has completed.
func (ix *ftsIndex) reconciledAt(ctx context.Context) (time.Time, int64, error) {
	var v string
	err := ix.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'reconciled'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, 0, nil
	}
	if err != nil {
		return time.Time{}, 0, err
	}
	var ns, maxBytes int64
	if _, err := fmt.Sscan(v, &ns, &maxBytes); err != nil {
		return time.Time{}, 0, nil // unreadable: as if never
	}
	return time.Unix(0, ns), maxBytes, nil
}

// setReconciledAt records a complete reconcile that started at t and
// indexed concepts up to maxBytes, unless one that started later is
// recorded, and the real path of the folder it is the index of (for
// [RemoveStaleIndexes]).
//
// One statement, so one write transaction: the reconciled time only moves
// forward, and the folder is written only when it changed.
func (ix *ftsIndex) setReconciledAt(ctx context.Context, t time.Time, maxBytes int64, folder string) error {
	rows, args := `('reconciled', ?)`, []any{fmt.Sprintf("%d %d", t.UnixNano(), maxBytes)}
	if folder != "" {
		rows, args = rows+`, ('folder', ?)`, append(args, folder)
	}
	_, err := ix.db.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES `+rows+`
		ON CONFLICT (key) DO UPDATE SET value = excluded.value
		WHERE CASE key WHEN 'reconciled' THEN CAST(excluded.value AS INTEGER) > CAST(value AS INTEGER)
			ELSE value <> excluded.value END`, args...)
	return err
}

// defaultAutomerge is FTS5's default automerge setting.
const defaultAutomerge = 4

// setAutomerge sets FTS5's automerge (0: off), for every connection.
func (ix *ftsIndex) setAutomerge(ctx context.Context, n int) error {
	_, err := ix.db.ExecContext(ctx, `INSERT INTO fts (fts, rank) VALUES ('automerge', ?)`, n)
	return err
}

// restoreAutomerge turns automerge back on if a bulk reconcile left it off.
func (ix *ftsIndex) restoreAutomerge(ctx context.Context) error {
	var v int
	err := ix.db.QueryRowContext(ctx, `SELECT v FROM fts_config WHERE k = 'automerge'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) || err == nil && v != 0 {
		return nil
	}
	if err != nil {
		return err
	}
	return ix.setAutomerge(ctx, defaultAutomerge)
}

// row is what files holds of a concept.
type row struct {
	doc                       int64
	size, mtime, inode, ctime int64
	// hash is contentHash of the text indexed; 0 if unknown.
	hash                int64
	indexed, unreadable bool
	title               string
}

// sameStat reports whether r records what f's stat says: size,
// modification time, inode and status change time (-1 in r: changed as it
// was read, so read again).
func (r row) sameStat(f file) bool {
	return r.size == f.size && r.mtime == f.mtime && r.inode == f.inode && r.ctime == f.ctime
}

// racy reports whether r's file was changed as it was read (see racyWindow):
// a stat cannot tell a later change from it.
func (r row) racy() bool { return r.mtime == -1 || r.ctime == -1 }

// contentHash is what files.hash holds of a concept's content: the first
// 64 bits of its SHA-256, never 0 (which says unknown).
func contentHash(data []byte) int64 {
	sum := sha256.Sum256(data)
	h := int64(binary.LittleEndian.Uint64(sum[:8]))
	if h == 0 {
		h = 1
	}
	return h
}

// rows loads the files table, by id.
func (ix *ftsIndex) rows(ctx context.Context) (map[string]row, error) {
	rs, err := ix.db.QueryContext(ctx, `SELECT doc, id, size, mtime_ns, inode, ctime_ns, hash, indexed, unreadable FROM files`)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := map[string]row{}
	for rs.Next() {
		var id string
		var r row
		if err := rs.Scan(&r.doc, &id, &r.size, &r.mtime, &r.inode, &r.ctime, &r.hash, &r.indexed, &r.unreadable); err != nil {
			return nil, err
		}
		out[id] = r
	}
	return out, rs.Err()
}

// titles returns the rows of ids that are in files, by id.
func (ix *ftsIndex) titles(ctx context.Context, ids []string) (map[string]row, error) {
	out := map[string]row{}
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	q := `SELECT id, size, mtime_ns, inode, ctime_ns, title FROM files WHERE id IN (?` + strings.Repeat(",?", len(ids)-1) + `)`
	rs, err := ix.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	for rs.Next() {
		var id string
		var r row
		if err := rs.Scan(&id, &r.size, &r.mtime, &r.inode, &r.ctime, &r.title); err != nil {
			return nil, err
		}
		out[id] = r
	}
	return out, rs.Err()
}

// writeTx is a write transaction on the index that prepares each of its
// statements once: a build runs them for every concept, and preparing is
// a good part of a statement's cost.
type writeTx struct {
	*sql.Tx
	stmts    map[string]*sql.Stmt
	prepared int // statements prepared (tests count them)
}

func newWriteTx(tx *sql.Tx) *writeTx { return &writeTx{Tx: tx, stmts: map[string]*sql.Stmt{}} }

// stmt returns q prepared within the transaction (closed with it).
func (w *writeTx) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if s, ok := w.stmts[q]; ok {
		return s, nil
	}
	s, err := w.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	w.prepared++
	w.stmts[q] = s
	return s, nil
}

func (w *writeTx) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	s, err := w.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return s.ExecContext(ctx, args...)
}

func (w *writeTx) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	s, err := w.stmt(ctx, q)
	if err != nil {
		return w.QueryRowContext(ctx, q, args...) // reports err in Scan
	}
	return s.QueryRowContext(ctx, args...)
}

// put replaces the row (and the text) of the concept id within tx; existed
// false says there is none to remove. body is nil for a concept that is not
// indexed (too large for this process, or unreadable).
func put(ctx context.Context, tx *writeTx, id string, r row, body []byte, existed bool) error {
	if existed {
		if err := remove(ctx, tx, id); err != nil {
			return err
		}
	}
	res, err := tx.exec(ctx, `INSERT INTO files (id, size, mtime_ns, inode, ctime_ns, hash, indexed, title, unreadable) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		id, r.size, r.mtime, r.inode, r.ctime, r.hash, r.indexed, r.title, r.unreadable)
	if err != nil {
		return err
	}
	if !r.indexed {
		return nil
	}
	doc, err := res.LastInsertId()
	if err != nil {
		return err
	}
	_, err = tx.exec(ctx, `INSERT INTO fts (rowid, title, body) VALUES (?, ?, ?)`, doc, r.title, body)
	return err
}

// restat records, within tx, the stat of the file of the concept id whose
// content r.hash says is the one indexed, and reports whether it did: not
// when the row indexes other content (or content unknown), or is gone. A
// file whose only change is its times (touch, chmod, a copy of the same
// content) is so not indexed again.
func restat(ctx context.Context, tx *writeTx, id string, r row) (bool, error) {
	if r.hash == 0 || !r.indexed {
		return false, nil
	}
	res, err := tx.exec(ctx, `UPDATE files SET size = ?, mtime_ns = ?, inode = ?, ctime_ns = ?, unreadable = 0
		WHERE id = ? AND indexed AND hash = ? AND title = ?`, r.size, r.mtime, r.inode, r.ctime, id, r.hash, r.title)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// remove deletes the concept id from the index within tx.
func remove(ctx context.Context, tx *writeTx, id string) error {
	return removeAll(ctx, tx, []string{id})
}

// removeAll deletes the concepts ids from the index within tx, in rowid
// order: FTS5 writes its pending changes out as a segment when a change's
// rowid is below the last one's. (Not DELETE ... RETURNING either: FTS5
// writes them out too at the start of a statement that needs a statement
// journal.)
func removeAll(ctx context.Context, tx *writeTx, ids []string) error {
	var docs []int64
	for _, id := range ids {
		var doc int64
		err := tx.queryRow(ctx, `SELECT doc FROM files WHERE id = ?`, id).Scan(&doc)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return err
		}
		docs = append(docs, doc)
	}
	slices.Sort(docs)
	for _, doc := range slices.Compact(docs) {
		if _, err := tx.exec(ctx, `DELETE FROM files WHERE doc = ?`, doc); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `DELETE FROM fts WHERE rowid = ?`, doc); err != nil {
			return err
		}
	}
	return nil
}
