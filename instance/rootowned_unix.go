//go:build unix

package instance

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// RootOwnedRefusal says why a client that trusts only root-owned files
// (Gemini CLI's system settings) would ignore the file at path: the first
// of it and the directories above it that is not owned by root, or that
// group or others may write. It returns "" when the whole chain is sound.
func RootOwnedRefusal(path string) string {
	p, err := filepath.Abs(path)
	if err != nil {
		return err.Error()
	}
	for {
		fi, err := os.Stat(p)
		if err != nil {
			return err.Error()
		}
		kind := "directory"
		if !fi.IsDir() {
			kind = "file"
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 {
			return fmt.Sprintf("%s %s is owned by uid %d, not root", kind, p, st.Uid)
		}
		if fi.Mode().Perm()&0o022 != 0 {
			return fmt.Sprintf("%s %s is writable by group or others (mode %v)", kind, p, fi.Mode().Perm())
		}
		parent := filepath.Dir(p)
		if parent == p {
			return ""
		}
		p = parent
	}
}

// keepOwner gives the new version name of a client file the owner and
// group of the file it replaces (of), where this process may (root may);
// otherwise it stays the process's.
func keepOwner(name string, of os.FileInfo) {
	if st, ok := of.Sys().(*syscall.Stat_t); ok && (int(st.Uid) != os.Geteuid() || int(st.Gid) != os.Getegid()) {
		_ = os.Chown(name, int(st.Uid), int(st.Gid))
	}
}
