//go:build unix

package kb

import (
	"io/fs"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on path (created if missing), waiting
// for it. The kernel drops it when the process dies, so a killed
// reconcile never leaves a stale lock.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// inode returns the file's inode number, 0 when unknown. A file replaced by
// a rename gets a new one even if its size and modification time match.
func inode(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Ino)
	}
	return 0
}
