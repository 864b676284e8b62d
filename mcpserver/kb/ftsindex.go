package kb

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
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
// same rowid. (files.unreadable came after version 1: init adds it to an
// index without it, rather than rebuilding; older binaries, which name the
// columns they write, leave it 0.) fts is contentless (it keeps the index, not the text), so the
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
		unreadable INTEGER NOT NULL DEFAULT 0 -- 1: could not be read (permissions)
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
	// noPrune makes search run every query whole (tests compare); prunes
	// counts the searches answered without their common terms, splits
	// those answered by bestOf.
	noPrune        bool
	prunes, splits atomic.Int64
}

// openIndex opens (creating it when missing) the index database at path.
func openIndex(ctx context.Context, path string) (*ftsIndex, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, indexFault(path, fmt.Errorf("create its folder: %w", err))
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
	return "file:" + path + "?_pragma=busy_timeout(30000)&_pragma=synchronous(NORMAL)&_txlock=immediate"
}

// init turns WAL on and creates the schema, or recreates it when its version
// is not this one's; safe against other processes doing the same.
func (ix *ftsIndex) init(ctx context.Context) error {
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

// addColumns adds to an index of this version the columns that came
// after it was made: files.unreadable.
func (ix *ftsIndex) addColumns(ctx context.Context) error {
	has := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) (bool, error) {
		var n int
		err := q.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('files') WHERE name = 'unreadable'`).Scan(&n)
		return n > 0, err
	}
	if ok, err := has(ix.db); ok || err != nil {
		return err
	}
	tx, err := ix.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: one at a time
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if ok, err := has(tx); ok || err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `ALTER TABLE files ADD COLUMN unreadable INTEGER NOT NULL DEFAULT 0`); err != nil {
		return err
	}
	return tx.Commit()
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
func (ix *ftsIndex) setReconciledAt(ctx context.Context, t time.Time, maxBytes int64, folder string) error {
	_, err := ix.db.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('reconciled', ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value
		WHERE CAST(excluded.value AS INTEGER) > CAST(value AS INTEGER)`,
		fmt.Sprintf("%d %d", t.UnixNano(), maxBytes))
	if err != nil || folder == "" {
		return err
	}
	_, err = ix.db.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('folder', ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value WHERE value <> excluded.value`, folder)
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
	doc                 int64
	size, mtime, inode  int64
	indexed, unreadable bool
	title               string
}

// rows loads the files table, by id.
func (ix *ftsIndex) rows(ctx context.Context) (map[string]row, error) {
	rs, err := ix.db.QueryContext(ctx, `SELECT doc, id, size, mtime_ns, inode, indexed, unreadable FROM files`)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := map[string]row{}
	for rs.Next() {
		var id string
		var r row
		if err := rs.Scan(&r.doc, &id, &r.size, &r.mtime, &r.inode, &r.indexed, &r.unreadable); err != nil {
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
	q := `SELECT id, size, mtime_ns, title FROM files WHERE id IN (?` + strings.Repeat(",?", len(ids)-1) + `)`
	rs, err := ix.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	for rs.Next() {
		var id string
		var r row
		if err := rs.Scan(&id, &r.size, &r.mtime, &r.title); err != nil {
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
	res, err := tx.exec(ctx, `INSERT INTO files (id, size, mtime_ns, inode, indexed, title, unreadable) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		id, r.size, r.mtime, r.inode, r.indexed, r.title, r.unreadable)
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

// Ranking: FTS5's BM25 with the title's matches weighted titleWeight times
// the body's.
const titleWeight = 3.0

// search returns the best k concepts no larger than maxBytes matching any of
// terms, best first, ties broken by id.
//
// FTS5 scores every match; the query asks it for rowids only (no join per
// match), and looks up the top ones' rows after. Concepts over maxBytes (a
// shared index may hold them for a process with a larger limit) are
// filtered then, asking for more when some were.
//
// Scoring every match is what a search costs (BM25 looks up each match's
// length), and a word found in many concepts makes that many matches. So a
// query of several words is first run, when it has such words (see
// termStats), as a cheaper one whose answer stands if the left-out words
// could not have changed it (see pruned); else the whole query runs.
func (ix *ftsIndex) search(ctx context.Context, terms []string, k int, maxBytes int64) ([]hit, error) {
	// One read transaction, so one snapshot: a write or reconcile that
	// commits between the FTS5 query and the look-up of its rowids deletes
	// and re-inserts rows under new rowids, and the look-up would miss (or
	// misattribute) concepts it replaced. ReadOnly makes it a deferred
	// BEGIN, which takes no write lock.
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if !ix.noPrune && len(terms) > 1 {
		hits, ok, err := ix.pruned(ctx, tx, terms, k, maxBytes)
		if err != nil || ok {
			return hits, err
		}
	}
	return ix.best(ctx, tx, terms, k, maxBytes)
}

// BM25's parameters in FTS5.
const bm25K1, bm25B = 1.2, 0.75

// commonWeight bounds what a common term (see termStats) adds to a
// concept's score: FTS5's BM25 gives it an IDF of 1e-6, times a term
// frequency factor below k1+1.
const commonWeight = 1e-6 * (bm25K1 + 1)

// frequentShare: a term found in more than this share of the concepts (and
// fewer than half) may be scored only for the concepts that have a rarer
// one (see pruned).
const frequentShare = 1.0 / 16

// pruned runs a cheaper query than terms' whole one and returns its best
// k, and whether they are the whole query's: the same concepts, in the
// same order but for ties within what common terms can add (commonWeight
// each).
//
// A term in half of the concepts or more is common: BM25 weighs it 1e-6,
// so it is left out. A frequent one, in more than frequentShare of them,
// adds at most its IDF times k1+1 to a score: the query is run with the
// rarer terms only (R), and the frequent ones (F) are scored only for
// concepts having an R term, by a second query for concepts with an R term
// and an F term, which BM25 scores as the whole query does (its sum is
// over terms, each with the IDF of the whole index; only the order of the
// sum, so the last bits, may differ). A concept with no R
// term scores less than what F and the common terms can add; when the k
// best score more than that, they are the whole query's.
func (ix *ftsIndex) pruned(ctx context.Context, tx *sql.Tx, terms []string, k int, maxBytes int64) ([]hit, bool, error) {
	n, counts, err := termStats(ctx, tx, terms)
	if err != nil || n == 0 {
		return nil, false, err
	}
	// The terms BM25 weighs, with their IDFs, most frequent first.
	var weighed []string
	idf := map[string]float64{}
	common := 0.0 // what the common terms can add to a score
	for i, t := range terms {
		if c := float64(counts[i]); 2*c < float64(n) {
			weighed = append(weighed, t)
			idf[t] = math.Log((float64(n) - c + 0.5) / (c + 0.5))
		} else {
			common += commonWeight
		}
	}
	slices.SortStableFunc(weighed, func(a, b string) int { return cmp.Compare(idf[a], idf[b]) })
	// Frequent terms, most frequent first, while what they can add (IDF
	// times k1+1) stays below half the IDF of the rarest term, about the
	// least a concept having that term scores: else the k best of the
	// rarer terms' concepts would seldom score above it, and the work be
	// wasted.
	var frequent, rare []string
	freqBound := 0.0
	for i, t := range weighed[:max(len(weighed)-1, 0)] {
		b := freqBound + idf[t]*(bm25K1+1)
		if idf[t] >= math.Log(1/frequentShare) || b >= idf[weighed[len(weighed)-1]]/2 {
			break
		}
		frequent, rare, freqBound = weighed[:i+1], weighed[i+1:], b
	}
	if len(rare) > 0 && len(frequent) > 0 {
		hits, err := ix.bestOf(ctx, tx, rare, frequent, k, maxBytes)
		if err != nil {
			return nil, false, err
		}
		if len(hits) == k && hits[k-1].score > common+freqBound {
			ix.splits.Add(1)
			return hits, true, nil
		}
	}
	if common > 0 && len(weighed) > 0 {
		hits, err := ix.best(ctx, tx, weighed, k, maxBytes)
		if err != nil {
			return nil, false, err
		}
		if len(hits) == k && hits[k-1].score > common {
			ix.prunes.Add(1)
			return hits, true, nil
		}
	}
	return nil, false, nil
}

// best returns the best k concepts no larger than maxBytes matching any of
// terms, within tx.
func (ix *ftsIndex) best(ctx context.Context, tx *sql.Tx, terms []string, k int, maxBytes int64) ([]hit, error) {
	match := matchAny(terms)
	for want := k + 8; ; want *= 4 {
		hits, more, err := ix.top(ctx, tx, match, want, maxBytes)
		if err != nil || len(hits) >= k || !more {
			return sortHits(hits, k), err
		}
	}
}

// bestOf returns the best k concepts no larger than maxBytes among those
// with any of rare, scored for the query of rare and frequent, within tx.
func (ix *ftsIndex) bestOf(ctx context.Context, tx *sql.Tx, rare, frequent []string, k int, maxBytes int64) ([]hit, error) {
	scores := map[int64]float64{}
	rareMatch := matchAny(rare)
	for _, match := range []string{rareMatch, "(" + rareMatch + ") AND (" + matchAny(frequent) + ")"} {
		rs, err := tx.QueryContext(ctx, `SELECT rowid, -bm25(fts, ?, 1.0) FROM fts WHERE fts MATCH ?`, titleWeight, match)
		if err != nil {
			return nil, err
		}
		for rs.Next() {
			var doc int64
			var score float64
			if err := rs.Scan(&doc, &score); err != nil {
				rs.Close()
				return nil, err
			}
			scores[doc] = score
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return nil, err
		}
	}
	docs := slices.Collect(maps.Keys(scores))
	slices.SortFunc(docs, func(a, b int64) int { return cmp.Compare(scores[b], scores[a]) })
	if ix.matched != nil {
		ix.matched()
	}
	for want := k + 8; ; want *= 4 {
		hits, err := ix.lookup(ctx, tx, docs[:min(want, len(docs))], scores, maxBytes)
		if err != nil || len(hits) >= k || want >= len(docs) {
			return sortHits(hits, k), err
		}
	}
}

// sortHits sorts hits best first, ties by id, and returns the first k.
func sortHits(hits []hit, k int) []hit {
	slices.SortStableFunc(hits, func(a, b hit) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	return hits[:min(k, len(hits))]
}

// matchAny is the FTS5 query for concepts with any of terms.
func matchAny(terms []string) string {
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + t + `"` // tokens hold letters, digits and marks only
	}
	return strings.Join(quoted, " OR ")
}

// rarest returns the n terms (in query order) that fewest concepts have,
// leaving out those none has, and the others that some concept has.
// Counts stop at half the concepts (see termStats): terms at least that
// common are kept in query order.
func (ix *ftsIndex) rarest(ctx context.Context, terms []string, n int) (kept, ignored []string, err error) {
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, nil, err
	}
	defer tx.Rollback()
	_, counts, err := termStats(ctx, tx, terms)
	if err != nil || counts == nil {
		return nil, nil, err // no concept is indexed
	}
	var order []int // terms some concept has, rarest first
	for i, c := range counts {
		if c > 0 {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(counts[a], counts[b]) })
	keep := make([]bool, len(terms))
	for _, i := range order[:min(n, len(order))] {
		keep[i] = true
	}
	for i, t := range terms {
		switch {
		case keep[i]:
			kept = append(kept, t)
		case counts[i] > 0:
			ignored = append(ignored, t)
		}
	}
	return kept, ignored, nil
}

