//go:build unix

package launch

import (
	"os"
	"os/exec"
	"syscall"
)

// setOwnGroup puts the client in a process group of its own.
func setOwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// forward sends sig to the client: to its whole process group when it has
// one of its own (what a terminal's Ctrl-C would reach), else to it alone.
func forward(cmd *exec.Cmd, sig os.Signal, group bool) {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return
	}
	if group {
		_ = syscall.Kill(-cmd.Process.Pid, s)
		return
	}
	_ = cmd.Process.Signal(s)
}

// exitCodeOf is the shell's exit status of a process: its code, or 128+N
// when signal N ended it.
func exitCodeOf(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
