package kb

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

const (
	// tempMarker marks the temporary files of writes:
	// ".<name>.md.agentctl-tmp-<random>". They are hidden (leading dot), so
	// list and search never see them.
	tempMarker = ".agentctl-tmp-"
	// titleScanBytes is how much of a file list reads to find its title
	// when the search index does not already know it.
	titleScanBytes = 64 << 10
)

// Page sizes of [Base.List]: a limit of 0 or less gets listDefault, one
// above MaxListLimit gets MaxListLimit.
const (
	listDefault  = 100
	MaxListLimit = 1000
)

// ConceptSummary is one concept in a listing.
type ConceptSummary struct {
	ID    string `json:"id" jsonschema:"The concept's id, to pass to concept_read."`
	Title string `json:"title,omitempty" jsonschema:"Its title (front matter title, else first # heading)."`
}

// ListOutput is the result of [Base.List] and concept_list.
type ListOutput struct {
	Concepts   []ConceptSummary `json:"concepts" jsonschema:"The concepts of this page, sorted by id."`
	NextCursor string           `json:"next_cursor,omitempty" jsonschema:"Pass as cursor to get the next page; absent on the last page."`
}

// ReadOutput is the result of [Base.Read] and concept_read.
type ReadOutput struct {
	ID      string `json:"id" jsonschema:"The concept's id."`
	Title   string `json:"title,omitempty" jsonschema:"The title from the concept's YAML front matter, if it has one."`
	Content string `json:"content" jsonschema:"The concept's complete Markdown, front matter included."`
	Version string `json:"version" jsonschema:"The version of the content read: pass it to the write of an edit as if_version, which is then refused if the concept changed since."`
}

// WriteOutput is the result of [Base.Write] and concept_write.
type WriteOutput struct {
	ID      string `json:"id" jsonschema:"The concept's id."`
	Bytes   int    `json:"bytes" jsonschema:"Bytes written."`
	Created bool   `json:"created" jsonschema:"True when the concept did not exist before."`
	Version string `json:"version" jsonschema:"The version of the content written."`
}

// Version names a concept's content: the first 16 hex digits of its
// SHA-256.
func Version(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// List returns a page of concept ids (and titles) sorted by id, those
// starting with prefix when it is not empty. cursor is the next_cursor of
// the previous page ("" for the first); limit defaults to 100, at most 1000.
// The listing walks the folder on every call, so it is always current.
func (kb *Base) List(ctx context.Context, prefix, cursor string, limit int) (ListOutput, error) {
	out := ListOutput{Concepts: []ConceptSummary{}}
	if err := kb.usable(ctx); err != nil {
		return out, err
	}
	if limit <= 0 {
		limit = listDefault
	}
	limit = min(limit, MaxListLimit)
	after := ""
	if cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil || len(b) == 0 {
			return out, errorf(ErrInvalidRequest, "invalid cursor %q; pass the next_cursor of the previous concept_list result unchanged, or leave cursor out for the first page", cursor)
		}
		after = string(b)
	}
	files, _, _, err := kb.scan(ctx, prefixDir(prefix))
	if err != nil {
		return out, err
	}
	start, _ := slices.BinarySearchFunc(files, after, func(f file, id string) int { return strings.Compare(f.id, id) })
	if after != "" && start < len(files) && files[start].id == after {
		start++
	}
	var page []file
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
	// Titles from the search index when it is open and knows the file as
	// it is; the rest are read.
	var known map[string]row
	kb.ixMu.Lock()
	ix := kb.ix
	kb.ixMu.Unlock()
	if ix != nil {
		ids := make([]string, len(page))
		for i, f := range page {
			ids[i] = f.id
		}
		known, _ = ix.titles(ctx, ids) // on error, read them all
	}
	var missing []int
	for i, f := range page {
		out.Concepts[i].ID = f.id
		if r, ok := known[f.id]; ok && r.sameStat(f) {
			out.Concepts[i].Title = r.title
			continue
		}
		missing = append(missing, i)
	}
	err = forEach(ctx, len(missing), func(_, j int) {
		c := &out.Concepts[missing[j]]
		if head, err := kb.readHead(c.ID+".md", min(kb.opts.MaxBytes, titleScanBytes)); err == nil {
			c.Title = conceptTitle(head)
		}
	})
	return out, err
}

