//go:build !unix

package launch

import (
	"os"
	"os/exec"
)

func setOwnGroup(*exec.Cmd) {}

func forward(cmd *exec.Cmd, sig os.Signal, _ bool) { _ = cmd.Process.Signal(sig) }

func exitCodeOf(ps *os.ProcessState) int { return ps.ExitCode() }
