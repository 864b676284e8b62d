package instance

import (
	"os"
	"syscall"
)

// fallocate allocates n bytes for f (mode 0: the blocks, and the size).
func fallocate(f *os.File, n int64) error {
	return syscall.Fallocate(int(f.Fd()), 0, 0, n)
}

// freeSpace returns the bytes an unprivileged user may still write on the
// file system of dir.
func freeSpace(dir string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * st.Bsize, true
}
