//go:build unix

package launch

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/agentctl/agentctl/internal/testkit"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary is also the client: with LAUNCH_TEST_CHILD set it acts
// as one (see child).
func TestMain(m *testing.M) {
	if mode := os.Getenv("LAUNCH_TEST_CHILD"); mode != "" {
		os.Exit(child(mode))
	}
	os.Exit(m.Run())
}

func child(mode string) int {
	wd, _ := os.Getwd()
	fmt.Printf("args=%q dir=%s inst=%s extra=%s\n", os.Args[1:], wd, os.Getenv(InstanceEnv), os.Getenv("LAUNCH_EXTRA"))
	fmt.Fprintln(os.Stderr, "to stderr")
	switch mode {
	case "exit7":
		return 7
	case "stdin":
		b, _ := io.ReadAll(os.Stdin)
		fmt.Printf("stdin=%q\n", b)
	case "signal":
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
		fmt.Println("ready")
		s := <-sigs
		fmt.Println("got", s)
		return 128 + int(s.(syscall.Signal))
	case "gate": // exits 0 once the file LAUNCH_GATE names exists
		for {
			if _, err := os.Stat(os.Getenv("LAUNCH_GATE")); err == nil {
				return 0
			}
			time.Sleep(10 * time.Millisecond)
		}
	case "die":
		fmt.Println("ready")
		time.Sleep(time.Minute) // dies of the forwarded SIGTERM
	}
	return 0
}

func selfPlan(t *testing.T, mode string) *Plan {
	t.Helper()
	t.Setenv("LAUNCH_TEST_CHILD", mode)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &Plan{Agent: "test", Mode: Headless, Program: exe, Args: []string{"-p", "a b"}, Dir: t.TempDir(),
		Env: []EnvVar{{InstanceEnv, "01jq"}, {"LAUNCH_EXTRA", "x"}}}
}

// syncBuffer is a buffer that tells when a line containing want is written.
type syncBuffer = testkit.Buffer

var newSyncBuffer = testkit.NewBuffer

func TestRunHeadless(t *testing.T) {
	p := selfPlan(t, "stdin")
	var out, errOut, log syncBuffer
	var pid int
	res, err := p.Exec(Streams{In: strings.NewReader("piped input"), Out: &out, ErrOut: &errOut}, &log, func(p int, _ time.Time) { pid = p })
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || pid == 0 || res.Ended.Before(res.Started) {
		t.Fatalf("result %+v, pid %d", res, pid)
	}
	want := fmt.Sprintf(`args=["-p" "a b"] dir=%s inst=01jq extra=x`, p.Dir)
	if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), `stdin="piped input"`) {
		t.Errorf("stdout %q, want %q and the piped stdin", out.String(), want)
	}
	if errOut.String() != "to stderr\n" {
		t.Errorf("stderr %q", errOut.String())
	}
	for _, w := range []string{want, "to stderr", "piped input"} {
		if !strings.Contains(log.String(), w) {
			t.Errorf("log %q lacks %q", log.String(), w)
		}
	}
}

// TestRunTerminalStdinIsNotPassed: a headless client does not get a
// terminal's stdin (reading it from a background process group would stop it).
func TestRunTerminalStdinIsNotPassed(t *testing.T) {
	p := selfPlan(t, "stdin")
	var out bytes.Buffer
	if _, err := p.Exec(Streams{In: strings.NewReader("typed"), Out: &out, ErrOut: io.Discard, InTerminal: true}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `stdin=""`) {
		t.Fatalf("stdout %q: the client read the terminal's input", out.String())
	}
}

func TestRunExitCode(t *testing.T) {
	res, err := selfPlan(t, "exit7").Exec(Streams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}, nil, nil)
	if err != nil || res.ExitCode != 7 || res.Signal != "" {
		t.Fatalf("res %+v, err %v; want exit code 7", res, err)
	}
}

func TestRunProgramNotFound(t *testing.T) {
	p := &Plan{Agent: "nope", Program: "agentctl-no-such-client", Dir: t.TempDir()}
	_, err := p.Exec(Streams{Out: io.Discard, ErrOut: io.Discard}, nil, nil)
	var nf *ProgramNotFoundError
	if !errors.As(err, &nf) || !strings.Contains(err.Error(), `"agentctl-no-such-client" was not found in PATH`) {
		t.Fatalf("err %v", err)
	}
}

// TestRunClientLeavesAChildBehind: a client that exits while a process it
// started still holds its output ends the run at once (within the output
// grace), with the client's exit code, not when that process ends.
func TestRunClientLeavesAChildBehind(t *testing.T) {
	p := &Plan{Agent: "test", Mode: Headless, Program: "sh", Args: []string{"-c", "sleep 120 & echo client-done; exit 4"}, Dir: t.TempDir()}
	var out bytes.Buffer
	start := time.Now()
	res, err := p.Exec(Streams{In: strings.NewReader(""), Out: &out, ErrOut: io.Discard}, &bytes.Buffer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 4 || !strings.Contains(out.String(), "client-done") {
		t.Fatalf("res %+v, output %q", res, out.String())
	}
	if took := time.Since(start); took > time.Minute {
		t.Fatalf("the run waited %s for the client's leftover process", took)
	}
}
