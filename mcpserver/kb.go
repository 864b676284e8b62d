package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"
)

// DefaultKBMaxBytes is the default limit on the size of a concept read or
// written: 1 MiB.
const DefaultKBMaxBytes = 1 << 20

// Base names of a knowledge base's tools.
const (
	BaseConceptList   = "concept_list"
	BaseConceptRead   = "concept_read"
	BaseConceptSearch = "concept_search"
	BaseConceptWrite  = "concept_write"
)

const (
	defaultKBRefreshInterval = 2 * time.Second
	// kbStaleTempAge is how old a leftover temporary file of a write must be
	// before a directory walk removes it. A younger one may belong to a write
	// in flight in another process sharing the folder.
	kbStaleTempAge = time.Minute
	// kbTempMarker marks the temporary files of writes:
	// ".<name>.md.agentctl-tmp-<random>". They are hidden (leading dot), so
	// list and search never see them.
	kbTempMarker = ".agentctl-tmp-"
	// kbMaxIDBytes and kbMaxComponentBytes bound an id; the component limit
	// leaves room for the temporary file's name within NAME_MAX (255).
	kbMaxIDBytes        = 1024
	kbMaxComponentBytes = 200
	// kbTitleScanBytes is how much of a file list reads to find its title
	// when the search index does not already know it.
	kbTitleScanBytes = 64 << 10
	// Page sizes.
	kbListDefault   = 100
	kbListMax       = 1000
	kbSearchDefault = 10
	kbSearchMax     = 50
)

// KBOptions configures a mounted knowledge base.
type KBOptions struct {
	// ReadOnly mounts the knowledge base without concept_write.
	ReadOnly bool
	// MaxBytes is the largest concept read or written; 0 means
	// [DefaultKBMaxBytes].
	MaxBytes int64
	// RefreshInterval is how stale the search index may get with respect to
	// edits made outside agentctl; 0 means 2s. Writes through [KB.Write]
	// are searchable at once.
	RefreshInterval time.Duration
}

// Errors a [KBError] wraps, for [errors.Is].
var (
	ErrInvalidConceptID = errors.New("invalid concept id")
	ErrConceptNotFound  = errors.New("concept not found")
	ErrConceptTooLarge  = errors.New("concept too large")
	ErrOutsideKB        = errors.New("path leads outside the knowledge base")
	ErrNotAConcept      = errors.New("not a concept")
	ErrKBReadOnly       = errors.New("knowledge base is read-only")
	ErrInvalidKBRequest = errors.New("invalid request")
)

// KBError is a knowledge-base operation refused for a reason the caller can
// act on. Its message says what is wrong and what to do instead; the tools
// send it to the model as a tool error.
type KBError struct {
	// Kind is one of the Err* values above.
	Kind error
	Msg  string
}

func (e *KBError) Error() string { return e.Msg }
func (e *KBError) Unwrap() error { return e.Kind }

