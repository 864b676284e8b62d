//go:build unix

package kb

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// mayWrite reports whether this user may write the file at path, as far
// as access(2) tells (an error other than a refusal says yes: the write
// then fails, or not, by itself).
func mayWrite(path string) bool {
	const wOK = 2 // W_OK
	err := syscall.Access(path, wOK)
	return !errors.Is(err, syscall.EACCES) && !errors.Is(err, syscall.EPERM)
}

// keepGroup gives f, the new file of a concept, the group of old, the file
// it replaces, so that the group keeps its access; best effort: a user may
// give a file only a group it belongs to.
func keepGroup(f *os.File, old fs.FileInfo) {
	if st, ok := old.Sys().(*syscall.Stat_t); ok {
		_ = f.Chown(-1, int(st.Gid))
	}
}
