package kb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// index returns the open search index, opening (or creating) it on first
// use.
func (kb *Base) index(ctx context.Context) (*ftsIndex, error) {
	kb.ixMu.Lock()
	defer kb.ixMu.Unlock()
	if kb.closed.Load() {
		return nil, kb.usable(ctx)
	}
	if kb.ix != nil {
		if !kb.ix.replaced() && (kb.ix.private != "" || kb.ix.path == kb.cur.Load().indexPath) {
			return kb.ix, nil
		}
		// Another process replaced a damaged index, whose file the
		// connections here have open (searches of this process using
		// them fail), or the folder was replaced by one with another
		// real path, which has an index of its own (see [Base.follow]).
		kb.ix.db.Close()
		kb.ix = nil
	}
	path, private := kb.cur.Load().indexPath, ""
	if path == "" {
		dir, err := os.MkdirTemp("", "agentctl-kb-")
		if err != nil {
			return nil, fmt.Errorf("knowledge base %q: search index: %w", kb.name, err)
		}
		path, private = filepath.Join(dir, "index.db"), dir
	}
	ix, err := openIndex(ctx, path)
	if err != nil {
		if private != "" {
			os.RemoveAll(private)
		}
		return nil, fmt.Errorf("knowledge base %q: %w", kb.name, err)
	}
	ix.private = private
	kb.ix = ix
	return ix, nil
}

// IndexStats describes what [Base.Index] did.
type IndexStats struct {
	// Path is the index database.
	Path string `json:"path"`
	// Concepts is how many concepts the folder holds.
	Concepts int `json:"concepts"`
	// Read is how many were read and (re)indexed (new, or their content
	// changed); Removed, how many were dropped from the index because their
	// file is gone. (Files read only to compare their content with the
	// index's, and found the same, are not counted.)
	Read    int `json:"read"`
	Removed int `json:"removed"`
	// MaxBytes is the limit it indexed concepts up to ([Options.MaxBytes]).
	MaxBytes int64 `json:"max_bytes"`
	// Damaged, when not empty, says what was wrong with the index, which
	// was damaged and so was built again from the folder.
	Damaged string `json:"damaged,omitempty"`
	// TooLarge is how many concepts are larger than MaxBytes, and
	// Unreadable how many concept files and folders could not be read
	// (permissions): neither is indexed, so searches do not find them.
	// TooLargePaths and UnreadablePaths name the first few of each
	// (maxNamedPaths, sorted; paths relative to the folder, a folder with a
	// trailing "/").
	TooLarge        int      `json:"too_large"`
	Unreadable      int      `json:"unreadable"`
	TooLargePaths   []string `json:"too_large_paths,omitempty"`
	UnreadablePaths []string `json:"unreadable_paths,omitempty"`
	// Misnamed is how many files named *.md have names that are not
	// concept ids ("x.md.md", a name starting or ending with a space or
	// not in Unicode NFC, one with a control character or a backslash; see
	// [CleanConceptID]), so are not concepts; MisnamedPaths names the
	// first few.
	Misnamed      int      `json:"misnamed"`
	MisnamedPaths []string `json:"misnamed_paths,omitempty"`
}

// maxNamedPaths is how many paths of each kind [IndexStats] names.
const maxNamedPaths = 5

// firstPaths returns the first maxNamedPaths of paths, sorted.
func firstPaths(paths []string) []string {
	slices.Sort(paths)
	return slices.Clip(paths[:min(len(paths), maxNamedPaths)])
}

// IndexOptions are what [Base.Index] reports as it goes; either may be nil.
type IndexOptions struct {
	// Progress is called as files are indexed with the count done and the
	// count to do.
	Progress func(done, total int)
	// Waiting is called once if Index has waited a moment (lockNotice) for
	// another process reconciling the same index, which it goes on waiting
	// for (until ctx is done).
	Waiting func()
	// Check also reads every page of the index database (PRAGMA
	// quick_check, about 0.3 s at 10,000 concepts) before the walk, and
	// builds a damaged index again from the folder. Without it damage is
	// found where a reconcile or a search meets it, which does the same.
	Check bool

	// check is what reconcile checks of the index before it walks (see
	// checkIndex).
	check checkLevel
	// verify makes reconcile read every file it may index and compare its
	// content with what the index holds of it, whatever its stat says.
	verify bool
}