// prefixDir is the folder to walk for a list prefix: the part up to its last
// "/" ("guides/se" walks guides), or the whole knowledge base.
func prefixDir(prefix string) string {
	i := strings.LastIndexByte(prefix, '/')
	if i <= 0 {
		return ""
	}
	return prefix[:i]
}

// Read returns a concept's Markdown and its front-matter title. A file larger
// than MaxBytes is refused.
func (kb *Base) Read(ctx context.Context, id string) (ReadOutput, error) {
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
	if err := kb.checkText(cid, data); err != nil {
		return ReadOutput{}, err
	}
	title, _, _ := splitFrontMatter(data)
	return ReadOutput{ID: cid, Title: title, Content: string(data), Version: Version(data)}, nil
}

// readConcept reads a concept's file and returns it with the file's
// information, taken before the read.
func (kb *Base) readConcept(cid string) ([]byte, fs.FileInfo, error) {
	rel := cid + ".md"
	fi, err := kb.fsys().Stat(rel)
	if err != nil {
		return nil, nil, kb.pathError(cid, err)
	}
	if err := kb.checkConceptFile(cid, fi); err != nil {
		return nil, nil, err
	}
	f, err := kb.open(rel)
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

func (kb *Base) checkConceptFile(cid string, fi fs.FileInfo) error {
	switch {
	case fi.IsDir():
		return errorf(ErrNotAConcept, "%s.md in knowledge base %q is a folder, not a concept", cid, kb.name)
	case !fi.Mode().IsRegular():
		return errorf(ErrNotAConcept, "%s.md in knowledge base %q is not a regular file, so it is not a concept", cid, kb.name)
	case fi.Size() > kb.opts.MaxBytes:
		return kb.tooLargeToRead(cid, fi.Size())
	}
	return nil
}

// checkText refuses a concept whose bytes are not UTF-8 text: a model gets
// its text as a JSON string, in which every invalid byte becomes U+FFFD, so
// what it writes back would not be the file it read.
func (kb *Base) checkText(cid string, data []byte) error {
	off, ok := notUTF8(data)
	if ok {
		return nil
	}
	return errorf(ErrNotText, "concept %q in knowledge base %q is not UTF-8 text (byte 0x%02x at offset %d is not); "+
		"agentctl cannot return it unchanged: convert it (iconv -f latin1 -t utf-8) or keep it out of the knowledge base",
		cid, kb.name, data[off], off)
}

// notUTF8 returns the offset of the first byte of data that is not UTF-8,
// or false when all of it is.
func notUTF8(data []byte) (int, bool) {
	if utf8.Valid(data) {
		return 0, true
	}
	off := 0
	for {
		r, n := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && n <= 1 {
			return off, false
		}
		off += n
	}
}

func (kb *Base) tooLargeToRead(cid string, size int64) error {
	return errorf(ErrConceptTooLarge, "concept %q is %d bytes, larger than the %d-byte limit (MaxBytes) for concepts in knowledge base %q; it cannot be read through agentctl",
		cid, size, kb.opts.MaxBytes, kb.name)
}

// readHead reads up to n bytes of a file inside the root.
func (kb *Base) readHead(rel string, n int64) ([]byte, error) {
	f, err := kb.fsys().Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

// pathError turns an error of the os.Root into a message for the model.
func (kb *Base) pathError(cid string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		if fi, serr := kb.fsys().Lstat(cid); serr == nil && fi.IsDir() {
			return errorf(ErrConceptNotFound, "concept %q not found in knowledge base %q: %q is a folder; list its concepts with concept_list and prefix %q", cid, kb.name, cid, cid+"/")
		}
		return errorf(ErrConceptNotFound, "concept %q not found in knowledge base %q; use concept_list or concept_search", cid, kb.name)
	case isRootEscape(err):
		return errorf(ErrOutside, "concept %q cannot be used: its path goes through a symbolic link that points outside knowledge base %q, and agentctl only reads and writes files inside the knowledge base's folder", cid, kb.name)
	case errors.Is(err, syscall.ELOOP):
		return errorf(ErrNotAConcept, "concept %q cannot be used: its path has a loop of symbolic links", cid)
	case errors.Is(err, fs.ErrPermission):
		return kb.permissionError(cid, false)
	}
	return fmt.Errorf("knowledge base %q: concept %q: %w", kb.name, cid, err)
}

// writeError is [Base.pathError] for a write of the concept cid.
func (kb *Base) writeError(cid string, err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return kb.permissionError(cid, true)
	}
	return kb.pathError(cid, err)
}

