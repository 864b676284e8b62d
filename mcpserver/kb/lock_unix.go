//go:build unix

package kb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockFile takes an exclusive flock on path (created if missing), waiting
// for it until ctx is done. waiting, when not nil, is called once when the
// lock has not been free for lockNotice. The kernel drops the lock when the
// process dies, so a killed reconcile never leaves a stale lock.
//
// The wait polls (LOCK_NB, backing off to lockPollMax between tries): a
// blocking flock cannot be interrupted by a context, so Ctrl-C would not
// stop a kb index waiting for another process's build.
func lockFile(ctx context.Context, path string, waiting func()) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	start, delay := time.Now(), time.Millisecond
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, err
		}
		if waiting != nil && time.Since(start) >= lockNotice {
			waiting()
			waiting = nil
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, lockPollMax)
	}
}

// lockPollMax is the longest pause between two tries for a lock another
// process holds: how late, at most, a waiter notices it is free.
const lockPollMax = 50 * time.Millisecond

// inode returns the file's inode number, 0 when unknown. A file replaced by
// a rename gets a new one even if its size and modification time match.
func inode(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Ino)
	}
	return 0
}

// writeProblem says why this process cannot write the index database at
// path (or create it), as far as access(2) tells.
func writeProblem(path string) string {
	const wOK = 2 // W_OK
	dir := filepath.Dir(path)
	if err := syscall.Access(dir, wOK); err != nil && !errors.Is(err, fs.ErrNotExist) {
		if isReadOnlyFS(err) {
			return "it is on a read-only file system"
		}
		return fmt.Sprintf("this user (uid %d) may not write to its folder %s", os.Getuid(), dir)
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		if err := syscall.Access(f, wOK); err != nil && !errors.Is(err, fs.ErrNotExist) {
			if isReadOnlyFS(err) {
				return "it is on a read-only file system"
			}
			return fmt.Sprintf("this user (uid %d) may not write to %s", os.Getuid(), f)
		}
	}
	return "its permissions or its file system do not allow it"
}
