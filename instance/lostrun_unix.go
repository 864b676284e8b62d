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
	fields := statFields(stat) // from field 3, the state
	if fields == nil {
		return true
	}
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

// clientAlive reports whether the client of run, or, for a headless run
// (whose client leads a process group of its own), any process of its
// group, still runs: what is left of a run whose agentctl was killed.
func clientAlive(run *Run) bool {
	if run.PID <= 0 {
		return false
	}
	if processAlive(run.PID, run.StartedAt) {
		return true
	}
	return run.Mode == RunHeadless && groupAlive(run.PID, run.StartedAt)
}

// groupAlive reports whether a process of process group pgid, whose
// leader started at about started, runs (zombies do not). A group whose id
// went to a new leader that started well after started is another.
func groupAlive(pgid int, started time.Time) bool {
	if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pgid) + "/stat"); err == nil && !started.IsZero() {
		if f := statFields(stat); len(f) > 19 && string(f[0]) != "Z" {
			if at, ok := procStart(f[19]); ok && at.After(started.Add(reusedAfter)) {
				return false
			}
		}
	}
	entries, err := os.ReadDir("/proc")
	if err != nil { // no /proc: the signal's word
		err := syscall.Kill(-pgid, 0)
		return err == nil || errors.Is(err, syscall.EPERM)
	}
	want := strconv.Itoa(pgid)
	for _, e := range entries {
		name := e.Name()
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		stat, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// From field 3: state, ppid, pgrp.
		if f := statFields(stat); len(f) > 2 && string(f[2]) == want && string(f[0]) != "Z" {
			return true
		}
	}
	return false
}

// statFields is /proc/PID/stat's fields from the third (the state) on;
// the second, the command, may hold spaces and parentheses.
func statFields(stat []byte) [][]byte {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil
	}
	return bytes.Fields(stat[i+1:])
}

// endClient ends what is left of run's client: SIGTERM to it (to its
// process group, for a headless run), then, if it still runs after grace,
// SIGKILL. It reports how it ended, or false if it outlived SIGKILL by
// [killWait] (another user's process, or one stuck in the kernel).
func endClient(run *Run, grace time.Duration) (how string, ended bool) {
	target := run.PID
	if run.Mode == RunHeadless {
		target = -run.PID
	}
	gone := func(within time.Duration) bool {
		for deadline := time.Now().Add(within); ; time.Sleep(20 * time.Millisecond) {
			if !clientAlive(run) {
				return true
			}
			if time.Now().After(deadline) {
				return false
			}
		}
	}
	_ = syscall.Kill(target, syscall.SIGTERM)
	if gone(grace) {
		return "SIGTERM", true
	}
	_ = syscall.Kill(target, syscall.SIGKILL)
	if gone(killWait) {
		return "SIGKILL, " + grace.String() + " after SIGTERM", true
	}
	return "", false
}

// killWait is how long a process sent SIGKILL is given to be gone.
const killWait = 5 * time.Second
