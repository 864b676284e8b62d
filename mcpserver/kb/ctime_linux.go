//go:build linux

package kb

import (
	"io/fs"
	"syscall"
)

// ctime returns the file's status change time (ns), 0 when unknown. Every
// write and every change of its times, owner or mode sets it to the current
// time, and no program can set it back: `cp -p`, `rsync -t` and tools that
// restore a file's modification time leave its size and mtime as they were,
// not its ctime.
func ctime(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Sec*1e9 + st.Ctim.Nsec
	}
	return 0
}