func kbErrorf(kind error, format string, args ...any) *KBError {
	return &KBError{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// ConceptSummary is one concept in a listing.
type ConceptSummary struct {
	ID    string `json:"id" jsonschema:"The concept's id, to pass to concept_read."`
	Title string `json:"title,omitempty" jsonschema:"Its title (front matter title, else first # heading)."`
}

// ListOutput is the result of [KB.List] and concept_list.
type ListOutput struct {
	Concepts   []ConceptSummary `json:"concepts" jsonschema:"The concepts of this page, sorted by id."`
	NextCursor string           `json:"next_cursor,omitempty" jsonschema:"Pass as cursor to get the next page; absent on the last page."`
}

// ReadOutput is the result of [KB.Read] and concept_read.
type ReadOutput struct {
	ID      string `json:"id" jsonschema:"The concept's id."`
	Title   string `json:"title,omitempty" jsonschema:"The title from the concept's YAML front matter, if it has one."`
	Content string `json:"content" jsonschema:"The concept's complete Markdown, front matter included."`
}

// SearchResult is one hit of [KB.Search].
type SearchResult struct {
	ID      string  `json:"id" jsonschema:"The concept's id, to pass to concept_read."`
	Title   string  `json:"title,omitempty" jsonschema:"Its title."`
	Snippet string  `json:"snippet" jsonschema:"A short excerpt around the best match."`
	Score   float64 `json:"score" jsonschema:"Relevance (higher is better); comparable only within one search."`
}

// SearchOutput is the result of [KB.Search] and concept_search.
type SearchOutput struct {
	Results []SearchResult `json:"results" jsonschema:"The best matches, best first; empty when nothing matches."`
}

// WriteOutput is the result of [KB.Write] and concept_write.
type WriteOutput struct {
	ID      string `json:"id" jsonschema:"The concept's id."`
	Bytes   int    `json:"bytes" jsonschema:"Bytes written."`
	Created bool   `json:"created" jsonschema:"True when the concept did not exist before."`
}

// KB is a mounted knowledge base: a folder of Markdown files, "concepts",
// served in-process. A concept's id is its path relative to the folder
// without ".md", with "/" between folders: "guides/setup" is
// guides/setup.md (see [CleanConceptID]). Hidden files and folders (a
// leading ".") and files other than *.md are not concepts.
//
// Every file access goes through an [os.Root] opened on the folder, so
// nothing outside it is read or written, also not through symbolic links.
// Writes are atomic (temporary file, fsync, rename; see [KB.Write]). Search
// uses an in-memory inverted index built on the first search and kept fresh
// (see [KB.Search]). Its methods are safe for concurrent use.
//
// [RegisterKBTools] serves a KB as MCP tools.
type KB struct {
	name string
	dir  string
	opts KBOptions
	root *os.Root
	// staleTempAge is kbStaleTempAge; tests shorten it.
	staleTempAge time.Duration

	// mu orders the changes to the index against the files: a refresh
	// (walk, read, apply) and a write's rename and index update never
	// interleave, so the index never loses a write.
	mu sync.Mutex
	// lastRefresh is when the last complete refresh started (UnixNano).
	lastRefresh atomic.Int64
	// lastSearch is when the last search started (UnixNano).
	lastSearch atomic.Int64
	// The background refresher (see backgroundRefresh) runs on bgCtx;
	// bgStarted is guarded by mu.
	bgCtx     context.Context
	bgCancel  context.CancelFunc
	bgStarted bool
	bgDone    sync.WaitGroup

	// idxMu guards idx; searches hold it for reading.
	idxMu sync.RWMutex
	idx   *kbIndex // nil until the first search

	closed atomic.Bool
}

// OpenKB mounts the folder dir as the knowledge base name. The folder must
// exist; every later access to it goes through an [os.Root].
func OpenKB(name, dir string, opts KBOptions) (*KB, error) {
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
	if opts.MaxBytes < 0 {
		return nil, fmt.Errorf("knowledge base %q: negative MaxBytes %d", name, opts.MaxBytes)
	}
	if opts.MaxBytes == 0 {
		opts.MaxBytes = DefaultKBMaxBytes
	}
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = defaultKBRefreshInterval
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("knowledge base %q: %w", name, err)
	}
	kb := &KB{name: name, dir: dir, opts: opts, root: root, staleTempAge: kbStaleTempAge}
	kb.bgCtx, kb.bgCancel = context.WithCancel(context.Background())
	return kb, nil
}

// Close releases the folder. The knowledge base is unusable afterwards.
func (kb *KB) Close() error {
	if kb.closed.Swap(true) {
		return nil
	}
	kb.bgCancel()
	// Once we hold mu, no refresh can start the background refresher, and
	// none rebuilds the index (they check closed).
	kb.mu.Lock()
	kb.idxMu.Lock()
	kb.idx = nil
	kb.idxMu.Unlock()
	kb.mu.Unlock()
	kb.bgDone.Wait()
	return kb.root.Close()
}

// Name returns the knowledge base's name.
func (kb *KB) Name() string { return kb.name }

// Options returns the options in effect, defaults applied.
func (kb *KB) Options() KBOptions { return kb.opts }

func (kb *KB) usable(ctx context.Context) error {
	if kb.closed.Load() {
		return fmt.Errorf("knowledge base %q is closed", kb.name)
	}
	return ctx.Err()
}

// CleanConceptID checks a concept id and returns its canonical form. A valid
// id is a relative, slash-separated path of non-hidden names, without "."
// or ".." components, backslashes, control characters or an empty name.
// A single trailing ".md" is accepted and removed ("guides/setup.md" is
// "guides/setup"), so canonical ids never end in ".md"; a file named
// "x.md.md" is therefore not a concept. The error says what is wrong and
// what a valid id looks like.
func CleanConceptID(id string) (string, error) {
	bad := func(why string) (string, error) {
		return "", kbErrorf(ErrInvalidConceptID,
			`invalid concept id %q: %s; a concept id is the concept's path inside the knowledge base, with "/" between folders and without ".md", e.g. "guides/setup" (get ids from concept_list or concept_search)`,
			id, why)
	}
	switch {
	case id == "":
		return bad("it is empty")
	case !utf8.ValidString(id):
		return bad("it is not valid UTF-8")
	case strings.IndexByte(id, 0) >= 0:
		return bad("it contains a NUL byte")
	case strings.IndexFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return bad("it contains a control character")
	case strings.IndexByte(id, '\\') >= 0:
		return bad(`it contains a backslash; separate folders with "/"`)
	case id[0] == '/':
		return bad("it is an absolute path; ids are relative to the knowledge base")
	case len(id) > kbMaxIDBytes:
		return bad(fmt.Sprintf("it is longer than %d bytes", kbMaxIDBytes))
	}
	clean := strings.TrimSuffix(id, ".md")
	if clean == "" {
		return bad(`it has no name before ".md"`)
	}
	if strings.HasSuffix(clean, ".md") {
		return bad(`it ends in ".md" twice`)
	}
	if strings.HasSuffix(clean, "/") {
		return bad(`it ends in "/", which names a folder; list a folder with concept_list and a prefix`)
	}
	for c := range strings.SplitSeq(clean, "/") {
		switch {
		case c == "":
			return bad(`it has an empty folder name ("//" or a leading "/")`)
		case c == "." || c == "..":
			return bad(fmt.Sprintf("it has a %q component; ids cannot leave or re-enter folders", c))
		case c[0] == '.':
			return bad(fmt.Sprintf("%q is hidden (starts with \".\"); hidden files and folders are not concepts", c))
		case len(c) > kbMaxComponentBytes:
			return bad(fmt.Sprintf("a name in it is longer than %d bytes", kbMaxComponentBytes))
		}
	}
	return clean, nil
}

// isConceptID reports whether id is a canonical concept id: the ids list and
// search return are exactly the ones CleanConceptID leaves unchanged.
func isConceptID(id string) bool {
	c, err := CleanConceptID(id)
	return err == nil && c == id
}

// List returns a page of concept ids (and titles) sorted by id, those
// starting with prefix when it is not empty. cursor is the next_cursor of
// the previous page ("" for the first); limit defaults to 100, at most 1000.
// The listing walks the folder on every call, so it is always current.
func (kb *KB) List(ctx context.Context, prefix, cursor string, limit int) (ListOutput, error) {
	out := ListOutput{Concepts: []ConceptSummary{}}
	if err := kb.usable(ctx); err != nil {
		return out, err
	}
	if limit <= 0 {
		limit = kbListDefault
	}
	limit = min(limit, kbListMax)
	after := ""
	if cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil || len(b) == 0 {
			return out, kbErrorf(ErrInvalidKBRequest, "invalid cursor %q; pass the next_cursor of the previous concept_list result unchanged, or leave cursor out for the first page", cursor)
		}
		after = string(b)
	}
	files, err := kb.scan(ctx, kbScanDir(prefix))
	if err != nil {
		return out, err
	}
	start, _ := slices.BinarySearchFunc(files, after, func(f kbFile, id string) int { return strings.Compare(f.id, id) })
	if after != "" && start < len(files) && files[start].id == after {
		start++
	}
	var page []kbFile
	i := start
	for ; i < len(files) && len(page) < limit; i++ {
		if strings.HasPrefix(files[i].id, prefix) {
			page = append(page, files[i])
		}
	}
	for ; i < len(files); i++ {
		if strings.HasPrefix(files[i].id, prefix) {
			out.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(page[len(page)-1].id))
			break
		}
	}
	out.Concepts = make([]ConceptSummary, len(page))
	kb.idxMu.RLock()
	idx := kb.idx
	var missing []int
	for i, f := range page {
		out.Concepts[i].ID = f.id
		if idx != nil {
			if d, ok := idx.byID[f.id]; ok && idx.docs[d].size == f.size && idx.docs[d].mtime == f.mtime {
				out.Concepts[i].Title = idx.docs[d].title
				continue
			}
		}
		missing = append(missing, i)
	}
	kb.idxMu.RUnlock()
	err = kbForEach(ctx, len(missing), func(_, j int) {
		c := &out.Concepts[missing[j]]
		if head, err := kb.readHead(c.ID+".md", min(kb.opts.MaxBytes, kbTitleScanBytes)); err == nil {
			c.Title = conceptTitle(head)
		}
	})
	return out, err
}

