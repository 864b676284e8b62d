package proxy

import "os/exec"

// ownProcessGroup reports whether cmd starts in a process group of its own
// that the kernel ends when agentctl dies.
func ownProcessGroup(cmd *exec.Cmd) bool {
	return cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid && cmd.SysProcAttr.Pdeathsig != 0
}
