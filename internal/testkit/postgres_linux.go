package testkit

import "syscall"

// postgresAttr runs a PostgreSQL program as as, when not nil. The server
// (postmaster) gets SIGQUIT, its immediate shutdown, when the test process
// dies, so that no killed test run leaves one running: it is the process's
// child, not pg_ctl's daemon, for this. (Linux sends the signal when the
// thread that started the child ends, which a Go thread does only when a
// goroutine locked to it ends.)
func postgresAttr(as *osUser, server bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{}
	if as != nil {
		// No Groups: the program keeps none of root's.
		a.Credential = &syscall.Credential{Uid: as.uid, Gid: as.gid}
	}
	if server {
		a.Pdeathsig = syscall.SIGQUIT
	}
	return a
}