// permissionError says that this user may not read (or write) the concept
// cid, naming the concept: the system's error names the file it opened,
// the temporary file of a write, which the model has no use for.
func (kb *Base) permissionError(cid string, write bool) error {
	if !write {
		return errorf(fs.ErrPermission, "concept %q in knowledge base %q cannot be read: its file, or a folder on its path, is not readable by %s; give that user read access to them",
			cid, kb.name, servingUser())
	}
	where := "the knowledge base's folder"
	if dir := path.Dir(cid); dir != "." {
		where = fmt.Sprintf("its folder %q, a folder on its path,", dir)
	}
	return errorf(fs.ErrPermission, "concept %q in knowledge base %q cannot be written: %s or its file is not writable by %s; give that user write access to them, or write the concept elsewhere",
		cid, kb.name, where, servingUser())
}

// servingUser names the user this process reads and writes as.
func servingUser() string {
	if uid := os.Getuid(); uid >= 0 {
		return fmt.Sprintf("the user agentctl serves as (uid %d)", uid)
	}
	return "the user agentctl serves as"
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
func (kb *Base) Write(ctx context.Context, id, content string) (WriteOutput, error) {
	return kb.WriteIf(ctx, id, content, "")
}

// WriteIf is [Base.Write] of an edit: when ifVersion is not empty, the
// concept must still hold the content of that [Version] (a read's) as it
// is replaced, or the write is refused with [ErrChanged], naming the
// version it holds now. Two writers of agentctl's are ordered by the
// index's write lock; an editor's write between the check and the rename
// is not seen.
func (kb *Base) WriteIf(ctx context.Context, id, content, ifVersion string) (WriteOutput, error) {
	if err := kb.usable(ctx); err != nil {
		return WriteOutput{}, err
	}
	if kb.opts.ReadOnly {
		return WriteOutput{}, errorf(ErrReadOnly, "knowledge base %q is mounted read-only; concepts cannot be written", kb.name)
	}
	cid, err := CleanConceptID(id)
	if err != nil {
		return WriteOutput{}, err
	}
	if int64(len(content)) > kb.opts.MaxBytes {
		return WriteOutput{}, errorf(ErrConceptTooLarge, "content is %d bytes, larger than the %d-byte limit (MaxBytes) for a concept in knowledge base %q; split it into smaller concepts",
			len(content), kb.opts.MaxBytes, kb.name)
	}
	if i := strings.IndexByte(content, 0); i >= 0 {
		return WriteOutput{}, errorf(ErrInvalidRequest, "content holds a NUL character (\\u0000) at byte %d, which Markdown text cannot; write the concept's text without it", i)
	}
	rel := cid + ".md"
	dir, base := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir != "" {
		if err := kb.fsys().MkdirAll(dir, 0o755); err != nil {
			// MkdirAll reports an existing link that leaves the root as
			// "file exists"; Stat says why.
			if _, serr := kb.fsys().Stat(dir); isRootEscape(serr) || errors.Is(serr, syscall.ELOOP) {
				return WriteOutput{}, kb.pathError(cid, serr)
			}
			if isRootEscape(err) || errors.Is(err, syscall.ELOOP) {
				return WriteOutput{}, kb.pathError(cid, err)
			}
			if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist) {
				return WriteOutput{}, errorf(ErrInvalidConceptID, "cannot write concept %q: a part of its folder %q exists in knowledge base %q and is not a folder", cid, dir, kb.name)
			}
			if errors.Is(err, fs.ErrPermission) {
				return WriteOutput{}, kb.permissionError(cid, true)
			}
			return WriteOutput{}, fmt.Errorf("knowledge base %q: create folder %q: %w", kb.name, dir, err)
		}
	}
	perm, created := fs.FileMode(0o644), false
	fi, err := kb.fsys().Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		created = true
	case err != nil:
		return WriteOutput{}, kb.writeError(cid, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		if _, serr := kb.fsys().Stat(rel); serr != nil && !errors.Is(serr, fs.ErrNotExist) {
			return WriteOutput{}, kb.pathError(cid, serr)
		}
		return WriteOutput{}, errorf(ErrNotAConcept, "concept %q is a symbolic link in knowledge base %q; agentctl does not replace links: write to the concept it points to instead", cid, kb.name)
	case fi.IsDir() || !fi.Mode().IsRegular():
		return WriteOutput{}, kb.checkConceptFile(cid, fi)
	default:
		perm = fi.Mode().Perm()
		if err := kb.checkReplace(cid, fi); err != nil {
			return WriteOutput{}, err
		}
	}

	tmp := path.Join(dir, tempName(base))
	if err := kb.writeTemp(tmp, content, perm, fi); err != nil {
		return WriteOutput{}, kb.writeError(cid, err)
	}
	var check func() error
	if ifVersion != "" {
		check = func() error { return kb.checkVersion(cid, ifVersion) }
	}
	if err := kb.renameAndIndex(ctx, tmp, cid, content, check); err != nil {
		return WriteOutput{}, err
	}
	kb.syncDir(dir)
	return WriteOutput{ID: cid, Bytes: len(content), Created: created, Version: Version([]byte(content))}, nil
}

