//go:build unix

package instance

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
	"time"
)

// processAlive reports whether the process started as pid at about started
// still runs (signal 0 checks without sending; EPERM: it exists, as another
// user's). A zombie does not run: a client whose agentctl was killed is
// reparented, and in a container with no init reaping orphans it may stay a
// zombie for good. Nor does a process that started well after started: the
// pid was given to another process once the client had ended (busy CI
// machines reuse pids within minutes).
func processAlive(pid int, started time.Time) bool {
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
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return true
	}
	fields := bytes.Fields(stat[i+1:]) // from field 3, the state
	if len(fields) > 0 && string(fields[0]) == "Z" {
		return false
	}
	if len(fields) > 19 && !started.IsZero() { // field 22: its start, in clock ticks after boot
		if at, ok := procStart(fields[19]); ok && at.After(started.Add(reusedAfter)) {
			return false
		}
	}
	return true
}

// reusedAfter is how much later than a run's recorded start a process with
// the client's pid must have started to be another one: the client starts
// within milliseconds of it, and the wall clock may have been set since.
const reusedAfter = 2 * time.Second

// procStart is the time a process started, from its start in clock ticks
// after boot (/proc/PID/stat's field 22; the kernel reports 100 ticks a
// second to user space) and the boot time in /proc/stat.
func procStart(ticks []byte) (time.Time, bool) {
	t, err := strconv.ParseInt(string(ticks), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, false
	}
	_, rest, ok := bytes.Cut(stat, []byte("\nbtime "))
	if !ok {
		return time.Time{}, false
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	boot, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	const ticksPerSecond = 100
	return time.Unix(boot, 0).Add(time.Duration(t) * time.Second / ticksPerSecond), true
}
