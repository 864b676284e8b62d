package instance

// A full disk. `instance delete` must work when the state directory's file
// system has no space left: it is how a user makes some. SQLite needs space
// for any write, a DELETE too (its pages go to the WAL before the
// database), so the delete takes the least it can, in this order:
//
//  1. the instance's directory is moved aside (a rename: no space) and the
//     one DELETE, its rows cascading, is tried, as on any disk;
//  2. on a full disk, the directory goes first (what it frees, the DELETE
//     can use) and the DELETE is tried again;
//  3. then the reserve goes: a file of reserveBytes that `instance create`
//     and `agentctl gc` keep in the state directory while the file system
//     has room for it, so that a delete always finds some; and the rows go
//     in transactions of bounded size, each followed by a checkpoint that
//     lets the next rewrite the same WAL frames instead of adding more.
//
// No VACUUM, no checkpoint that truncates and no backup on the way: the
// space the rows took stays inside the database (SQLite reuses it for the
// next rows) until `agentctl gc` compacts it (see [Store.Compact]), when the
// file system has room for that; gc and the next create put the reserve
// back.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"modernc.org/sqlite"
)

// ReserveFile is the file in the state directory that keeps space for a
// delete on a full file system (see [Store.DeleteInstance]).
const ReserveFile = ".disk-reserve"

// reserveBytes is the size of the reserve: room for several of the delete's
// bounded transactions (chunkBytes of rows each, their index and free-list
// pages) in the WAL, and the checkpoints between them.
const reserveBytes = 1 << 20

// DiskFullError is a command that could not write the state directory
// because its file system is full. Nothing was changed, unless Partly says
// what was.
type DiskFullError struct {
	Dir string // the state directory
	// Op is what could not be done: "create an instance", "delete
	// instance ID".
	Op string
	// Partly, when not empty, is what was done all the same.
	Partly string
	// Retry is the command that finishes the work once there is space.
	Retry string
	Err   error
}

func (e *DiskFullError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "could not %s: the file system of the state directory %s is full (%v)", e.Op, e.Dir, e.Err)
	if e.Partly != "" {
		b.WriteString("; " + e.Partly)
	} else {
		b.WriteString("; nothing was changed")
	}
	b.WriteString(". Free some space (`agentctl instance delete` works on a full disk; `agentctl gc` compacts the state database once there is room)")
	if e.Retry != "" {
		b.WriteString(" and run `" + e.Retry + "` again")
	} else {
		b.WriteString(" and try again")
	}
	return b.String()
}

func (e *DiskFullError) Unwrap() error { return e.Err }

// isDiskFull reports whether err is a write refused for want of space:
// ENOSPC or EDQUOT from the file system, or SQLite's SQLITE_FULL or
// SQLITE_IOERR_SHMSIZE.
func isDiskFull(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()&0xff == sqliteFull || se.Code() == sqliteIOErrShmSize
	}
	return false
}

// IsDiskFull reports whether err is a write refused for want of space (see
// [DiskFullError]).
func IsDiskFull(err error) bool { return isDiskFull(err) }

// SQLite's SQLITE_FULL, the primary code of its "database or disk is
// full", and SQLITE_IOERR_SHMSIZE, a WAL index (-shm file) that could not
// be given its pages: when the last process using the database has closed
// it cleanly, the next one makes it again, and on a full file system even
// a read fails so.
const (
	sqliteFull         = 13
	sqliteIOErrShmSize = 10 | 19<<8
)

// errInjectedFull is what a test's diskFull hook returns (see
// [Store.fullHook]).
var errInjectedFull = fmt.Errorf("injected: %w", syscall.ENOSPC)

// reservePath is the reserve's path.
func (s *Store) reservePath() string { return filepath.Join(s.dir, ReserveFile) }

// ensureReserve makes the reserve when it is missing and the file system
// has room for it; best effort (a full disk leaves it missing). It reports
// whether it made one.
func (s *Store) ensureReserve() bool {
	path := s.reservePath()
	if fi, err := os.Stat(path); err == nil && fi.Size() >= reserveBytes {
		return false
	}
	tmp, err := os.CreateTemp(s.dir, ReserveFile+".tmp-")
	if err != nil {
		return false
	}
	ok := false
	defer func() {
		tmp.Close()
		if !ok {
			os.Remove(tmp.Name())
		}
	}()
	if err := allocate(tmp, reserveBytes); err != nil {
		return false
	}
	if err := tmp.Sync(); err != nil {
		return false
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return false
	}
	ok = true
	return true
}

