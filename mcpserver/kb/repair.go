package kb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"
)

// checkIndex makes sure the index is not damaged, with kb.mu and the flock
// held, and returns the index to use: PRAGMA quick_check, and with deep
// FTS5's integrity-check when that finds nothing (FTS5's own records can be
// damaged in pages SQLite finds sound). A damaged index, or anything else
// in its place that is not a usable index (a folder, a file that is not a
// database, a database of another schema), is moved aside and an empty
// index made in its place (see resetIndex); stats.Damaged says what was
// wrong and where it went, and the caller then builds it from the folder. Checking under the flock, after any other
// process's repair, a process never resets an index another has already
// rebuilt.
func (kb *Base) checkIndex(ctx context.Context, deep bool, stats *IndexStats) (*ftsIndex, error) {
	kb.ixMu.Lock()
	defer kb.ixMu.Unlock()
	if kb.closed.Load() {
		return nil, kb.usable(ctx)
	}
	ix, path := kb.ix, stats.Path
	var damage error
	if ix == nil {
		var err error
		if ix, err = openIndex(ctx, path); err != nil {
			if !isDamaged(err) {
				return nil, fmt.Errorf("knowledge base %q: %w", kb.name, err)
			}
			damage = err
		}
	}
	if damage == nil {
		var err error
		if damage, err = ix.check(ctx, deep); err != nil {
			if ix != kb.ix {
				ix.db.Close()
			}
			return nil, kb.indexError(ix, err)
		}
		if damage == nil {
			kb.ix = ix
			return ix, nil
		}
	}
	stats.Damaged = damageText(damage)
	var private string
	if kb.ix != nil {
		private = kb.ix.private
	}
	fresh, aside, err := resetIndexFor(ctx, path, ix, damage)
	if err != nil {
		kb.ix = nil // it was ix or nil, and resetIndex closed ix
		return nil, fmt.Errorf("knowledge base %q: search index %s is not usable (%s), and moving it aside to build it again failed: %w; "+
			"stop the agentctl processes that use it, move it and its -wal and -shm files away, and run agentctl kb index on the folder",
			kb.name, path, stats.Damaged, err)
	}
	if aside != "" {
		stats.Damaged += "; " + aside
	}
	fresh.private = private
	if kb.ix != nil && kb.ix != fresh {
		kb.ix.db.Close() // in-flight searches of this process fail; the next ones use fresh
	}
	kb.ix = fresh
	kb.lastRefresh.Store(0)
	return fresh, nil
}

// damageText is what SQLite (or our check) said of a damaged index, without
// our wrapping.
func damageText(err error) string {
	if e, ok := errors.AsType[*damagedError](err); ok {
		return e.Error()
	}
	if e, ok := errors.AsType[*sqlite.Error](err); ok {
		return e.Error()
	}
	return err.Error()
}

// damagedError is the error of a check that found the index damaged, or
// something in its place that is not an index.
type damagedError struct{ msg string }

// notAFile returns a damagedError if the index database's path, or its
// -wal or -shm file's, holds something other than a file (a folder, say),
// which SQLite cannot open.
func notAFile(path string) error {
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(f)
		if err != nil || fi.Mode().IsRegular() {
			continue
		}
		what := "not a regular file"
		if fi.IsDir() {
			what = "a folder"
		}
		return &damagedError{fmt.Sprintf("%s is %s, not a database file", f, what)}
	}
	return nil
}

func (e *damagedError) Error() string { return e.msg }

// check returns the damage PRAGMA quick_check (and with deep FTS5's
// integrity-check) finds, or nil; err is a failure to check.
func (ix *ftsIndex) check(ctx context.Context, deep bool) (damage, err error) {
	rs, err := ix.db.QueryContext(ctx, `PRAGMA quick_check(5)`)
	if err != nil {
		if isDamaged(err) {
			return err, nil
		}
		return nil, err
	}
	var found []string
	for rs.Next() {
		var line string
		if err := rs.Scan(&line); err != nil {
			rs.Close()
			if isDamaged(err) {
				return err, nil
			}
			return nil, err
		}
		if line != "ok" {
			found = append(found, strings.TrimSpace(line))
		}
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		if isDamaged(err) {
			return err, nil
		}
		return nil, err
	}
	if len(found) > 0 {
		return &damagedError{"PRAGMA quick_check: " + strings.Join(found, "; ")}, nil
	}
	if !deep {
		return nil, nil
	}
	if _, err := ix.db.ExecContext(ctx, `INSERT INTO fts (fts, rank) VALUES ('integrity-check', 0)`); err != nil {
		if isDamaged(err) {
			return err, nil
		}
		return nil, err
	}
	return nil, nil
}

