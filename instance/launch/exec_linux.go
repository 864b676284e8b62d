//go:build linux

package launch

import (
	"os/exec"
	"syscall"
)

// endWithUs has the kernel send the client SIGTERM if agentctl dies first
// (killed by SIGKILL, the OOM killer, a CI runner's hard stop), so that no
// client runs on unwatched, its end unrecorded. (It is tied to the thread
// that starts the client; Go does not end its threads while the program
// runs, but for one locked to a goroutine that returns, which this is not.)
func endWithUs(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
}
