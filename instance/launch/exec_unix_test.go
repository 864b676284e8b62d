//go:build unix

package launch

import (
	"bytes"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunForwardsSignals: a SIGINT or SIGTERM sent to agentctl reaches the
// client once, agentctl lives on, and the client's exit code is returned.
func TestRunForwardsSignals(t *testing.T) {
	for _, tt := range []struct {
		mode string
		sig  syscall.Signal
		code int
	}{
		{"signal", syscall.SIGINT, 130},
		{"signal", syscall.SIGTERM, 143},
		{"die", syscall.SIGTERM, 128 + int(syscall.SIGTERM)}, // the client dies of it
	} {
		t.Run(tt.mode+"/"+tt.sig.String(), func(t *testing.T) {
			p := selfPlan(t, tt.mode)
			out := newSyncBuffer("ready")
			go func() {
				select {
				case <-out.Seen():
					_ = syscall.Kill(os.Getpid(), tt.sig)
				case <-time.After(time.Minute):
				}
			}()
			res, err := p.Exec(Streams{In: strings.NewReader(""), Out: out, ErrOut: io.Discard}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			name := map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}[tt.sig]
			if res.ExitCode != tt.code || res.Signal != name {
				t.Fatalf("res %+v, want exit code %d after %s; output %q", res, tt.code, name, out.String())
			}
			if tt.mode == "signal" && strings.Count(out.String(), "got ") != 1 {
				t.Fatalf("output %q: the client did not get the signal exactly once", out.String())
			}
		})
	}
}

// TestRunInteractive: an interactive client gets the terminal's stdin, its
// output is not copied to the log, a SIGINT sent to agentctl is not passed
// on (the terminal gives the client its own Ctrl-C), and SIGTERM is.
func TestRunInteractive(t *testing.T) {
	p := selfPlan(t, "stdin")
	p.Mode = Interactive
	var out, log bytes.Buffer
	if _, err := p.Exec(Streams{In: strings.NewReader("typed"), Out: &out, ErrOut: io.Discard, InTerminal: true}, &log, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `stdin="typed"`) || log.Len() != 0 {
		t.Fatalf("stdout %q, log %q: want the typed input read and nothing logged", out.String(), log.String())
	}

	p = selfPlan(t, "signal")
	p.Mode = Interactive
	ready := newSyncBuffer("ready")
	go func() {
		select {
		case <-ready.Seen():
			_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
			time.Sleep(100 * time.Millisecond) // not a synchronisation: SIGTERM must come after, whenever
			_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
		case <-time.After(time.Minute):
		}
	}()
	res, err := p.Exec(Streams{In: strings.NewReader(""), Out: ready, ErrOut: io.Discard, InTerminal: true}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 143 || res.Signal != "SIGTERM" || !strings.Contains(ready.String(), "got terminated") {
		t.Fatalf("res %+v, output %q: want SIGINT ignored and SIGTERM passed on", res, ready.String())
	}
}
