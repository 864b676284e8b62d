package main

import (
	"os"
	"syscall"
)

// ctimeNS is a file's status change time in nanoseconds since the epoch.
func ctimeNS(fi os.FileInfo) (int64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Ctim.Sec*1e9 + st.Ctim.Nsec, true
}