// checkLevel is how much reconcile checks that the index is not damaged.
type checkLevel int

const (
	checkNone checkLevel = iota
	// checkQuick runs PRAGMA quick_check (every page of the database).
	checkQuick
	// checkDamaged is for an index found damaged: PRAGMA quick_check, and
	// FTS5's integrity-check if it finds nothing, to know whether another
	// process has rebuilt it since.
	checkDamaged
)

// lockNotice is how long a reconcile waits for another process's before
// [IndexOptions.Waiting] is called.
const lockNotice = 500 * time.Millisecond

// Index builds the search index, or brings it up to date with the folder
// however recently that was done, and reports what it did. Searches do
// this themselves when needed (see [Base.Search]); Index is for building an
// index ahead of time, and for making sure it is right: it reads every
// concept it indexes and compares its content with what the index holds
// (a hash), so it also repairs what no stat shows. Another process
// reconciling the same index is waited for, until ctx is done. A damaged
// index database (met on the way, or found by [IndexOptions.Check]), or
// anything else in its place that is not a usable index, is moved aside
// and built again from the folder ([IndexStats.Damaged] says so, and where
// it went).
func (kb *Base) Index(ctx context.Context, o IndexOptions) (IndexStats, error) {
	if err := kb.usable(ctx); err != nil {
		return IndexStats{}, err
	}
	if o.Check {
		o.check = checkQuick
	}
	o.verify = true
	return kb.reconcile(ctx, 0, o)
}

// Refresh brings the search index up to date with the folder unless a
// complete reconcile (by any process sharing the index) started within
// RefreshInterval. A process that searches once and exits (agentctl kb
// search) calls it first: [Base.Search] on a stale index answers from it as
// it is and reconciles in the background, which such a process would cut
// short.
func (kb *Base) Refresh(ctx context.Context) error {
	if err := kb.usable(ctx); err != nil {
		return err
	}
	_, err := kb.reconcile(ctx, kb.opts.RefreshInterval, IndexOptions{})
	return err
}

// reconcile brings the index up to date with the folder, unless a complete
// reconcile (by this process or any other sharing the index) started less
// than maxAge ago. It walks the folder (stat only), compares each file's
// size, modification time, inode and status change time with the files
// table, and reads only what changed (with o.verify, every file); a file
// read whose content is what the index holds (its hash) is not indexed
// again, only its stat recorded. Changes are applied in transactions of reconcileBatch
// files, each checking that the file is still what was read: a process
// killed half-way leaves an index whose every row is true of its file, and
// the next reconcile does the rest.
//
// A damaged index (SQLite finds corrupt pages, or a file that is not a
// database), found so on the way or by o's check, is reset to an empty one
// and built again from the folder: it holds nothing the folder does not.
// That happens under the flock, after checking that another process has
// not done it meanwhile (see checkIndex).
func (kb *Base) reconcile(ctx context.Context, maxAge time.Duration, o IndexOptions) (stats IndexStats, err error) {
	stats = IndexStats{Path: kb.IndexFile(), MaxBytes: kb.opts.MaxBytes}
	if err := kb.follow(); err != nil {
		return stats, err // a folder gone leaves the index as it was
	}
	ix, err := kb.index(ctx)
	damaged := isDamaged(err)
	if err != nil && !damaged {
		return stats, err
	}
	if ix != nil {
		stats.Path = ix.path
	}
	fresh := func() (bool, error) {
		ok, _, err := kb.freshness(ctx, ix, maxAge)
		if isDamaged(err) {
			damaged = true
			return false, nil
		}
		return ok, err
	}
	// After the folder was followed to another, the index may be fresh,
	// but of the old one: walk the new one whatever it says.
	walk := kb.walkNext.Swap(false)
	defer func() {
		if walk && err != nil {
			kb.walkNext.Store(true) // not walked yet
		}
	}()
	if !damaged && o.check == checkNone && !walk {
		if ok, err := fresh(); ok || err != nil {
			return stats, err
		}
	}
	// One reconcile at a time in this process, and across processes (the
	// flock): a second process's first search waits for the first's build
	// instead of doing it again.
	kb.mu.Lock()
	defer kb.mu.Unlock()
	if stats.Path == "" { // a private index that could not be created
		return stats, err
	}
	unlock, err := lockFile(ctx, stats.Path+".lock", o.Waiting)
	if err != nil {
		return stats, fmt.Errorf("knowledge base %q: %w", kb.name, indexFault(stats.Path, fmt.Errorf("lock %s: %w", stats.Path+".lock", err)))
	}
	defer unlock()
	if !damaged && o.check == checkNone && !walk {
		if ok, err := fresh(); ok || err != nil {
			return stats, err
		}
	}
	check := o.check
	if damaged {
		check = checkDamaged
	}
	if check != checkNone {
		if ix, err = kb.checkIndex(ctx, check == checkDamaged, &stats); err != nil {
			return stats, err
		}
	}
	err = kb.walkAndApply(ctx, ix, o, &stats)
	if isDamaged(err) && stats.Damaged == "" {
		// Found damaged on the way: reset, and once more from the start.
		if ix, err = kb.checkIndex(ctx, true, &stats); err != nil {
			return stats, err
		}
		err = kb.walkAndApply(ctx, ix, o, &stats)
	}
	return stats, err
}