// allocate makes f hold n bytes of allocated space: fallocate where the
// file system has it, else written bytes (pseudo-random: a file system that
// compresses must not store them as nothing).
func allocate(f *os.File, n int64) error {
	if err := fallocate(f, n); err == nil {
		return nil
	}
	buf := make([]byte, 64<<10)
	rng := rand.NewChaCha8([32]byte{'a', 'g', 'e', 'n', 't', 'c', 't', 'l'})
	for written := int64(0); written < n; {
		_, _ = rng.Read(buf)
		m, err := f.Write(buf[:min(int64(len(buf)), n-written)])
		if err != nil {
			return err
		}
		written += int64(m)
	}
	return nil
}

// releaseReserve removes the reserve, and reports whether there was one.
func (s *Store) releaseReserve() bool { return ReleaseReserve(s.dir) }

// ReleaseReserve removes the reserve of the state directory dir, for an
// `instance delete` that cannot even open the state database on a full
// disk, and reports whether there was one.
func ReleaseReserve(dir string) bool {
	return os.Remove(filepath.Join(dir, ReserveFile)) == nil
}

// diskFull returns err, or a *DiskFullError for op when it is a full disk.
func (s *Store) diskFull(op, partly, retry string, err error) error {
	if !isDiskFull(err) {
		return err
	}
	var df *DiskFullError
	if errors.As(err, &df) {
		return err
	}
	return &DiskFullError{Dir: s.dir, Op: op, Partly: partly, Retry: retry, Err: err}
}

// deleteRowsOnFullDisk deletes instance id's rows when a DELETE found the
// disk full: after trash (its directory dir, moved aside) is removed, the
// DELETE again; then, with the reserve released, in transactions of
// bounded size. It returns the number of instance rows deleted (0: someone
// else deleted it), and on an error what was done all the same ("" for
// nothing).
func (s *Store) deleteRowsOnFullDisk(ctx context.Context, id, trash, dir string, moved bool) (n int64, partly string, err error) {
	removed, chunks := false, 0
	defer func() {
		switch {
		case err == nil:
		case removed && chunks > 0:
			partly = "its directory " + dir + " and some of its events or questions were removed, its record was not"
		case removed:
			partly = "its directory " + dir + " was removed, its record was not"
		case chunks > 0:
			partly = "some of its events or questions were removed, its record was not"
		}
	}()
	if moved {
		if err := os.RemoveAll(trash); err == nil {
			removed = true
		}
	}
	if n, err = s.deleteRow(ctx, id); !isDiskFull(err) {
		return n, "", err
	}
	s.releaseReserve()
	s.checkpoint(ctx)
	// The rows there are now (an endpoint that serves the instance may add
	// more, which the record's DELETE takes with it), key order.
	for _, q := range []struct{ last, pick, drop string }{
		{`SELECT max(seq) FROM events WHERE instance_id = ?`,
			`SELECT seq, length(CAST(message AS BLOB)) + length(CAST(tool AS BLOB)) FROM events WHERE instance_id = ?1 AND seq <= ?2 ORDER BY seq LIMIT 256`,
			`DELETE FROM events WHERE instance_id = ? AND seq <= ?`},
		{`SELECT max(id) FROM questions WHERE instance_id = ?`,
			`SELECT id, length(CAST(question AS BLOB)) + length(CAST(choices AS BLOB)) + coalesce(length(CAST(answer AS BLOB)), 0) FROM questions WHERE instance_id = ?1 AND id <= ?2 ORDER BY id LIMIT 256`,
			`DELETE FROM questions WHERE instance_id = ? AND id <= ?`},
	} {
		var upTo any
		if err := s.db.QueryRowContext(ctx, q.last, id).Scan(&upTo); err != nil {
			return 0, "", err
		}
		for upTo != nil {
			last, more, err := s.pickChunk(ctx, q.pick, id, upTo)
			if err != nil {
				return 0, "", err
			}
			if !more {
				break
			}
			if err := s.fullHook(); err != nil {
				return 0, "", err
			}
			if _, err := s.db.ExecContext(ctx, q.drop, id, last); err != nil {
				return 0, "", err
			}
			chunks++
			s.checkpoint(ctx)
		}
	}
	n, err = s.deleteRow(ctx, id)
	return n, "", err
}

// chunkBytes bounds what one transaction of deleteRowsOnFullDisk deletes
// (the rows' text; their pages are a little more).
const chunkBytes = 64 << 10

// pickChunk returns the key of the last of the next rows to delete in one
// transaction (pick lists them, key and size, in key order, up to upTo),
// and whether there are any.
func (s *Store) pickChunk(ctx context.Context, pick, id string, upTo any) (last any, more bool, err error) {
	rows, err := s.db.QueryContext(ctx, pick, id, upTo)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	total := int64(0)
	for rows.Next() {
		var key any
		var size int64
		if err := rows.Scan(&key, &size); err != nil {
			return nil, false, err
		}
		if more && total+size > chunkBytes {
			break
		}
		last, more, total = key, true, total+size
	}
	return last, more, rows.Err()
}

