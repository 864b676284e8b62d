package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
)

// Exit codes. They are part of the CLI contract and documented in
// `agentctl help exit-codes`.
const (
	ExitOK          = 0   // success
	ExitError       = 1   // any other error
	ExitUsage       = 2   // bad command line: unknown flag, missing argument
	ExitNotFound    = 3   // unknown agent, instance or question; a missing knowledge-base folder (kb)
	ExitInvalid     = 4   // invalid configuration or input, or a conflict
	ExitTimeout     = 5   // a wait ran out of time
	ExitFailed      = 6   // the instance reported status failed (instance wait)
	ExitProblems    = 7   // tools lint found problems in the tool names
	ExitUnanswered  = 8   // instance wait: done, but a question of the run got no answer
	ExitUnavailable = 9   // the store could not be reached (PostgreSQL down): try again later
	ExitSignal      = 130 // interrupted (SIGINT); 143 for SIGTERM
)

const exitCodesHelp = `agentctl exits with one of these codes, so scripts and CI can tell outcomes apart:

  0  ok         the command did what was asked
  1  error      anything not listed below (I/O, database, a bug)
  2  usage      bad command line: unknown command or flag, missing or extra argument,
                invalid -o format
  3  not found  unknown agent id, instance (id, id prefix or label), question or
                run ('instance wait --run ID'), an instance deleted while 'instance wait', 'logs --follow' or
                'questions --wait' waited on it, a folder 'kb index' or 'kb
                search' was given that is not there
  4  invalid    invalid configuration or input: a broken agent definition or config
                file, a bad --server-name, a label already in use, an ambiguous
                id prefix, deleting an instance an endpoint is serving or 'instance
                run' is running (--force)
  5  timeout    'instance wait' ran out of time before the status was reached,
                or 'instance questions --wait --timeout D' saw no open question
  6  failed     'instance wait' saw the instance report status "failed"
  7  problems   'tools lint' found a problem in the tool names a model would see
  8  unanswered 'instance wait' (for done, its default) saw the run end done,
                but a question the agent asked in it got no answer (it expired,
                or the client stopped waiting): nobody was asked, or nobody
                answered in time; --allow-unanswered accepts that as done
  9  unavailable the store could not be reached, or its connection was lost (a
                PostgreSQL server down or out of reach), or another agentctl held
                the SQLite state database locked longer than agentctl waits (30 s);
                a change is made whole or not at all, so check with a read and try
                again later
  126 'instance run': the client's program was found but could not be started
      (not executable, a noexec file system, a script whose interpreter is missing)
  127 'instance run': the client's program is not installed
  130 interrupted by SIGINT (143 by SIGTERM, 129 by SIGHUP); 'mcp serve' and
      'serve' exit 0 on any of them; version, agents list/show and instance
      list/show, which read and print, are ended by the signal itself (a shell
      reports the same code; a program that waits for them sees the signal)

'instance run' exits with the client's own exit code once the client has started
(128+N when signal N ended it).

The message on stderr says what was wrong and how to fix it.`

// usageError is a bad command line (exit 2). Unless hinted (its message
// says where to look), the usage hint follows it.
type usageError struct {
	msg    string
	hinted bool
}

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitError carries an explicit exit code with its message.
type exitError struct {
	code int
	err  error
	// client marks the exit code of a client program that `instance run`
	// ran: it is returned as it is, even after a signal.
	client bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// exitCode maps an error to its exit code: the one function that decides.
// A command that ends with an error after ctx was cancelled by a signal was
// interrupted, whatever the error (a query cut short says "interrupted",
// not context.Canceled): 128+N, as shells do.
func exitCode(ctx context.Context, err error) int {
	var sig signalError
	var client *exitError
	if errors.As(err, &client) && client.client {
		return client.code
	}
	if err != nil && errors.As(context.Cause(ctx), &sig) {
		return 128 + int(sig.sig)
	}
	var ue *usageError
	var ee *exitError
	var de *agents.DecodeError
	var fp *agents.FileProblem
	var ce *configError
	var me *mcpserver.MountError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		return ExitUsage
	case errors.Is(err, context.Canceled):
		return ExitSignal
	case errors.Is(err, instance.ErrUnavailable):
		return ExitUnavailable
	case errors.Is(err, agents.ErrUnknownAgent), errors.Is(err, instance.ErrNotFound):
		return ExitNotFound
	case errors.As(err, &de), errors.As(err, &fp), errors.As(err, &ce), errors.As(err, &me),
		errors.Is(err, instance.ErrInvalid), errors.Is(err, instance.ErrConflict):
		return ExitInvalid
	}
	return ExitError
}
