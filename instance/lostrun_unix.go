//go:build unix

package instance

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// processAlive reports whether a process with this pid runs (signal 0
// checks without sending; EPERM: it exists, as another user's). A zombie
// does not run: a client whose agentctl was killed is reparented, and in a
// container with no init reaping orphans it may stay a zombie for good.
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	// /proc/PID/stat is "PID (COMM) STATE ...", COMM possibly holding
	// spaces and parentheses; where there is no /proc, the signal's word
	// stands.
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}
