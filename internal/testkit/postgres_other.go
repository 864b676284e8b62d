//go:build !linux

package testkit

import "syscall"

// postgresAttr runs a PostgreSQL program as the test process's user (as is
// nil but on Linux), and has no way to stop the server when the test
// process dies.
func postgresAttr(as *osUser, server bool) *syscall.SysProcAttr { return nil }
