package kb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"modernc.org/sqlite"
)

// SQLite's primary result codes (the low byte of [sqlite.Error.Code]) that
// say something about the index file itself.
const (
	sqlitePerm     = 3
	sqliteBusy     = 5
	sqliteLocked   = 6
	sqliteReadOnly = 8
	sqliteCorrupt  = 11 // also FTS5's SQLITE_CORRUPT_VTAB
	sqliteCantOpen = 14
	sqliteNotADB   = 26
)

// sqliteCode is the primary result code of the SQLite error in err's
// chain, or 0.
func sqliteCode(err error) int {
	if e, ok := errors.AsType[*sqlite.Error](err); ok {
		return e.Code() & 0xff
	}
	return 0
}

// isDamaged reports whether err says the index file is damaged: corrupt
// pages, or a file that is not a database (any more).
func isDamaged(err error) bool {
	if _, ok := errors.AsType[*damagedError](err); ok {
		return true
	}
	c := sqliteCode(err)
	return c == sqliteCorrupt || c == sqliteNotADB
}

// isUnwritable reports whether err says the index cannot be written, or
// opened for writing: permissions, or a read-only file system.
func isUnwritable(err error) bool {
	switch sqliteCode(err) {
	case sqlitePerm, sqliteReadOnly, sqliteCantOpen:
		return true
	}
	return errors.Is(err, fs.ErrPermission) || isReadOnlyFS(err)
}

// indexFault is err, an error of the index database at path, with what it
// means and what to do when that is known.
func indexFault(path string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case isUnwritable(err):
		return fmt.Errorf("search index %s cannot be written (%w): %s; agentctl keeps the index up to date with the folder, "+
			"so it needs to write the file and its folder: give this user write access to them, or use a state directory it can write to "+
			"(--state-dir or AGENTCTL_STATE_DIR), where the first search builds an index of its own",
			path, err, writeProblem(path))
	case isDamaged(err):
		return fmt.Errorf("search index %s is damaged (%w); it holds nothing the folder does not: remove it and its -wal and -shm files "+
			"(stopping the agentctl processes that use it first), and the next search, or agentctl kb index, builds it again", path, err)
	}
	return fmt.Errorf("search index %s: %w", path, err)
}

// isReadOnlyFS reports whether err says the file system is read-only.
func isReadOnlyFS(err error) bool { return errors.Is(err, syscall.EROFS) }