// kbScanDir is the folder to walk for a list prefix: the part up to its last
// "/" ("guides/se" walks guides), or the whole knowledge base.
func kbScanDir(prefix string) string {
	i := strings.LastIndexByte(prefix, '/')
	if i <= 0 {
		return ""
	}
	return prefix[:i]
}

// Read returns a concept's Markdown and its front-matter title. A file larger
// than MaxBytes is refused.
func (kb *KB) Read(ctx context.Context, id string) (ReadOutput, error) {
	if err := kb.usable(ctx); err != nil {
		return ReadOutput{}, err
	}
	cid, err := CleanConceptID(id)
	if err != nil {
		return ReadOutput{}, err
	}
	data, _, err := kb.readConcept(cid)
	if err != nil {
		return ReadOutput{}, err
	}
	title, _, _ := splitFrontMatter(data)
	return ReadOutput{ID: cid, Title: title, Content: string(data)}, nil
}

// readConcept reads a concept's file and returns it with the file's
// information, taken before the read.
func (kb *KB) readConcept(cid string) ([]byte, fs.FileInfo, error) {
	rel := cid + ".md"
	fi, err := kb.root.Stat(rel)
	if err != nil {
		return nil, nil, kb.pathError(cid, err)
	}
	if err := kb.checkConceptFile(cid, fi); err != nil {
		return nil, nil, err
	}
	f, err := kb.root.Open(rel)
	if err != nil {
		return nil, nil, kb.pathError(cid, err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, nil, kb.pathError(cid, err)
	}
	if err := kb.checkConceptFile(cid, fi); err != nil {
		return nil, nil, err
	}
	var buf bytes.Buffer
	buf.Grow(int(fi.Size()) + 1)
	if _, err := buf.ReadFrom(io.LimitReader(f, kb.opts.MaxBytes+1)); err != nil {
		return nil, nil, kb.pathError(cid, err)
	}
	if int64(buf.Len()) > kb.opts.MaxBytes {
		return nil, nil, kb.tooLargeToRead(cid, int64(buf.Len()))
	}
	return buf.Bytes(), fi, nil
}

func (kb *KB) checkConceptFile(cid string, fi fs.FileInfo) error {
	switch {
	case fi.IsDir():
		return kbErrorf(ErrNotAConcept, "%s.md in knowledge base %q is a folder, not a concept", cid, kb.name)
	case !fi.Mode().IsRegular():
		return kbErrorf(ErrNotAConcept, "%s.md in knowledge base %q is not a regular file, so it is not a concept", cid, kb.name)
	case fi.Size() > kb.opts.MaxBytes:
		return kb.tooLargeToRead(cid, fi.Size())
	}
	return nil
}

func (kb *KB) tooLargeToRead(cid string, size int64) error {
	return kbErrorf(ErrConceptTooLarge, "concept %q is %d bytes, larger than the %d-byte limit (MaxBytes) for concepts in knowledge base %q; it cannot be read through agentctl",
		cid, size, kb.opts.MaxBytes, kb.name)
}

// readHead reads up to n bytes of a file inside the root.
func (kb *KB) readHead(rel string, n int64) ([]byte, error) {
	f, err := kb.root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

// pathError turns an error of the os.Root into a message for the model.
func (kb *KB) pathError(cid string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		if fi, serr := kb.root.Lstat(cid); serr == nil && fi.IsDir() {
			return kbErrorf(ErrConceptNotFound, "concept %q not found in knowledge base %q: %q is a folder; list its concepts with concept_list and prefix %q", cid, kb.name, cid, cid+"/")
		}
		return kbErrorf(ErrConceptNotFound, "concept %q not found in knowledge base %q; use concept_list or concept_search", cid, kb.name)
	case isRootEscape(err):
		return kbErrorf(ErrOutsideKB, "concept %q cannot be used: its path goes through a symbolic link that points outside knowledge base %q, and agentctl only reads and writes files inside the knowledge base's folder", cid, kb.name)
	case errors.Is(err, syscall.ELOOP):
		return kbErrorf(ErrNotAConcept, "concept %q cannot be used: its path has a loop of symbolic links", cid)
	}
	return fmt.Errorf("knowledge base %q: concept %q: %w", kb.name, cid, err)
}

// isRootEscape reports whether err is an os.Root refusing a path that leaves
// the root (the os package does not export that error).
func isRootEscape(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if err.Error() == "path escapes from parent" {
			return true
		}
	}
	return false
}