// walkAndApply is the work of reconcile, with kb.mu and the flock held.
func (kb *Base) walkAndApply(ctx context.Context, ix *ftsIndex, o IndexOptions, stats *IndexStats) error {
	start := kb.now()
	kb.walks.Add(1)
	files, unreadable, misnamed, err := kb.scan(ctx, "")
	if err != nil {
		return err
	}
	stats.Concepts, stats.Read, stats.Removed = len(files), 0, 0
	rows, err := ix.rows(ctx)
	if err != nil {
		return kb.indexError(ix, err)
	}
	var changed []file
	var tooLarge []string
	statChanged := 0 // of changed, those whose stat changed (not only verified)
	for _, f := range files {
		r, ok := rows[f.id]
		delete(rows, f.id)
		over := f.size > kb.opts.MaxBytes
		if over {
			tooLarge = append(tooLarge, f.id+".md")
		}
		if ok && r.sameStat(f) {
			switch {
			case over, r.indexed && !o.verify:
				continue
			case r.indexed:
				// Read and compared (o.verify).
				f.known, f.prev = true, r
				changed = append(changed, f)
				continue
			case r.unreadable && !kb.canOpen(f.id):
				// Unchanged and still unreadable: a failed open, not a
				// read and a transaction. (Its permissions, or this
				// user's groups, may change without its size,
				// modification time or inode doing so: so it is tried.)
				unreadable = append(unreadable, f.id+".md")
				continue
			}
		}
		f.known, f.prev = ok, r
		changed = append(changed, f)
		statChanged++
	}
	stats.Removed = len(rows)
	if err := kb.applyRemovals(ctx, ix, rows); err != nil {
		return err
	}
	// After many changes (a build), FTS5's segments are merged into one,
	// so searches read one b-tree per term rather than one per batch. Its
	// merging of segments as batches commit (automerge) would be work done
	// twice: it is off meanwhile.
	bulk := statChanged >= kb.bulkAfter
	if bulk {
		if err := ix.setAutomerge(ctx, 0); err != nil {
			return kb.indexError(ix, err)
		}
	}
	batch := reconcileBatch
	if bulk {
		batch = bulkBatch
	}
	denied, same, err := kb.applyChanges(ctx, ix, changed, batch, o.Progress)
	stats.Read = len(changed) - same
	unreadable = append(unreadable, denied...)
	stats.TooLarge, stats.TooLargePaths = len(tooLarge), firstPaths(tooLarge)
	stats.Unreadable, stats.UnreadablePaths = len(unreadable), firstPaths(unreadable)
	stats.Misnamed, stats.MisnamedPaths = len(misnamed), firstPaths(misnamed)
	if err != nil {
		if bulk { // else left off until the next reconcile
			_ = ix.restoreAutomerge(context.WithoutCancel(ctx))
		}
		return err
	}
	if bulk {
		if _, err := ix.db.ExecContext(ctx, `INSERT INTO fts (fts) VALUES ('optimize')`); err != nil {
			return kb.indexError(ix, err)
		}
	}
	// Also when a process killed in a bulk reconcile left it off.
	if err := ix.restoreAutomerge(ctx); err != nil {
		return kb.indexError(ix, err)
	}
	if err := ix.setReconciledAt(ctx, start, kb.opts.MaxBytes, kb.cur.Load().real); err != nil {
		return kb.indexError(ix, err)
	}
	kb.lastRefresh.Store(start.UnixNano())
	return nil
}

