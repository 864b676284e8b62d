package kb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxBytes is the default limit on the size of a concept read or
// written: 1 MiB.
const DefaultMaxBytes = 1 << 20

// MaxMaxBytes is the largest [Options.MaxBytes]: a concept is read whole
// into memory, and a model is sent it whole.
const MaxMaxBytes = 1 << 30

const (
	defaultRefreshInterval = 2 * time.Second
	// defaultStaleTempAge is how old a leftover temporary file of a write
	// must be before a directory walk removes it. A younger one may belong
	// to a write in flight in another process sharing the folder.
	defaultStaleTempAge = time.Minute
)

// Options configures a mounted knowledge base.
type Options struct {
	// ReadOnly refuses writes: [Base.Write] fails with [ErrReadOnly].
	ReadOnly bool
	// MaxBytes is the largest concept read or written; 0 means
	// [DefaultMaxBytes].
	MaxBytes int64
	// RefreshInterval is how stale the search index may get with respect to
	// edits made outside agentctl while searches come: the folder is walked
	// at most once per interval (see [Base.Search]); 0 means 2s. Writes
	// through [Base.Write] are searchable at once, by every process sharing
	// the index.
	RefreshInterval time.Duration
	// IndexDir is the folder of the persistent search indexes, shared by
	// every process that mounts the same folder (see [IndexPath]); agentctl
	// uses <state directory>/kb. Empty means a private index in a temporary
	// folder, removed by [Base.Close].
	IndexDir string
}

// Errors an [Error] wraps, for [errors.Is].
var (
	ErrInvalidConceptID = errors.New("invalid concept id")
	ErrConceptNotFound  = errors.New("concept not found")
	ErrConceptTooLarge  = errors.New("concept too large")
	ErrOutside          = errors.New("path leads outside the knowledge base")
	ErrNotAConcept      = errors.New("not a concept")
	ErrReadOnly         = errors.New("knowledge base is read-only")
	ErrNotText          = errors.New("concept is not UTF-8 text")
	ErrChanged          = errors.New("concept changed since it was read")
	ErrInvalidRequest   = errors.New("invalid request")
)

// Error is a knowledge-base operation refused for a reason the caller can
// act on. Its message says what is wrong and what to do instead, in words
// meant to be shown to a model as they are.
type Error struct {
	// Kind is one of the Err* values above, or [fs.ErrPermission] for a
	// file or folder this user may not read or write.
	Kind error
	Msg  string
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Kind }