// Write creates or replaces a concept atomically: the content goes to a
// temporary file in the same folder, which is synced and then renamed over
// the concept, so a crash leaves either the old or the new content. Missing
// folders are created. The index is updated before Write returns.
func (kb *KB) Write(ctx context.Context, id, content string) (WriteOutput, error) {
	if err := kb.usable(ctx); err != nil {
		return WriteOutput{}, err
	}
	if kb.opts.ReadOnly {
		return WriteOutput{}, kbErrorf(ErrKBReadOnly, "knowledge base %q is mounted read-only; concepts cannot be written", kb.name)
	}
	cid, err := CleanConceptID(id)
	if err != nil {
		return WriteOutput{}, err
	}
	if int64(len(content)) > kb.opts.MaxBytes {
		return WriteOutput{}, kbErrorf(ErrConceptTooLarge, "content is %d bytes, larger than the %d-byte limit (MaxBytes) for a concept in knowledge base %q; split it into smaller concepts",
			len(content), kb.opts.MaxBytes, kb.name)
	}
	rel := cid + ".md"
	dir, base := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir != "" {
		if err := kb.root.MkdirAll(dir, 0o755); err != nil {
			// MkdirAll reports an existing link that leaves the root as
			// "file exists"; Stat says why.
			if _, serr := kb.root.Stat(dir); isRootEscape(serr) || errors.Is(serr, syscall.ELOOP) {
				return WriteOutput{}, kb.pathError(cid, serr)
			}
			if isRootEscape(err) || errors.Is(err, syscall.ELOOP) {
				return WriteOutput{}, kb.pathError(cid, err)
			}
			if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist) {
				return WriteOutput{}, kbErrorf(ErrInvalidConceptID, "cannot write concept %q: a part of its folder %q exists in knowledge base %q and is not a folder", cid, dir, kb.name)
			}
			return WriteOutput{}, fmt.Errorf("knowledge base %q: create folder %q: %w", kb.name, dir, err)
		}
	}
	perm, created := fs.FileMode(0o644), false
	switch fi, err := kb.root.Lstat(rel); {
	case errors.Is(err, fs.ErrNotExist):
		created = true
	case err != nil:
		return WriteOutput{}, kb.pathError(cid, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		if _, serr := kb.root.Stat(rel); serr != nil && !errors.Is(serr, fs.ErrNotExist) {
			return WriteOutput{}, kb.pathError(cid, serr)
		}
		return WriteOutput{}, kbErrorf(ErrNotAConcept, "concept %q is a symbolic link in knowledge base %q; agentctl does not replace links: write to the concept it points to instead", cid, kb.name)
	case fi.IsDir() || !fi.Mode().IsRegular():
		return WriteOutput{}, kb.checkConceptFile(cid, fi)
	default:
		perm = fi.Mode().Perm()
	}

	tmp := path.Join(dir, kbTempName(base))
	if err := kb.writeTemp(tmp, content, perm); err != nil {
		return WriteOutput{}, kb.pathError(cid, err)
	}
	kb.mu.Lock()
	if err := kb.root.Rename(tmp, rel); err != nil {
		kb.mu.Unlock()
		_ = kb.root.Remove(tmp)
		return WriteOutput{}, kb.pathError(cid, err)
	}
	// kb.mu is held: only refresh (also under kb.mu) sets kb.idx.
	if fi, err := kb.root.Lstat(rel); err == nil && kb.idx != nil {
		doc := newKBAnalyzer().analyze([]byte(content))
		kb.idxMu.Lock()
		kb.idx.add(cid, fi.Size(), kbIndexMtime(fi, time.Now()), doc)
		kb.idx.maybeCompact()
		kb.idxMu.Unlock()
	}
	kb.mu.Unlock()
	kb.syncDir(dir)
	return WriteOutput{ID: cid, Bytes: len(content), Created: created}, nil
}

// kbTempName names the temporary file of a write of base.
func kbTempName(base string) string {
	var r [8]byte
	_, _ = rand.Read(r[:])
	return "." + base + kbTempMarker + hex.EncodeToString(r[:])
}

func isKBTempName(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, kbTempMarker)
}

func (kb *KB) writeTemp(tmp, content string, perm fs.FileMode) (err error) {
	f, err := kb.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = kb.root.Remove(tmp)
		}
	}()
	if _, err = io.WriteString(f, content); err != nil {
		f.Close()
		return err
	}
	if err = f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncDir makes a rename in dir durable; best effort (not every system can
// sync a directory).
func (kb *KB) syncDir(dir string) {
	if dir == "" {
		dir = "."
	}
	if d, err := kb.root.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// kbFile is a concept found by a walk.
type kbFile struct {
	id    string
	size  int64
	mtime int64
}

// scan walks the folder dir (relative, "" for the whole knowledge base) and
// returns its concepts sorted by id. Hidden entries and files other than
// *.md are skipped; so are symbolic links to folders (no cycles) and links
// that leave the root. Temporary files of writes older than staleTempAge are
// removed on the way unless the mount is read-only.
func (kb *KB) scan(ctx context.Context, dir string) ([]kbFile, error) {
	if dir != "" {
		// Start below the root only through real, visible folders, as a
		// full walk would.
		if !isConceptID(dir) {
			return nil, nil
		}
		p := ""
		for c := range strings.SplitSeq(dir, "/") {
			p = path.Join(p, c)
			fi, err := kb.root.Lstat(p)
			if err != nil || !fi.IsDir() {
				return nil, nil
			}
		}
	}
	// Directories are a work queue for a few goroutines: a walk is mostly
	// system calls (getdents, fstatat), which run in parallel.
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		queue   = []string{dir}
		pending = 1 // directories queued or being read
		files   []kbFile
		walkErr error
	)
	now := time.Now()
	worker := func() {
		mu.Lock()
		defer mu.Unlock()
		for {
			for len(queue) == 0 && pending > 0 && walkErr == nil {
				cond.Wait()
			}
			if pending == 0 || walkErr != nil {
				cond.Broadcast()
				return
			}
			d := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			mu.Unlock()
			subdirs, found, err := kb.scanDir(ctx, d, now)
			mu.Lock()
			files = append(files, found...)
			queue = append(queue, subdirs...)
			pending += len(subdirs) - 1
			if err != nil && walkErr == nil {
				walkErr = err
			}
			cond.Broadcast()
		}
	}
	var wg sync.WaitGroup
	for range min(4, max(2, runtime.GOMAXPROCS(0))) {
		wg.Go(worker)
	}
	wg.Wait()
	if walkErr != nil {
		return nil, walkErr
	}
	slices.SortFunc(files, func(a, b kbFile) int { return strings.Compare(a.id, b.id) })
	return files, nil
}

// scanDir reads one folder of a walk: its visible subfolders and concepts.
func (kb *KB) scanDir(ctx context.Context, dir string, now time.Time) (subdirs []string, files []kbFile, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	name := dir
	if name == "" {
		name = "."
	}
	d, err := kb.root.Open(name)
	if err != nil {
		if dir != "" && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission)) {
			return nil, nil, nil // vanished or unreadable: not part of the knowledge base
		}
		return nil, nil, fmt.Errorf("knowledge base %q: %w", kb.name, err)
	}
	// Entries of a directory opened in a Root carry their information, read
	// with fstatat relative to the directory.
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil && !(dir != "" && errors.Is(err, fs.ErrPermission)) {
		return nil, nil, fmt.Errorf("knowledge base %q: %w", kb.name, err)
	}
	for _, e := range ents {
		n := e.Name()
		rel := path.Join(dir, n)
		if n[0] == '.' {
			if !kb.opts.ReadOnly && e.Type().IsRegular() && isKBTempName(n) {
				if fi, err := e.Info(); err == nil && now.Sub(fi.ModTime()) > kb.staleTempAge {
					_ = kb.root.Remove(rel)
				}
			}
			continue
		}
		switch t := e.Type(); {
		case t.IsDir():
			subdirs = append(subdirs, rel)
		case t.IsRegular(), t&fs.ModeSymlink != 0:
			id, ok := strings.CutSuffix(rel, ".md")
			if !ok || !isConceptID(id) {
				continue
			}
			fi, err := e.Info()
			if t&fs.ModeSymlink != 0 {
				fi, err = kb.root.Stat(rel) // follows links inside the root only
				if err != nil || !fi.Mode().IsRegular() {
					continue
				}
			}
			if err != nil {
				continue
			}
			files = append(files, kbFile{id: id, size: fi.Size(), mtime: fi.ModTime().UnixNano()})
		}
	}
	return subdirs, files, nil
}