// freshness reports whether a complete reconcile (by this process or any
// other sharing the index) that indexed files up to this base's MaxBytes
// started less than maxAge ago, and whether any such reconcile has
// completed (else the index may hold only part of the folder).
func (kb *Base) freshness(ctx context.Context, ix *ftsIndex, maxAge time.Duration) (fresh, built bool, err error) {
	now := kb.now()
	if last := kb.lastRefresh.Load(); last != 0 {
		if maxAge > 0 && now.Sub(time.Unix(0, last)) < maxAge {
			return true, true, nil
		}
	}
	at, upTo, err := ix.reconciledAt(ctx)
	if err != nil {
		return false, false, kb.indexError(ix, err)
	}
	// A reconcile with a smaller MaxBytes left larger files out.
	if !at.IsZero() && maxAge > 0 && now.Sub(at) < maxAge && upTo >= kb.opts.MaxBytes {
		kb.lastRefresh.Store(at.UnixNano())
		return true, true, nil
	}
	return false, !at.IsZero() && upTo >= kb.opts.MaxBytes, nil
}

// reconcileBatch is how many changed files one transaction applies: large
// enough that commits do not dominate, small enough that a search or a
// write of another process waits little for one.
const reconcileBatch = 256

// bulkBatch is the same for a bulk reconcile (a build): FTS5 writes its
// pending terms out as a segment at every commit, which the optimize at the
// end merges again, so fewer, larger transactions build faster; a write
// of another process waits for one at most about a tenth of a second here.
// batchBytes bounds what a batch holds in memory either way.
const (
	bulkBatch  = 2048
	batchBytes = 4 << 20
)

// optimizeAfter is how many changed files make a reconcile merge the index's
// segments.
const optimizeAfter = 2000

func (kb *Base) applyRemovals(ctx context.Context, ix *ftsIndex, gone map[string]row) error {
	if len(gone) == 0 {
		return nil
	}
	btx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return kb.indexError(ix, err)
	}
	defer btx.Rollback()
	tx := newWriteTx(btx)
	var ids []string
	for id := range gone {
		// Still gone? A write in another process may have created it.
		if _, err := kb.fsys().Lstat(id + ".md"); err == nil {
			continue
		}
		ids = append(ids, id)
	}
	if err := removeAll(ctx, tx, ids); err != nil {
		return kb.indexError(ix, err)
	}
	return kb.indexError(ix, tx.Commit())
}

// indexed is a changed file, read: the row to store and its body.
type indexed struct {
	id    string
	row   row
	body  []byte
	gone  bool
	known bool // the index had a row for it
	prev  row  // that row, as the walk found it
}

// unchanged reports whether r, read, is what the index's row (as the walk
// found it) holds already: same content, same stat, not racy.
func (r indexed) unchanged() bool {
	p, n := r.prev, r.row
	return r.known && !r.gone && n.indexed && p.indexed && !n.racy() && n.hash != 0 &&
		p.hash == n.hash && p.title == n.title && p.size == n.size && p.mtime == n.mtime && p.inode == n.inode && p.ctime == n.ctime
}

