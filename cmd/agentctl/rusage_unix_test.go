//go:build unix

package main

import (
	"os"
	"syscall"
)

// maxRSSKiB is a finished process's peak resident set size, in KiB (as
// Linux reports it), or 0 where it is not known.
func maxRSSKiB(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return int64(ru.Maxrss)
	}
	return 0
}