// conceptTitle is the title list and search show: the front-matter title,
// else the first "# " heading.
func conceptTitle(data []byte) string {
	title, body, _ := splitFrontMatter(data)
	if title != "" {
		return title
	}
	return headingTitle(body)
}

// splitFrontMatter returns the title of YAML front matter (between "---"
// lines at the very top), the body after it, and whether there was front
// matter. Only a top-level "title:" key is read: plain, single- or
// double-quoted, or a block scalar ("|" or ">").
func splitFrontMatter(data []byte) (title string, body []byte, ok bool) {
	rest := bytes.TrimPrefix(data, []byte("\ufeff"))
	line, rest, found := cutLine(rest)
	if !found || strings.TrimRight(string(line), " \t") != "---" {
		return "", data, false
	}
	var lines [][]byte
	for {
		var l []byte
		l, rest, found = cutLine(rest)
		if t := strings.TrimRight(string(l), " \t"); t == "---" || t == "..." {
			break
		}
		if !found {
			return "", data, false // no closing line: not front matter
		}
		lines = append(lines, l)
	}
	for i, l := range lines {
		v, ok := bytes.CutPrefix(l, []byte("title:"))
		if !ok {
			continue
		}
		s := strings.TrimSpace(string(v))
		if s != "" && (s[0] == '|' || s[0] == '>') {
			var parts []string
			for _, c := range lines[i+1:] {
				if len(c) == 0 || (c[0] != ' ' && c[0] != '\t') {
					break
				}
				parts = append(parts, strings.TrimSpace(string(c)))
			}
			return strings.Join(parts, " "), rest, true
		}
		return yamlScalar(s), rest, true
	}
	return "", rest, true
}

// yamlScalar decodes a one-line YAML scalar well enough for a title.
func yamlScalar(s string) string {
	switch {
	case strings.HasPrefix(s, `"`):
		if end := closingDoubleQuote(s); end > 0 {
			if u, err := strconv.Unquote(s[:end+1]); err == nil {
				return u
			}
			return s[1:end]
		}
		return strings.Trim(s, `"`)
	case strings.HasPrefix(s, "'"):
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			if s[i] == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					b.WriteByte('\'')
					i++
					continue
				}
				return b.String()
			}
			b.WriteByte(s[i])
		}
		return b.String()
	}
	if i := strings.Index(s, " #"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

func closingDoubleQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// headingTitle returns the text of the first "# " heading outside code
// fences.
func headingTitle(body []byte) string {
	fence := ""
	for len(body) > 0 {
		var line []byte
		line, body, _ = cutLine(body)
		t := strings.TrimLeft(string(line), " ")
		if len(string(line))-len(t) > 3 {
			continue
		}
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			continue
		}
		if h, ok := strings.CutPrefix(t, "# "); ok {
			h = strings.TrimSpace(h)
			if trimmed := strings.TrimRight(h, "#"); trimmed != h && (trimmed == "" || strings.HasSuffix(trimmed, " ")) {
				h = strings.TrimSpace(trimmed)
			}
			return h
		}
	}
	return ""
}

// cutLine splits off the first line (without its "\n" or "\r\n").
func cutLine(b []byte) (line, rest []byte, found bool) {
	line, rest, found = bytes.Cut(b, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), rest, found
}

// Search ranks the concepts for query (BM25 over title and body, title
// matches weighted up) and returns the best limit (default 10, at most 50),
// each with a snippet around its best match.
//
// The first search walks the folder and builds an in-memory inverted index;
// the index holds postings, titles and lengths, not the contents, and the
// snippets are cut from the top hits' files. Writes through [KB.Write] update
// the index at once. Edits made outside agentctl are picked up by a stat walk
// (no reads) at most once per RefreshInterval, which re-reads only files whose
// size or modification time changed.
func (kb *KB) Search(ctx context.Context, query string, limit int) (SearchOutput, error) {
	out := SearchOutput{Results: []SearchResult{}}
	if err := kb.usable(ctx); err != nil {
		return out, err
	}
	if strings.TrimSpace(query) == "" {
		return out, kbErrorf(ErrInvalidKBRequest, "query is empty; search knowledge base %q with a few distinctive keywords", kb.name)
	}
	if limit <= 0 {
		limit = kbSearchDefault
	}
	limit = min(limit, kbSearchMax)
	kb.lastSearch.Store(time.Now().UnixNano())
	if err := kb.refresh(ctx, kb.opts.RefreshInterval); err != nil {
		return out, err
	}
	terms := kbQueryTerms(query)
	if len(terms) == 0 {
		return out, nil
	}
	kb.idxMu.RLock()
	if kb.idx == nil { // closed meanwhile
		kb.idxMu.RUnlock()
		return out, kb.usable(ctx)
	}
	hits := kb.idx.search(terms, limit)
	kb.idxMu.RUnlock()

	results := make([]SearchResult, len(hits))
	keep := make([]bool, len(hits))
	err := kbForEach(ctx, len(hits), func(_, i int) {
		h := hits[i]
		data, _, err := kb.readConcept(h.id)
		if err != nil {
			return // gone or changed since indexing; the next refresh catches up
		}
		_, body, _ := splitFrontMatter(data)
		results[i] = SearchResult{ID: h.id, Title: h.title, Snippet: kbSnippet(body, terms), Score: roundScore(h.score)}
		keep[i] = true
	})
	for i := range results {
		if keep[i] {
			out.Results = append(out.Results, results[i])
		}
	}
	return out, err
}

