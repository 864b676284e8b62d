//go:build unix

package testkit

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// Alive reports whether process pid exists and is not a zombie waiting to
// be reaped (which counts as gone).
func Alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	if runtime.GOOS != "linux" {
		return true // no /proc/PID/stat to tell a zombie by
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(b), ") Z ")
}
