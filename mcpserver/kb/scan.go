package kb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// file is a concept found by a walk.
type file struct {
	id    string
	size  int64
	mtime int64
	inode int64
	ctime int64
	known bool // reconcile: the index has a row for it
	// statted: size, mtime, inode and ctime are the file's, from a walk or
	// a stat; a search's stale hit knows only the id.
	statted bool
	// prev is the index's row for it, when known.
	prev row
}

// scan walks the folder dir (relative, "" for the whole knowledge base) and
// returns its concepts sorted by id. Hidden entries and files other than
// *.md are skipped; so are symbolic links to folders (no cycles) and links
// that leave the root. Temporary files of writes older than staleTempAge are
// removed on the way unless the mount is read-only. unreadable lists, in
// no order, the folders (with a trailing "/") and concept files below dir
// that the walk could not read or stat (permissions): not part of the
// knowledge base while so. misnamed lists the files named *.md whose names
// are not concept ids (see [CleanConceptID]): "x.md.md", a name that
// starts or ends with a space or is not in Unicode NFC, one with a control
// character or a backslash; no id reads them, so they are not concepts.
func (kb *Base) scan(ctx context.Context, dir string) (files []file, unreadable, misnamed []string, err error) {
	if dir != "" {
		// Start below the root only through real, visible folders, as a
		// full walk would.
		if !isConceptID(dir) {
			return nil, nil, nil, nil
		}
		p := ""
		for c := range strings.SplitSeq(dir, "/") {
			p = path.Join(p, c)
			fi, err := kb.fsys().Lstat(p)
			if err != nil || !fi.IsDir() {
				return nil, nil, nil, nil
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
			subdirs, found, denied, bad, err := kb.scanDir(ctx, d, now)
			mu.Lock()
			files = append(files, found...)
			unreadable = append(unreadable, denied...)
			misnamed = append(misnamed, bad...)
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
		return nil, nil, nil, walkErr
	}
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.id, b.id) })
	return files, unreadable, misnamed, nil
}

// scanDir reads one folder of a walk: its visible subfolders and concepts,
// what it could not read, and its misnamed concept files (see scan).
func (kb *Base) scanDir(ctx context.Context, dir string, now time.Time) (subdirs []string, files []file, unreadable, misnamed []string, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, nil, err
	}
	name := dir
	if name == "" {
		name = "."
	}
	d, err := kb.open(name)
	if err != nil {
		switch {
		case dir != "" && errors.Is(err, fs.ErrNotExist):
			return nil, nil, nil, nil, nil // vanished
		case dir != "" && errors.Is(err, fs.ErrPermission):
			return nil, nil, []string{dir + "/"}, nil, nil // not part of the knowledge base while so
		}
		return nil, nil, nil, nil, fmt.Errorf("knowledge base %q: %w", kb.name, err)
	}
	// Entries of a directory opened in a Root carry their information, read
	// with fstatat relative to the directory.
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		if !(dir != "" && errors.Is(err, fs.ErrPermission)) {
			return nil, nil, nil, nil, fmt.Errorf("knowledge base %q: %w", kb.name, err)
		}
		unreadable = append(unreadable, dir+"/")
	}
	for _, e := range ents {
		n := e.Name()
		rel := path.Join(dir, n)
		if n[0] == '.' {
			if !kb.opts.ReadOnly && e.Type().IsRegular() && isTempName(n) {
				if fi, err := e.Info(); err == nil && now.Sub(fi.ModTime()) > kb.staleTempAge {
					_ = kb.fsys().Remove(rel)
				}
			}
			continue
		}
		switch t := e.Type(); {
		case t.IsDir():
			subdirs = append(subdirs, rel)
		case t.IsRegular(), t&fs.ModeSymlink != 0:
			id, ok := strings.CutSuffix(rel, ".md")
			if !ok {
				continue
			}
			if !isConceptID(id) {
				misnamed = append(misnamed, rel)
				continue
			}
			fi, err := e.Info()
			if t&fs.ModeSymlink != 0 {
				fi, err = kb.fsys().Stat(rel) // follows links inside the root only
				if err != nil && !errors.Is(err, fs.ErrPermission) || err == nil && !fi.Mode().IsRegular() {
					continue
				}
			}
			if err != nil {
				if errors.Is(err, fs.ErrPermission) {
					unreadable = append(unreadable, rel)
				}
				continue
			}
			files = append(files, file{id: id, size: fi.Size(), mtime: fi.ModTime().UnixNano(), inode: inode(fi), ctime: ctime(fi), statted: true})
		}
	}
	return subdirs, files, unreadable, misnamed, nil
}