func roundScore(s float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(s, 'f', 4, 64), 64)
	return r
}

// refresh builds the index, or brings it up to date when the last refresh
// started longer than maxAge ago.
func (kb *KB) refresh(ctx context.Context, maxAge time.Duration) error {
	fresh := func() bool {
		last := kb.lastRefresh.Load()
		return last != 0 && time.Since(time.Unix(0, last)) < maxAge
	}
	if fresh() {
		return nil
	}
	kb.mu.Lock()
	defer kb.mu.Unlock()
	if kb.closed.Load() {
		return kb.usable(ctx)
	}
	if fresh() { // another search refreshed while we waited
		return nil
	}
	start := time.Now()
	files, err := kb.scan(ctx, "")
	if err != nil {
		return err
	}
	// Only refresh and Write change the index, both under kb.mu: reading
	// it here needs no idxMu.
	idx, building := kb.idx, kb.idx == nil
	if building {
		idx = newKBIndex()
	}
	var changed []kbFile
	present := make(map[string]bool, len(files))
	for _, f := range files {
		if f.size > kb.opts.MaxBytes {
			continue // unreadable through agentctl: not searchable either
		}
		present[f.id] = true
		if d, ok := idx.byID[f.id]; ok && idx.docs[d].size == f.size && idx.docs[d].mtime == f.mtime {
			continue
		}
		changed = append(changed, f)
	}
	var removed []string
	for id := range idx.byID {
		if !present[id] {
			removed = append(removed, id)
		}
	}
	lock, unlock := kb.idxMu.Lock, kb.idxMu.Unlock
	if building { // not published yet
		lock, unlock = func() {}, func() {}
	}
	lock()
	for _, id := range removed {
		idx.remove(id)
	}
	unlock()

	// Read and analyse the changed files in parallel; apply each at once,
	// so the transient analyses never pile up.
	type analysed struct {
		id          string
		size, mtime int64
		doc         kbAnalysis
		gone        bool
	}
	results := make(chan analysed, 64)
	var readErr error
	go func() {
		analyzers := make([]*kbAnalyzer, kbWorkers(len(changed)))
		readErr = kbForEach(ctx, len(changed), func(w, i int) {
			if analyzers[w] == nil {
				analyzers[w] = newKBAnalyzer()
			}
			id := changed[i].id
			now := time.Now()
			data, fi, err := kb.readConcept(id)
			if err != nil {
				results <- analysed{id: id, gone: true}
				return
			}
			results <- analysed{id: id, size: fi.Size(), mtime: kbIndexMtime(fi, now), doc: analyzers[w].analyze(data)}
		})
		close(results)
	}()
	for r := range results {
		lock()
		if r.gone {
			idx.remove(r.id)
		} else {
			idx.add(r.id, r.size, r.mtime, r.doc)
		}
		unlock()
	}
	if readErr != nil {
		return readErr
	}
	lock()
	idx.maybeCompact()
	unlock()
	if building {
		idx.trim()
		kb.idxMu.Lock()
		if kb.closed.Load() {
			kb.idxMu.Unlock()
			return kb.usable(ctx)
		}
		kb.idx = idx
		kb.idxMu.Unlock()
		if !kb.bgStarted {
			kb.bgStarted = true
			kb.bgDone.Go(kb.backgroundRefresh)
		}
	}
	kb.lastRefresh.Store(start.UnixNano())
	return nil
}

// kbActiveWindow is how long after a search the background refresher keeps
// walking (at least twice RefreshInterval).
const kbActiveWindow = time.Minute

// backgroundRefresh keeps the index of a knowledge base in use fresh, so
// that searches do not wait for the stat walk: while there was a search
// within kbActiveWindow, it refreshes every RefreshInterval/2, so the index
// a search finds is never older than RefreshInterval. Once searches stop it
// idles; the next search then walks itself before answering.
func (kb *KB) backgroundRefresh() {
	every := max(kb.opts.RefreshInterval/2, time.Millisecond)
	active := max(kbActiveWindow, 2*kb.opts.RefreshInterval)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-kb.bgCtx.Done():
			return
		case <-t.C:
		}
		if time.Since(time.Unix(0, kb.lastSearch.Load())) > active {
			continue
		}
		// An error (the folder vanished, say) leaves the index as it was;
		// the next search's own refresh reports it.
		_ = kb.refresh(kb.bgCtx, every)
	}
}

// kbRacyWindow: a file modified this close to when it was read may be
// modified again within the file system's timestamp granularity without its
// modification time changing. Such a file is indexed with mtime -1, so the
// next refresh reads it again.
const kbRacyWindow = time.Second

func kbIndexMtime(fi fs.FileInfo, readAt time.Time) int64 {
	if readAt.Sub(fi.ModTime()) < kbRacyWindow {
		return -1
	}
	return fi.ModTime().UnixNano()
}

func kbWorkers(n int) int {
	return max(1, min(n, 2*runtime.GOMAXPROCS(0), 16))
}

// kbForEach calls fn(worker, i) for i in [0, n) on a few goroutines; worker
// identifies the goroutine (for scratch space).
func kbForEach(ctx context.Context, n int, fn func(worker, i int)) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range kbWorkers(n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				fn(w, i)
			}
		})
	}
	wg.Wait()
	return ctx.Err()
}

// BM25F parameters: body and title are scored as one field, with the title's
// term frequency weighted up and normalised by its own length.
const (
	kbK1          = 1.2
	kbBodyB       = 0.75
	kbTitleB      = 0.5
	kbTitleWeight = 3.0
	// kbMaxTokenBytes: longer tokens (hashes, base64) are not indexed.
	kbMaxTokenBytes = 64
	kbMaxQueryTerms = 32
)