// checkVersion refuses a write whose concept no longer holds the content
// of version want.
func (kb *Base) checkVersion(cid, want string) error {
	data, _, err := kb.readConcept(cid)
	switch {
	case errors.Is(err, ErrConceptNotFound) || errors.Is(err, fs.ErrNotExist):
		return errorf(ErrChanged, "concept %q in knowledge base %q was removed since version %s was read; nothing was written: write it without if_version to create it again", cid, kb.name, want)
	case err != nil:
		return err
	case Version(data) != want:
		return errorf(ErrChanged, "concept %q in knowledge base %q changed since version %s was read (it is version %s now); nothing was written: "+
			"read it again, make your change to what it holds now, and write that with if_version %s", cid, kb.name, want, Version(data), Version(data))
	}
	return nil
}

// checkReplace refuses to replace the concept's existing file, fi, when
// its owner made it read-only, or this user may not write it: a write
// renames a new file over it, which needs only the folder's permission, so
// the file's own would not be asked. And when what it holds is not UTF-8
// text: concept_read cannot have given it unchanged (see checkText), so
// what is written back would destroy what it did not give (a file larger
// than MaxBytes, which cannot be read through agentctl, or one this user
// cannot read, is replaced as any other).
func (kb *Base) checkReplace(cid string, fi fs.FileInfo) error {
	switch {
	case fi.Mode().Perm()&0o222 == 0:
		return errorf(ErrReadOnly, "concept %q in knowledge base %q is read-only: its file has no write permission (mode %s), and agentctl does not replace a file its owner made read-only; "+
			"make it writable (chmod u+w) if it should change", cid, kb.name, fi.Mode().Perm())
	case !mayWrite(filepath.Join(kb.dir, filepath.FromSlash(cid+".md"))):
		return errorf(ErrReadOnly, "concept %q in knowledge base %q is read-only for %s: its file (mode %s) may not be written by that user, "+
			"and agentctl does not replace a file it may not write; give that user write access to it if it should change", cid, kb.name, servingUser(), fi.Mode().Perm())
	case fi.Size() > kb.opts.MaxBytes:
		return nil
	}
	data, _, err := kb.readConcept(cid)
	if err != nil {
		return nil
	}
	if off, ok := notUTF8(data); !ok {
		return errorf(ErrNotText, "concept %q in knowledge base %q is not UTF-8 text (byte 0x%02x at offset %d is not), so agentctl cannot return it unchanged, "+
			"and does not replace it with what it could not return: convert it (iconv -f latin1 -t utf-8) or keep it out of the knowledge base",
			cid, kb.name, data[off], off)
	}
	return nil
}