// termStats returns the number of indexed concepts, N, and how many have
// each of terms, counting up to half of N (what makes a term common: its
// BM25 IDF, log((N-n+0.5)/(n+0.5)), is not positive, and FTS5 uses 1e-6).
// One statement, prepared once.
func termStats(ctx context.Context, tx *sql.Tx, terms []string) (n int64, counts []int64, err error) {
	n, err = indexedRows(ctx, tx)
	if err != nil || n == 0 {
		return 0, nil, err
	}
	counts = make([]int64, len(terms))
	cols := make([]string, len(terms))
	args := []any{(n + 1) / 2}
	dest := make([]any, len(terms))
	for i, t := range terms {
		cols[i] = fmt.Sprintf("(SELECT count(*) FROM (SELECT 1 FROM fts WHERE fts MATCH ?%d LIMIT ?1))", i+2)
		args = append(args, matchAny([]string{t}))
		dest[i] = &counts[i]
	}
	err = tx.QueryRowContext(ctx, "SELECT "+strings.Join(cols, ", "), args...).Scan(dest...)
	return n, counts, err
}

// indexedRows returns the row count BM25 uses, N: the first number (an
// SQLite varint) of the FTS5 "averages" record, fts_data row 1.
func indexedRows(ctx context.Context, tx *sql.Tx) (int64, error) {
	var rec []byte
	err := tx.QueryRowContext(ctx, `SELECT block FROM fts_data WHERE id = 1`).Scan(&rec)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, ok := sqliteVarint(rec)
	if !ok {
		return 0, nil
	}
	return int64(n), nil
}