// kbIndex is an inverted index. Documents are numbered in order of
// addition; a changed document is removed (a tombstone) and added again
// under a new number, so each posting list stays sorted and is appended to.
// Postings are delta-encoded varints: doc delta, then body tf << 1 | (title
// tf > 0), then title tf when present. Tombstones are skipped while scoring
// (so document frequencies count live documents only) and compacted away
// when they outnumber half the live documents.
type kbIndex struct {
	terms map[string]int32
	lists []kbPostings
	docs  []kbDoc
	byID  map[string]int32

	live, dead              int
	bodyLenSum, titleLenSum int64

	// scratch holds *kbScratch for concurrent searches.
	scratch sync.Pool
}

// kbScratch is a search's working memory: a dense score per document, the
// documents touched (to reset them) and a term's live postings.
type kbScratch struct {
	scores  []float64
	touched []int32
	matches []kbPosting
}

type kbPostings struct {
	buf  []byte
	last int32 // last document number appended, -1 for none
}

type kbDoc struct {
	id, title   string
	size, mtime int64
	bodyLen     uint32
	titleLen    uint16
	live        bool
}

func newKBIndex() *kbIndex {
	return &kbIndex{terms: map[string]int32{}, byID: map[string]int32{}}
}

func (x *kbIndex) add(id string, size, mtime int64, a kbAnalysis) {
	x.remove(id)
	n := int32(len(x.docs))
	x.docs = append(x.docs, kbDoc{id: id, title: a.title, size: size, mtime: mtime, bodyLen: a.bodyLen, titleLen: a.titleLen, live: true})
	x.byID[id] = n
	x.live++
	x.bodyLenSum += int64(a.bodyLen)
	x.titleLenSum += int64(a.titleLen)
	for _, t := range a.terms {
		tid, ok := x.terms[t.term]
		if !ok {
			tid = int32(len(x.lists))
			x.terms[t.term] = tid
			x.lists = append(x.lists, kbPostings{last: -1})
		}
		x.lists[tid].append(kbPosting{doc: n, body: uint32(t.body), title: uint32(t.title)})
	}
}

func (x *kbIndex) remove(id string) {
	d, ok := x.byID[id]
	if !ok {
		return
	}
	doc := &x.docs[d]
	x.live--
	x.dead++
	x.bodyLenSum -= int64(doc.bodyLen)
	x.titleLenSum -= int64(doc.titleLen)
	delete(x.byID, id)
	*doc = kbDoc{} // free the strings; live is false
}

// kbPosting is one decoded posting.
type kbPosting struct {
	doc         int32
	body, title uint32
}

// append encodes one posting (documents in increasing order): the
// document as a delta, the body count shifted left with a title flag, and
// the title count when there is one. each decodes it.
func (p *kbPostings) append(q kbPosting) {
	p.buf = binary.AppendUvarint(p.buf, uint64(q.doc-p.last))
	p.last = q.doc
	v := uint64(q.body) << 1
	if q.title > 0 {
		v |= 1
	}
	p.buf = binary.AppendUvarint(p.buf, v)
	if q.title > 0 {
		p.buf = binary.AppendUvarint(p.buf, uint64(q.title))
	}
}

// each calls fn for every posting of p, tombstones included.
func (p *kbPostings) each(fn func(kbPosting)) {
	buf, doc := p.buf, int32(-1)
	for len(buf) > 0 {
		delta, n := binary.Uvarint(buf)
		buf = buf[n:]
		v, n := binary.Uvarint(buf)
		buf = buf[n:]
		var title uint64
		if v&1 != 0 {
			title, n = binary.Uvarint(buf)
			buf = buf[n:]
		}
		doc += int32(delta)
		fn(kbPosting{doc: doc, body: uint32(v >> 1), title: uint32(title)})
	}
}

// maybeCompact drops tombstones once they outnumber half the live
// documents, renumbering the documents.
func (x *kbIndex) maybeCompact() {
	if x.dead < 1024 || x.dead*2 < x.live {
		return
	}
	renum := make([]int32, len(x.docs))
	docs := make([]kbDoc, 0, x.live)
	for i, d := range x.docs {
		renum[i] = -1
		if d.live {
			renum[i] = int32(len(docs))
			x.byID[d.id] = int32(len(docs))
			docs = append(docs, d)
		}
	}
	for i := range x.lists {
		old := x.lists[i]
		np := kbPostings{last: -1}
		old.each(func(p kbPosting) {
			n := renum[p.doc]
			if n < 0 {
				return
			}
			p.doc = n
			np.append(p)
		})
		x.lists[i] = np
	}
	x.docs, x.dead = docs, 0
}

// trim gives the posting lists back the slack of append's doubling.
func (x *kbIndex) trim() {
	for i := range x.lists {
		if b := x.lists[i].buf; cap(b)-len(b) > 8 {
			x.lists[i].buf = bytes.Clone(b)
		}
	}
	x.docs = slices.Clip(x.docs)
}

type kbHit struct {
	id, title string
	score     float64
}

// search scores the live documents containing any of terms and returns the
// best k, best first, ties broken by id.
func (x *kbIndex) search(terms []string, k int) []kbHit {
	if x.live == 0 {
		return nil
	}
	n := float64(x.live)
	avgBody := max(float64(x.bodyLenSum)/n, 1)
	avgTitle := max(float64(x.titleLenSum)/n, 1)
	sc, _ := x.scratch.Get().(*kbScratch)
	if sc == nil {
		sc = &kbScratch{}
	}
	defer x.scratch.Put(sc)
	if len(sc.scores) < len(x.docs) {
		sc.scores = make([]float64, len(x.docs)+len(x.docs)/4)
	}
	scores, matches := sc.scores, sc.matches[:0]
	touched := sc.touched[:0]
	for _, t := range terms {
		tid, ok := x.terms[t]
		if !ok {
			continue
		}
		matches = matches[:0]
		x.lists[tid].each(func(p kbPosting) {
			if x.docs[p.doc].live {
				matches = append(matches, p)
			}
		})
		df := float64(len(matches))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range matches {
			d := &x.docs[p.doc]
			tf := float64(p.body) / (1 - kbBodyB + kbBodyB*float64(d.bodyLen)/avgBody)
			if p.title > 0 {
				tf += kbTitleWeight * float64(p.title) / (1 - kbTitleB + kbTitleB*float64(d.titleLen)/avgTitle)
			}
			if scores[p.doc] == 0 {
				touched = append(touched, p.doc)
			}
			scores[p.doc] += idf * tf * (kbK1 + 1) / (tf + kbK1)
		}
	}
	sc.matches = matches
	better := func(a, b kbHit) bool {
		if a.score != b.score {
			return a.score > b.score
		}
		return a.id < b.id
	}
	// A small sorted top-k: k is at most 50.
	top := make([]kbHit, 0, k+1)
	for _, d := range touched {
		h := kbHit{score: scores[d], id: x.docs[d].id}
		scores[d] = 0
		if len(top) == k && !better(h, top[k-1]) {
			continue
		}
		i, _ := slices.BinarySearchFunc(top, h, func(a, b kbHit) int {
			if better(a, b) {
				return -1
			}
			return 1
		})
		top = slices.Insert(top, i, h)
		if len(top) > k {
			top = top[:k]
		}
	}
	sc.touched = touched
	for i := range top {
		top[i].title = x.docs[x.byID[top[i].id]].title
	}
	return top
}