// resetIndexFor makes the damaged index database at path (damage says what
// is wrong with it) an empty index, and returns it open; ix is it open
// already, or nil. What was there is not deleted but kept beside it, under
// a name with the suffix ".aside-<time>" (see asideName); aside says so,
// naming it.
//
// Something SQLite cannot open (a folder) or does not take for a
// database is renamed aside, with its -wal and -shm files (those first: a
// process opening the index in between finds a database without a log,
// never a log without its database), and a new database created. A
// database (damaged, or of another schema) is copied aside, with its -wal
// file, and then emptied in place:
//
// Through SQLite when it can: the online backup API copies an empty index
// over it, within SQLite's locking and its write-ahead log, so every other
// process's connections see the empty index (and reprepare their
// statements), and never a file swapped under them. Only a file SQLite does
// not take for a database at all is removed and created again: the -wal
// and -shm files first, then the database, so that no process opening it
// in between pairs a new database with an old log; a process with the old
// file open finds it damaged too, and comes here, where it finds the new
// one sound.
//
// (Renaming a database other processes have open would not do: the last
// connection of such a process to close deletes the -wal file by its name,
// which by then is the new index's.)
//
// ix is resetIndexFor's to close: on an error it is closed, and on success
// it is the index returned or closed.
func resetIndexFor(ctx context.Context, path string, ix *ftsIndex, damage error) (fresh *ftsIndex, aside string, err error) {
	defer func() {
		if err != nil && ix != nil {
			ix.db.Close() // idempotent, as sql.DB.Close is
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	if notAFile(path) != nil || sqliteCode(damage) == sqliteNotADB {
		if ix != nil {
			ix.db.Close()
		}
		to, err := moveAside(path)
		if err != nil {
			return nil, "", err
		}
		fresh, err = openIndex(ctx, path)
		return fresh, "moved aside to " + to, err
	}
	to, err := copyAside(path)
	if err != nil {
		return nil, "", err
	}
	if to != "" {
		aside = "moved aside (copied) to " + to
	}
	fresh, err = resetDatabase(ctx, path, ix)
	return fresh, aside, err
}

// resetDatabase empties the index database at path in place (see
// resetIndexFor); ix is it open already, or nil, and is resetDatabase's
// to close (see resetIndexFor).
func resetDatabase(ctx context.Context, path string, ix *ftsIndex) (fresh *ftsIndex, err error) {
	defer func() {
		if err != nil && ix != nil {
			ix.db.Close()
		}
	}()
	db := (*sql.DB)(nil)
	if ix != nil {
		db = ix.db
	} else if d, err := sql.Open("sqlite", indexDSN(path)); err == nil {
		db = d
		defer d.Close()
	}
	if db != nil {
		err := restoreEmpty(ctx, db, filepath.Dir(path))
		if err == nil {
			if ix != nil {
				if err := ix.init(ctx); err != nil {
					return nil, err
				}
				return ix, nil
			}
			return openIndex(ctx, path)
		}
		if !isDamaged(err) {
			return nil, err
		}
	}
	if ix != nil {
		ix.db.Close()
	}
	if err := removeIndexFiles(path); err != nil {
		return nil, err
	}
	return openIndex(ctx, path)
}

// asideName is a name, beside path and not taken, for what was at path
// (an index found unusable): path with the suffix ".aside-" and the time
// (UTC), and "-2", "-3", ... if taken.
func asideName(path string) string {
	base := path + ".aside-" + time.Now().UTC().Format("20060102T150405.000000000Z")
	name := base
	for i := 2; ; i++ {
		taken := false
		for _, f := range []string{name, name + "-wal", name + "-shm"} {
			if _, err := os.Lstat(f); !errors.Is(err, fs.ErrNotExist) {
				taken = true
			}
		}
		if !taken {
			return name
		}
		name = fmt.Sprintf("%s-%d", base, i)
	}
}

// moveAside renames what is at path, and its -wal and -shm files (those
// first), to asideName(path) (with "-wal" and "-shm"), and returns that
// name.
func moveAside(path string) (string, error) {
	to := asideName(path)
	for _, suffix := range []string{"-wal", "-shm", ""} {
		if err := os.Rename(path+suffix, to+suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("move %s aside: %w", path+suffix, err)
		}
	}
	return to, nil
}

// copyAside copies the database file at path, and its -wal file if there
// is one, to asideName(path) (with "-wal"), and returns that name ("" if
// there is no database file); on an error it leaves no copy.
func copyAside(path string) (string, error) {
	to := asideName(path)
	for _, suffix := range []string{"", "-wal"} {
		err := copyNewFile(path+suffix, to+suffix)
		if suffix == "" && errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			os.Remove(to)
			os.Remove(to + "-wal")
			return "", fmt.Errorf("copy %s aside to %s: %w", path+suffix, to+suffix, err)
		}
	}
	return to, nil
}

// copyNewFile copies the file from to the new file to (mode 0600: an index
// holds the words of the concepts).
func copyNewFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(to)
		return err
	}
	return out.Close()
}

// removeIndexFiles removes the index database at path with its -wal and
// -shm files, those first: a process opening the index in between finds a
// database without a log, never a log without its database.
func removeIndexFiles(path string) error {
	for _, f := range []string{path + "-wal", path + "-shm", path} {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// restoreEmpty copies an empty index, made in a temporary folder, over the
// database db with SQLite's online backup API.
func restoreEmpty(ctx context.Context, db *sql.DB, near string) error {
	tmp, err := os.MkdirTemp(near, ".agentctl-kb-empty-")
	if err != nil {
		if tmp, err = os.MkdirTemp("", "agentctl-kb-empty-"); err != nil {
			return err
		}
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "empty.db")
	if err := createEmptyIndex(ctx, src); err != nil {
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		r, ok := dc.(interface {
			NewRestore(string) (*sqlite.Backup, error)
		})
		if !ok {
			return fmt.Errorf("the SQLite driver's connection (%T) cannot restore a database", dc)
		}
		b, err := r.NewRestore(fileURI(src))
		if err != nil {
			return err
		}
		for try := 0; ; try++ {
			more, err := b.Step(-1)
			if err != nil {
				// Busy: another process writes (its busy timeout did
				// not cover the wait); try again a little later.
				if c := sqliteCode(err); (c == sqliteBusy || c == sqliteLocked) && try < 100 && ctx.Err() == nil {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				b.Finish()
				return err
			}
			if !more {
				return b.Finish()
			}
		}
	})
}

// createEmptyIndex creates, at path, an index database of this schema with
// nothing in it.
func createEmptyIndex(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", fileURI(path))
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := createSchema(ctx, tx); err != nil {
		return err
	}
	return tx.Commit()
}
