//go:build unix

package instance

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
// group of the file it replaces (of). It reports false when name keeps
// another owner or group: this process may not give it theirs (only root
// may give a file away; a user may give it a group they are in). The
// group is then given where it may be.
func keepOwner(name string, of os.FileInfo) bool {
	st, ok := of.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) == os.Geteuid() && int(st.Gid) == os.Getegid() {
		return true
	}
	if os.Chown(name, int(st.Uid), int(st.Gid)) == nil {
		return true
	}
	_ = os.Chown(name, -1, int(st.Gid))
	return false
}

// hardLinked reports whether the file fi describes has other names: a
// new version renamed over one of them would leave the others behind.
func hardLinked(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink > 1
}

// newFileMode is the mode a program that makes a file with 0666, as
// editors do, gives it: 0666 less the process's umask. The umask is read
// from /proc (Linux), since setting it to read it would change it for a
// moment for every thread; elsewhere 0644 is assumed.
func newFileMode() os.FileMode {
	data, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for line := range strings.Lines(string(data)) {
			if v, ok := strings.CutPrefix(line, "Umask:"); ok {
				if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return 0o666 &^ os.FileMode(m)
				}
			}
		}
	}
	return 0o644
}