// kbAnalysis is what the index keeps of a document.
type kbAnalysis struct {
	title    string
	bodyLen  uint32
	titleLen uint16
	terms    []kbTermFreq
}

type kbTermFreq struct {
	term        string
	body, title uint32
}

// kbAnalyzer tokenises documents, reusing its scratch space.
type kbAnalyzer struct {
	pos map[string]int
	buf []byte
}

func newKBAnalyzer() *kbAnalyzer { return &kbAnalyzer{pos: map[string]int{}} }

func (a *kbAnalyzer) analyze(data []byte) kbAnalysis {
	title, body, _ := splitFrontMatter(data)
	if title == "" {
		title = headingTitle(body)
	}
	if len(title) > 512 {
		title = strings.ToValidUTF8(title[:512], "")
	}
	var out kbAnalysis
	clear(a.pos)
	count := func(tok []byte, isTitle bool) {
		i, ok := a.pos[string(tok)]
		if !ok {
			i = len(out.terms)
			t := string(tok)
			a.pos[t] = i
			out.terms = append(out.terms, kbTermFreq{term: t})
		}
		if isTitle {
			out.terms[i].title++
		} else {
			out.terms[i].body++
		}
	}
	var n int
	a.buf = kbTokens([]byte(title), a.buf, func(tok []byte, _, _ int) {
		count(tok, true)
		n++
	})
	out.titleLen = uint16(min(n, math.MaxUint16))
	n = 0
	a.buf = kbTokens(body, a.buf, func(tok []byte, _, _ int) {
		count(tok, false)
		n++
	})
	out.bodyLen = uint32(n)
	out.title = title
	return out
}

// kbTokens calls fn for each token of text: a maximal run of letters, digits
// and marks, lower-cased, with its byte offsets in text. Tokens longer than
// kbMaxTokenBytes are skipped. buf is scratch space, returned for reuse.
func kbTokens(text, buf []byte, fn func(tok []byte, start, end int)) []byte {
	buf = buf[:0]
	start := -1
	emit := func(end int) {
		if start >= 0 && len(buf) <= kbMaxTokenBytes {
			fn(buf, start, end)
		}
		buf, start = buf[:0], -1
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			switch {
			case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
			case 'A' <= c && c <= 'Z':
				c += 'a' - 'A'
			default:
				emit(i)
				i++
				continue
			}
			if start < 0 {
				start = i
			}
			if len(buf) <= kbMaxTokenBytes { // longer is skipped anyway
				buf = append(buf, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(text[i:])
		if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) {
			if start < 0 {
				start = i
			}
			if len(buf) <= kbMaxTokenBytes {
				buf = utf8.AppendRune(buf, unicode.ToLower(r))
			}
		} else {
			emit(i)
		}
		i += size
	}
	emit(len(text))
	return buf
}

// kbQueryTerms returns the distinct tokens of a query.
func kbQueryTerms(query string) []string {
	var terms []string
	kbTokens([]byte(query), nil, func(tok []byte, _, _ int) {
		if len(terms) < kbMaxQueryTerms && !slices.Contains(terms, string(tok)) {
			terms = append(terms, string(tok))
		}
	})
	return terms
}

// kbSnippetBytes is the length of a snippet, before "…" marks.
const kbSnippetBytes = 200

// kbSnippet cuts about kbSnippetBytes of body around the window that holds
// the most distinct query terms (then the most matches), on word
// boundaries, with whitespace collapsed.
func kbSnippet(body []byte, terms []string) string {
	type match struct{ start, end, term int }
	var ms []match
	kbTokens(body, nil, func(tok []byte, s, e int) {
		if i := slices.Index(terms, string(tok)); i >= 0 {
			ms = append(ms, match{s, e, i})
		}
	})
	from := 0
	if len(ms) > 0 {
		// Two pointers over the matches: the window [ms[i].start, +width).
		counts := make([]int, len(terms))
		distinct, bestDistinct, bestTotal, j := 0, -1, 0, 0
		for i := range ms {
			for j < len(ms) && ms[j].end <= ms[i].start+kbSnippetBytes {
				if counts[ms[j].term] == 0 {
					distinct++
				}
				counts[ms[j].term]++
				j++
			}
			if total := j - i; distinct > bestDistinct || distinct == bestDistinct && total > bestTotal {
				bestDistinct, bestTotal, from = distinct, total, ms[i].start
			}
			counts[ms[i].term]--
			if counts[ms[i].term] == 0 {
				distinct--
			}
		}
		// Some context before the match, from a word boundary.
		if from > 40 {
			s := from - 40
			if k := bytes.IndexAny(body[s:from], " \t\n"); k >= 0 {
				s += k + 1
			}
			from = s
		} else {
			from = 0
		}
	}
	end := min(len(body), from+kbSnippetBytes)
	if end < len(body) {
		if k := bytes.LastIndexAny(body[from:end], " \t\n"); k > kbSnippetBytes/2 {
			end = from + k
		}
	}
	for from < end && !utf8.RuneStart(body[from]) {
		from++
	}
	for end < len(body) && end > from && !utf8.RuneStart(body[end]) {
		end--
	}
	s := strings.Join(strings.Fields(string(body[from:end])), " ")
	if from > 0 {
		s = "…" + s
	}
	if end < len(body) && strings.TrimSpace(string(body[end:])) != "" {
		s += "…"
	}
	return s
}
