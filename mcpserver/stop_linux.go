//go:build linux

package mcpserver

import (
	"os/exec"
	"syscall"
)

// stopWithParent has the kernel kill a stdio server if agentctl dies
// without stopping it (SIGKILL, a crash): no orphans either way.
func stopWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
