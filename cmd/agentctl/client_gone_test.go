package main

import (
	"bufio"
	"context"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A client that goes away abruptly while a question waits (its pipes
// closed, then SIGTERM, as a client's shutdown does; or SIGHUP, a closed
// terminal or ssh session) leaves the question cancelled and an unanswered
// event, as a clean stop does, so no answer is given into the void, the
// next question is not ambiguous with it, and instance wait exits 8.
// Before, the endpoint died of SIGPIPE writing its last answers to the
// closed output, or of SIGHUP outright, before it could close the
// question: it stayed open for ever.
func TestClientGoneAbruptlyClosesItsQuestion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		why  string // what the unanswered event says
		gone func(t *testing.T, cmd *exec.Cmd, stdin io.Closer, stdout io.Closer)
	}{
		{"pipes closed then SIGTERM", "before anyone answered", func(t *testing.T, cmd *exec.Cmd, stdin, stdout io.Closer) {
			stdin.Close()
			stdout.Close()
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}},
		{"SIGHUP", "the endpoint stopped (interrupted by hangup) before anyone answered", func(t *testing.T, cmd *exec.Cmd, _, _ io.Closer) {
			if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
			defer cancel()
			e := newRCEnv(t)
			rec := e.create(ctx, "--agent", "claude-code", "--question-timeout", "10m")

			p := e.startServePipes(rec.ID)
			cmd, stdin, stdout, stderr := p.cmd, p.stdin, p.stdout, p.stderr
			exited := make(chan error, 1)
			for _, line := range []string{
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"gone","version":"1"}}}`,
				`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
				`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask_user_question_agentctl","arguments":{"question":"Which database?"}}}`,
			} {
				if _, err := io.WriteString(stdin, line+"\n"); err != nil {
					t.Fatal(err)
				}
			}
			r := bufio.NewReader(stdout)
			if first, err := r.ReadString('\n'); err != nil || !strings.Contains(first, `"id":1`) {
				t.Fatalf("initialize: %q %v\nstderr:\n%s", first, err, stderr.String())
			}
			for len(e.questions(ctx, rec.ID, false)) == 0 {
				select {
				case <-ctx.Done():
					t.Fatalf("the question never opened\nstderr:\n%s", stderr.String())
				case <-time.After(50 * time.Millisecond):
				}
			}

			tc.gone(t, cmd, stdin, stdout)
			go func() { exited <- cmd.Wait() }()
			select {
			case err := <-exited:
				if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == -1 {
					t.Errorf("mcp serve was killed by %v, want a clean exit\nstderr:\n%s", ee.ProcessState, stderr.String())
				}
			case <-ctx.Done():
				t.Fatalf("mcp serve did not exit\nstderr:\n%s", stderr.String())
			}

			qs := e.questions(ctx, rec.ID, true)
			if len(qs) != 1 || qs[0].Status != "cancelled" {
				t.Fatalf("the question after the client went away: %+v, want it cancelled\nstderr:\n%s", qs, stderr.String())
			}
			var why string
			for _, ev := range e.events(ctx, rec.ID) {
				if ev.Status == "unanswered" {
					why = ev.Message
				}
			}
			if !strings.Contains(why, tc.why) {
				t.Errorf("unanswered event %q, want it to say %q: %v", why, tc.why, e.events(ctx, rec.ID))
			}
			if res := e.run(ctx, "instance", "answer", rec.ID, qs[0].ID, "yes"); res.code == 0 {
				t.Errorf("an answer to the closed question was taken:\n%s", res)
			}
		})
	}
}
