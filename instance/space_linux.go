package instance

import (
	"errors"
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

// reserve makes sure the file system holds n bytes for f without changing
// its size (fallocate(2) with FALLOC_FL_KEEP_SIZE), so that writing n
// bytes into it cannot fail half way for want of space. Where the file
// system cannot, it reserves nothing and says nothing.
func reserve(f *os.File, n int64) error {
	if n == 0 {
		return nil
	}
	err := syscall.Fallocate(int(f.Fd()), 1 /* FALLOC_FL_KEEP_SIZE */, 0, n)
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		return nil
	}
	return err
}