// renameAndIndex renames the written temporary file over the concept and
// updates the search index in one step: the rename happens inside the
// index's write transaction, so no reconcile (of this process or another)
// applies an older read of the file after it, and a process killed between
// the two leaves an index whose row no longer matches the file, which the
// next reconcile reads again. Without an index (it cannot be opened), the
// write still happens; the next reconcile indexes it. check, when not nil,
// runs just before the rename (under the index's write lock, which orders
// agentctl's writers): its error leaves the concept as it was.
func (kb *Base) renameAndIndex(ctx context.Context, tmp, cid, content string, check func() error) error {
	rel := cid + ".md"
	rename := func() error {
		if check != nil {
			if err := check(); err != nil {
				_ = kb.fsys().Remove(tmp)
				return err
			}
		}
		if err := kb.fsys().Rename(tmp, rel); err != nil {
			_ = kb.fsys().Remove(tmp)
			return kb.writeError(cid, err)
		}
		return nil
	}
	ix, err := kb.index(context.WithoutCancel(ctx))
	if err != nil {
		return rename()
	}
	tx, err := ix.db.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return rename()
	}
	defer tx.Rollback()
	if err := rename(); err != nil {
		return err
	}
	fi, err := kb.fsys().Lstat(rel)
	if err != nil {
		return nil // replaced or removed already; the next reconcile sees it
	}
	data := []byte(content)
	title, body := indexedText(data)
	now := time.Now()
	r := row{size: fi.Size(), mtime: indexMtime(fi, now), inode: inode(fi), ctime: indexCtime(fi, now), hash: contentHash(data), indexed: true, title: title}
	if err := put(context.WithoutCancel(ctx), newWriteTx(tx), cid, r, body, true); err != nil {
		return nil // the file is written; the next reconcile indexes it
	}
	_ = tx.Commit()
	return nil
}

// tempName names the temporary file of a write of base.
func tempName(base string) string {
	var r [8]byte
	_, _ = rand.Read(r[:])
	return "." + base + tempMarker + hex.EncodeToString(r[:])
}

func isTempName(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, tempMarker)
}

// writeTemp writes content to the new file tmp, with permissions perm (as
// the umask leaves them). When it is to replace old (nil: nothing), it gets
// old's group and permissions, as an edit in place would keep them.
func (kb *Base) writeTemp(tmp, content string, perm fs.FileMode, old fs.FileInfo) (err error) {
	f, err := kb.fsys().OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = kb.fsys().Remove(tmp)
		}
	}()
	if old != nil {
		keepGroup(f, old)
		_ = f.Chmod(perm) // after the group: a change of group may clear bits
	}
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
func (kb *Base) syncDir(dir string) {
	if dir == "" {
		dir = "."
	}
	if d, err := kb.fsys().Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
