package kb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
// damaged in pages SQLite finds sound). A damaged index is reset to an empty
// one (see resetIndex) and stats.Damaged says what was wrong; the caller
// then builds it from the folder. Checking under the flock, after any other
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
	fresh, err := resetIndex(ctx, path, ix)
	if err != nil {
		kb.ix = nil // it was ix or nil, and resetIndex closed ix
		return nil, fmt.Errorf("knowledge base %q: search index %s is damaged (%s), and resetting it failed: %w; "+
			"stop the agentctl processes that use it, remove it and its -wal and -shm files, and run agentctl kb index on the folder",
			kb.name, path, stats.Damaged, err)
	}
	fresh.private = private
	if kb.ix != nil && kb.ix != fresh {
		kb.ix.db.Close() // in-flight searches of this process fail; the next ones use fresh
	}
	kb.ix = fresh
	kb.lastRefresh.Store(0)
	return fresh, nil
}

// damageText is what SQLite said of a damaged index, without our wrapping.
func damageText(err error) string {
	if e, ok := errors.AsType[*sqlite.Error](err); ok {
		return e.Error()
	}
	return err.Error()
}

// damagedError is the error of a check that found the index damaged.
type damagedError struct{ msg string }

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

// resetIndex makes the damaged index database at path an empty index, and
// returns it open; ix is it open already, or nil.
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
// ix is resetIndex's to close: on an error it is closed, and on success
// it is the index returned or closed.
func resetIndex(ctx context.Context, path string, ix *ftsIndex) (fresh *ftsIndex, err error) {
	defer func() {
		if err != nil && ix != nil {
			ix.db.Close() // idempotent, as sql.DB.Close is
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
		b, err := r.NewRestore("file:" + src)
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
	db, err := sql.Open("sqlite", "file:"+path)
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