func errorf(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// Base is a mounted knowledge base: a folder of Markdown files, "concepts".
// A concept's id is its path relative to the folder
// without ".md", with "/" between folders: "guides/setup" is
// guides/setup.md (see [CleanConceptID]). Hidden files and folders (a
// leading ".") and files other than *.md are not concepts.
//
// Every file access goes through an [os.Root] opened on the folder, so
// nothing outside it is read or written, also not through symbolic links;
// a folder replaced at its path while mounted is opened again (see
// [Base.follow]).
// Writes are atomic (temporary file, fsync, rename; see [Base.Write]). Search
// uses a persistent SQLite FTS5 index, shared by every process mounting the
// folder and kept fresh (see [Base.Search]). Its methods are safe for
// concurrent use.
type Base struct {
	name string
	dir  string
	opts Options
	// cur is the folder as opened, opened again when dir names another
	// (see [Base.follow]); followMu makes that one at a time, and retired
	// keeps the roots it replaced open (calls in flight may use them)
	// until Close.
	cur      atomic.Pointer[folder]
	followMu sync.Mutex
	retired  []*os.Root
	// walkNext makes the next reconcile walk the folder, however fresh the
	// index says it is: set when the folder was followed to another.
	walkNext atomic.Bool
	// staleTempAge is defaultStaleTempAge; tests shorten it.
	staleTempAge time.Duration
	// bulkAfter is optimizeAfter; tests lower it.
	bulkAfter int
	// beforeApply, when not nil, is called by a reconcile after it read a
	// batch of changed files and before it applies them (tests set it to
	// change the files there).
	beforeApply func()
	// now and after are time.Now and time.After for the refresh schedule
	// (when reconciles started, when searches came, when the background
	// refresher wakes); tests replace them with a fake clock.
	now   func() time.Time
	after func(time.Duration) <-chan time.Time
	// refreshRound, when not nil, is called by the background refresher
	// after each of its rounds; walks counts the reconciles that walked the
	// folder (tests read both).
	refreshRound func()
	walks        atomic.Int64
	// open is root.Open, for the files and folders a walk and a read
	// open; tests replace it to make some unreadable (as root they all
	// can be read).
	open func(name string) (*os.File, error)

	// mu makes this process's reconciles one at a time (a flock does so
	// across processes).
	mu sync.Mutex
	// lastRefresh is when the last complete reconcile seen by this process
	// started (UnixNano).
	lastRefresh atomic.Int64
	// lastSearch is when the last search started (UnixNano).
	lastSearch atomic.Int64
	// The background refresher (see backgroundRefresh) runs on bgCtx,
	// started once by the first search.
	bgCtx    context.Context
	bgCancel context.CancelFunc
	// kick asks the refresher for a reconcile now (buffered: one pending).
	kick   chan struct{}
	bgOnce sync.Once
	bgDone sync.WaitGroup

	// ixMu guards ix, the index database, opened on first use.
	ixMu sync.Mutex
	ix   *ftsIndex

	closed atomic.Bool
}

// Open mounts the folder dir as the knowledge base name. The folder must
// exist; every later access to it goes through an [os.Root].
func Open(name, dir string, opts Options) (*Base, error) {
	if name == "" {
		return nil, errors.New("knowledge base: empty name")
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("knowledge base %q: %w", name, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("knowledge base %q: %s is not a directory", name, dir)
	}
	if opts.MaxBytes < 0 || opts.MaxBytes > MaxMaxBytes {
		return nil, fmt.Errorf("knowledge base %q: MaxBytes %d is not between 1 and %d", name, opts.MaxBytes, int64(MaxMaxBytes))
	}
	if opts.MaxBytes == 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = defaultRefreshInterval
	}
	realDir, err := realPath(dir)
	if err != nil {
		return nil, fmt.Errorf("knowledge base %q: %w", name, err)
	}
	var indexPath string
	if opts.IndexDir != "" {
		indexPath = indexPathOf(opts.IndexDir, realDir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("knowledge base %q: %w", name, err)
	}
	kb := &Base{name: name, dir: dir, opts: opts, staleTempAge: defaultStaleTempAge, bulkAfter: optimizeAfter,
		now: time.Now, after: time.After}
	kb.cur.Store(&folder{root: root, real: realDir, indexPath: indexPath})
	kb.open = func(name string) (*os.File, error) { return kb.fsys().Open(name) }
	kb.bgCtx, kb.bgCancel = context.WithCancel(context.Background())
	kb.kick = make(chan struct{}, 1)
	return kb, nil
}

// Close releases the folder. The knowledge base is unusable afterwards.
func (kb *Base) Close() error {
	if kb.closed.Swap(true) {
		return nil
	}
	kb.bgCancel()
	kb.bgOnce.Do(func() {}) // no refresher starts from now on
	kb.bgDone.Wait()
	// Once we hold mu, no reconcile is running; none opens the index again
	// (they check closed).
	kb.mu.Lock()
	kb.ixMu.Lock()
	var err error
	if kb.ix != nil {
		err = kb.ix.close()
		kb.ix = nil
	}
	kb.ixMu.Unlock()
	kb.mu.Unlock()
	kb.followMu.Lock()
	defer kb.followMu.Unlock()
	err = errors.Join(err, kb.fsys().Close())
	for _, r := range kb.retired {
		err = errors.Join(err, r.Close())
	}
	return err
}

// folder is a knowledge base's folder as opened: its root, its real path
// (which the index records) and its index database ("" for a private one).
type folder struct {
	root      *os.Root
	real      string
	indexPath string
}

// fsys is the root of the folder every access goes through.
func (kb *Base) fsys() *os.Root { return kb.cur.Load().root }

// follow makes sure the base works on the folder its path names now. A
// folder replaced while mounted (moved aside and another put in its place,
// as a fresh clone or a deploy does, or a link to it pointed elsewhere) is
// opened again, its index too when its real path changed, and the next
// search walks it; before, reads and lists went on in the old folder,
// searches found nothing and writes went into a folder no longer there. A
// folder gone is an error that says so.
func (kb *Base) follow() error {
	f := kb.cur.Load()
	now, err := os.Stat(kb.dir)
	if err == nil {
		if open, serr := f.root.Stat("."); serr == nil && os.SameFile(now, open) {
			return nil
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("knowledge base %q: its folder %s no longer exists (moved or removed while mounted); put it back, or remove the mount", kb.name, kb.dir)
	case err != nil:
		return fmt.Errorf("knowledge base %q: %w", kb.name, err)
	case !now.IsDir():
		return fmt.Errorf("knowledge base %q: %s is no longer a folder (replaced while mounted); put the folder back, or remove the mount", kb.name, kb.dir)
	}
	kb.followMu.Lock()
	defer kb.followMu.Unlock()
	if kb.closed.Load() {
		return fmt.Errorf("knowledge base %q is closed", kb.name)
	}
	if f = kb.cur.Load(); true {
		if open, serr := f.root.Stat("."); serr == nil && os.SameFile(now, open) {
			return nil // another call followed it meanwhile
		}
	}
	real, err := realPath(kb.dir)
	if err != nil {
		return fmt.Errorf("knowledge base %q: %w", kb.name, err)
	}
	root, err := os.OpenRoot(kb.dir)
	if err != nil {
		return fmt.Errorf("knowledge base %q: %w", kb.name, err)
	}
	next := &folder{root: root, real: real, indexPath: f.indexPath}
	if f.indexPath != "" {
		next.indexPath = indexPathOf(kb.opts.IndexDir, real)
	}
	kb.retired = append(kb.retired, f.root)
	kb.cur.Store(next)
	kb.lastRefresh.Store(0)
	kb.walkNext.Store(true) // the index may be fresh, but of the old folder
	return nil
}

// IndexFile returns the path of the search index database, or "" for a
// private one (no [Options.IndexDir]).
func (kb *Base) IndexFile() string { return kb.cur.Load().indexPath }

// Name returns the knowledge base's name.
func (kb *Base) Name() string { return kb.name }

// Options returns the options in effect, defaults applied.
func (kb *Base) Options() Options { return kb.opts }

func (kb *Base) usable(ctx context.Context) error {
	if kb.closed.Load() {
		return fmt.Errorf("knowledge base %q is closed", kb.name)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return kb.follow()
}
