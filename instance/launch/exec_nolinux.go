//go:build !linux

package launch

import "os/exec"

// endWithUs does nothing where the kernel has no parent-death signal: a
// client whose agentctl is killed runs on (see instance.Store.EndLostRun).
func endWithUs(*exec.Cmd) {}