// applyChanges reads the changed files in parallel and applies them in
// transactions of up to size files and batchBytes of text, as they come,
// so the texts read never pile up. It returns the paths of the files it
// could not read (permissions), and how many it found as the index holds
// them (their content the same), which it did not index again.
func (kb *Base) applyChanges(ctx context.Context, ix *ftsIndex, changed []file, size int, progress func(done, total int)) (unreadable []string, same int, _ error) {
	if progress != nil {
		progress(0, len(changed))
	}
	if len(changed) == 0 {
		return nil, 0, nil
	}
	results := make(chan indexed, reconcileBatch)
	var readErr error
	go func() {
		readErr = forEach(ctx, len(changed), func(_, i int) {
			results <- kb.readForIndex(changed[i])
		})
		close(results)
	}()
	var applyErr error
	batch := make([]indexed, 0, min(size, len(changed)))
	held := 0 // bytes of text in batch
	done := 0
	flush := func() {
		if applyErr == nil && len(batch) > 0 {
			if kb.beforeApply != nil {
				kb.beforeApply()
			}
			var n int
			n, applyErr = kb.applyBatch(ctx, ix, batch)
			same += n
		}
		done += len(batch)
		clear(batch) // drop the texts
		batch, held = batch[:0], 0
		if progress != nil && applyErr == nil {
			progress(done, len(changed))
		}
	}
	for r := range results {
		if r.row.unreadable {
			unreadable = append(unreadable, r.id+".md")
		}
		if r.unchanged() {
			// Read to compare (kb index): as indexed, nothing to write.
			same++
			done++
			if progress != nil && done%64 == 0 && applyErr == nil {
				progress(done, len(changed))
			}
			continue
		}
		batch, held = append(batch, r), held+len(r.body)
		if len(batch) >= size || held >= batchBytes {
			flush()
		}
	}
	flush()
	if readErr != nil {
		return unreadable, same, readErr
	}
	return unreadable, same, applyErr
}

// readForIndex reads one changed file (unless it is over MaxBytes). One it
// may not read gets a row that says so, with what the walk found of it.
func (kb *Base) readForIndex(f file) indexed {
	if f.size > kb.opts.MaxBytes {
		return indexed{id: f.id, known: f.known, prev: f.prev, row: row{size: f.size, mtime: f.mtime, inode: f.inode, ctime: f.ctime}}
	}
	now := time.Now()
	data, fi, err := kb.readConcept(f.id)
	if errors.Is(err, fs.ErrPermission) && f.statted { // not a search's stale hit, which knows no size or mtime
		return indexed{id: f.id, known: f.known, prev: f.prev, row: row{size: f.size, mtime: f.mtime, inode: f.inode, ctime: f.ctime, unreadable: true}}
	}
	if err != nil {
		return indexed{id: f.id, known: f.known, prev: f.prev, gone: true}
	}
	title, body := indexedText(data)
	return indexed{id: f.id, known: f.known, prev: f.prev, body: body, row: row{size: fi.Size(), mtime: indexMtime(fi, now), inode: inode(fi),
		ctime: indexCtime(fi, now), hash: contentHash(data), indexed: true, title: title}}
}

