//go:build !linux

package proxy

import (
	"os"
	"os/exec"
)

// stopWithParent does nothing here: servers are stopped on a clean exit.
func stopWithParent(*exec.Cmd) {}

// killGroup does nothing here.
func killGroup(*os.Process) {}
