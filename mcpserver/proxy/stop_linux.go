//go:build linux

package proxy

import (
	"os"
	"os/exec"
	"syscall"
)

// stopWithParent has the kernel kill a stdio server if agentctl dies
// without stopping it (SIGKILL, a crash), and puts the server in a process
// group of its own so that killGroup also reaches what it started (an npx
// or shell launcher's real server): no orphans either way.
func stopWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// killGroup kills what is left of a stopped server's process group.
func killGroup(p *os.Process) {
	if p != nil {
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
}