// applyBatch stores a batch of read files in one transaction, each only if
// its file is still the one read: a write through another process (which
// renames, then updates the index in its own transaction) is never
// overwritten by an older read.
//
// A file read within racyWindow of its modification or status change (row
// mtime or ctime -1) can only be compared by size and inode (and the other
// time), and a file that replaced it since may have both: two writes later,
// the second write's file can be renamed onto the inode the first one's
// rename freed. So it is read again inside the transaction: no write
// through agentctl renames while the transaction holds the index's write
// lock, so what it reads is what the file holds when the row is committed.
//
// A file whose content is the one its row indexes (the hash; a touch, a
// chmod, a copy of the same text, or a verifying read) only has its stat
// recorded (see restat); applyBatch returns how many.
func (kb *Base) applyBatch(ctx context.Context, ix *ftsIndex, batch []indexed) (same int, _ error) {
	btx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, kb.indexError(ix, err)
	}
	defer btx.Rollback()
	tx := newWriteTx(btx)
	// Removals first, in rowid order, then inserts: FTS5 writes its
	// pending changes out as a segment when a change's rowid is below the
	// last one's, so interleaved they would make a segment per file.
	var puts []indexed
	var gone []string
	at := map[string]int{} // index in puts by id
	for _, r := range batch {
		fi, err := kb.fsys().Stat(r.id + ".md")
		if err == nil && !r.gone && r.row.indexed && r.row.racy() {
			r = kb.readForIndex(file{id: r.id, size: fi.Size(), mtime: fi.ModTime().UnixNano(), inode: inode(fi), ctime: ctime(fi), known: r.known, prev: r.prev, statted: true})
		}
		switch {
		case err != nil || !fi.Mode().IsRegular():
			gone = append(gone, r.id)
		case r.gone:
			gone = append(gone, r.id) // unreadable now: the next reconcile reads it
		case fi.Size() != r.row.size || inode(fi) != r.row.inode ||
			r.row.mtime != -1 && fi.ModTime().UnixNano() != r.row.mtime ||
			r.row.ctime != -1 && ctime(fi) != r.row.ctime:
			continue // changed since read: the next reconcile reads it
		default:
			if r.known {
				ok, err := restat(ctx, tx, r.id, r.row)
				if err != nil {
					return 0, kb.indexError(ix, err)
				}
				if ok {
					same++
					continue
				}
			}
			// Its row, if any: also one another process may have added
			// since our walk.
			gone = append(gone, r.id)
			if i, ok := at[r.id]; ok {
				puts[i] = r // listed twice: the later read
			} else {
				at[r.id] = len(puts)
				puts = append(puts, r)
			}
		}
	}
	if err := removeAll(ctx, tx, gone); err != nil {
		return 0, kb.indexError(ix, err)
	}
	for _, r := range puts {
		if err := put(ctx, tx, r.id, r.row, r.body, false); err != nil {
			return 0, kb.indexError(ix, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, kb.indexError(ix, err)
	}
	return same, nil
}

func (kb *Base) indexError(ix *ftsIndex, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("knowledge base %q: %w", kb.name, indexFault(ix.path, err))
}

// activeWindow is how long after a search the background refresher keeps
// walking (at least twice RefreshInterval).
const activeWindow = time.Minute

// minRefreshWait is the shortest wait of the background refresher, so that
// a tiny RefreshInterval does not make it spin.
const minRefreshWait = time.Millisecond

// backgroundRefresh keeps the index of a knowledge base in use fresh, so
// that searches do not wait for the stat walk. Its rounds come one
// RefreshInterval after the start of the last complete reconcile, by this
// process or another sharing the index (or after its own last round, when
// that did not reconcile); a round walks only if a search came within
// activeWindow and no process has completed a reconcile within
// RefreshInterval meanwhile. So while searches come the folder is walked at
// most once per RefreshInterval, by all processes together as far as each
// learns of the others' reconciles, and not at all once searches stop. A
// search that finds the index older than RefreshInterval asks for a round
// at once (kick).
func (kb *Base) backgroundRefresh() {
	every := kb.opts.RefreshInterval
	active := max(activeWindow, 2*every)
	var tried time.Time // this refresher's last round
	for {
		due := time.Unix(0, kb.lastRefresh.Load()).Add(every)
		if !tried.IsZero() && !due.After(tried) {
			due = tried.Add(every) // its last round did not reconcile: an error, or no search came
		}
		select {
		case <-kb.bgCtx.Done():
			return
		case <-kb.kick: // a search found the index stale
		case <-kb.after(max(due.Sub(kb.now()), minRefreshWait)):
		}
		tried = kb.now()
		// An error (the folder vanished, say) leaves the index as it was;
		// the next search's own reconcile reports it.
		if tried.Sub(time.Unix(0, kb.lastSearch.Load())) <= active {
			_, _ = kb.reconcile(kb.bgCtx, every, IndexOptions{})
		}
		if kb.refreshRound != nil {
			kb.refreshRound()
		}
	}
}

// racyWindow: a file modified this close to when it was read may be
// modified again within the file system's timestamp granularity without its
// modification time changing. Such a file is indexed with mtime -1, so the
// next reconcile reads it again.
const racyWindow = time.Second

func indexMtime(fi fs.FileInfo, readAt time.Time) int64 {
	if readAt.Sub(fi.ModTime()) < racyWindow {
		return -1
	}
	return fi.ModTime().UnixNano()
}

// indexCtime is the ctime to record of a file read at readAt: -1 if its
// status changed within racyWindow of the read (a change as it was read,
// with its size and modification time restored, would not show), so that
// the next reconcile reads it again; it is indexed again only if its
// content changed (the hash).
func indexCtime(fi fs.FileInfo, readAt time.Time) int64 {
	c := ctime(fi)
	if c != 0 && readAt.UnixNano()-c < int64(racyWindow) {
		return -1
	}
	return c
}

// canOpen reports whether the concept id's file can be opened now (or is
// not there any more): whether a reconcile should read a file it found
// unreadable before.
func (kb *Base) canOpen(id string) bool {
	f, err := kb.open(id + ".md")
	if err != nil {
		return !errors.Is(err, fs.ErrPermission)
	}
	f.Close()
	return true
}