// sqliteVarint decodes SQLite's varint (big-endian, 7 bits a byte with the
// high bit saying more follow, the ninth byte whole).
func sqliteVarint(b []byte) (uint64, bool) {
	var v uint64
	for i := 0; i < len(b) && i < 9; i++ {
		if i == 8 {
			return v<<8 | uint64(b[i]), true
		}
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i] < 0x80 {
			return v, true
		}
	}
	return 0, false
}

// top returns the best n matches (fewer if some are over maxBytes), and
// whether FTS5 had more, read within tx.
func (ix *ftsIndex) top(ctx context.Context, tx *sql.Tx, match string, n int, maxBytes int64) (hits []hit, more bool, err error) {
	rs, err := tx.QueryContext(ctx, `SELECT rowid, -bm25(fts, ?, 1.0) AS score FROM fts WHERE fts MATCH ? ORDER BY score DESC LIMIT ?`,
		titleWeight, match, n)
	if err != nil {
		return nil, false, err
	}
	scores := map[int64]float64{}
	var docs []int64
	for rs.Next() {
		var doc int64
		var score float64
		if err := rs.Scan(&doc, &score); err != nil {
			rs.Close()
			return nil, false, err
		}
		scores[doc] = score
		docs = append(docs, doc)
	}
	rs.Close()
	if err := rs.Err(); err != nil || len(docs) == 0 {
		return nil, false, err
	}
	if ix.matched != nil {
		ix.matched()
	}
	hits, err = ix.lookup(ctx, tx, docs, scores, maxBytes)
	return hits, len(docs) == n, err
}

// lookup returns the rows of docs no larger than maxBytes, as hits with
// their scores, read within tx.
func (ix *ftsIndex) lookup(ctx context.Context, tx *sql.Tx, docs []int64, scores map[int64]float64, maxBytes int64) ([]hit, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	args := make([]any, 0, len(docs)+1)
	args = append(args, maxBytes)
	for _, d := range docs {
		args = append(args, d)
	}
	rs, err := tx.QueryContext(ctx, `SELECT doc, id, title, size, mtime_ns, inode FROM files WHERE size <= ? AND doc IN (?`+strings.Repeat(",?", len(docs)-1)+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var hits []hit
	for rs.Next() {
		var doc int64
		var h hit
		if err := rs.Scan(&doc, &h.id, &h.title, &h.size, &h.mtime, &h.inode); err != nil {
			return nil, err
		}
		h.score = scores[doc]
		hits = append(hits, h)
	}
	return hits, rs.Err()
}

// hit is a search's match, with what its file was when indexed.
type hit struct {
	id, title          string
	score              float64
	size, mtime, inode int64
}