// deleteRow deletes instance id's row, which takes its questions, events
// and token with it, in one statement (one transaction).
func (s *Store) deleteRow(ctx context.Context, id string) (int64, error) {
	if err := s.fullHook(); err != nil {
		return 0, err
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM instances WHERE id = ?`, id)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// checkpoint copies the WAL into the database and has the next write start
// the WAL again from its beginning, rewriting frames that have their space
// already, best effort.
func (s *Store) checkpoint(ctx context.Context) {
	var busy, frames, done int
	_ = s.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(RESTART)").Scan(&busy, &frames, &done)
}

// fullHook is the test seam of the delete path: a write it refuses fails as
// on a full disk, before SQLite is asked.
func (s *Store) fullHook() error {
	if s.diskFullHook != nil && s.diskFullHook() {
		return errInjectedFull
	}
	return nil
}

// CompactStats is what [Store.Compact] did.
type CompactStats struct {
	// Vacuumed: the database was rewritten without its free pages,
	// FreedBytes smaller.
	Vacuumed   bool  `json:"vacuumed"`
	FreedBytes int64 `json:"freed_bytes"`
	// Skipped says why free pages worth compacting were left (no room).
	Skipped string `json:"skipped,omitempty"`
	// Reserve: the reserve for deletes on a full disk was made again.
	Reserve bool `json:"reserve"`
}

// Compact gives back to the file system the space that deletes freed
// inside the state database, and makes the reserve for deletes on a full
// disk again; what deletes leave for later (see [Store.DeleteInstance]),
// `agentctl gc` does. The database is rewritten (VACUUM) when at least a
// quarter of its pages are free and the file system has room for a copy
// of it and its WAL; the WAL is folded into the database and truncated,
// unless another process is using it at that moment.
//
// On PostgreSQL there is nothing to do: its autovacuum gives the space back.
func (s *Store) Compact(ctx context.Context) (CompactStats, error) {
	var st CompactStats
	if s.sqlitePath == "" {
		return st, nil
	}
	var pageSize, pages, free int64
	for _, p := range []struct {
		q string
		v *int64
	}{{"PRAGMA page_size", &pageSize}, {"PRAGMA page_count", &pages}, {"PRAGMA freelist_count", &free}} {
		if err := s.db.QueryRowContext(ctx, p.q).Scan(p.v); err != nil {
			return st, s.dbError(err)
		}
	}
	if free > 0 && 4*free >= pages {
		need := 2*(pages-free)*pageSize + reserveBytes
		if avail, ok := freeSpace(s.dir); ok && avail < need {
			st.Skipped = fmt.Sprintf("%d free pages (%d bytes) left in the state database: compacting it needs %d bytes, the file system has %d", free, free*pageSize, need, avail)
		} else {
			conn, err := s.db.Conn(ctx)
			if err != nil {
				return st, s.dbError(err)
			}
			// The copy VACUUM builds is kept in memory, not in a
			// temporary file elsewhere.
			_, err = conn.ExecContext(ctx, "PRAGMA temp_store = MEMORY")
			if err == nil {
				_, err = conn.ExecContext(ctx, "VACUUM")
				_, _ = conn.ExecContext(ctx, "PRAGMA temp_store = DEFAULT")
			}
			conn.Close()
			if err != nil && !isDiskFull(err) {
				return st, s.dbError(err)
			}
			if err != nil {
				st.Skipped = fmt.Sprintf("compacting the state database found the file system full: %v", err)
			} else {
				st.Vacuumed, st.FreedBytes = true, free*pageSize
			}
		}
	}
	s.truncateWAL(ctx)
	// A reserve's temporary file that a killed process left.
	if tmps, err := filepath.Glob(filepath.Join(s.dir, ReserveFile+".tmp-*")); err == nil {
		for _, p := range tmps {
			if fi, err := os.Stat(p); err == nil && s.now().Sub(fi.ModTime()) > leftoverAge {
				os.Remove(p)
			}
		}
	}
	st.Reserve = s.ensureReserve()
	return st, nil
}

// truncateWAL folds the WAL into the database and truncates it, unless
// another process is using the database at that moment (it does not wait).
func (s *Store) truncateWAL(ctx context.Context) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		return
	}
	defer conn.ExecContext(ctx, "PRAGMA busy_timeout = 30000")
	var busy, frames, done int
	_ = conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &frames, &done)
}
