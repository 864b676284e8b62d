package launch

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Streams are the standard streams of the `instance run` process.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// InTerminal says that In is a terminal: a headless client then gets
	// no standard input (it would stop, reading from a terminal it is not
	// in the foreground of), an interactive one gets the terminal itself.
	InTerminal bool
}

// Result is how a run ended.
type Result struct {
	// ExitCode is the client's exit code, 128+N when signal N ended it.
	ExitCode int
	// Signal is the first signal agentctl forwarded to the client, if any.
	Signal  string
	Started time.Time
	Ended   time.Time
}

// ProgramNotFoundError is a client program that is not installed.
type ProgramNotFoundError struct {
	Program string
	Agent   string
	Err     error
}

func (e *ProgramNotFoundError) Error() string {
	return fmt.Sprintf("%s: the %s client's program %q was not found in PATH (%v); install it, or set run.program in a user definition of %q",
		e.Agent, e.Agent, e.Program, e.Err, e.Agent)
}

func (e *ProgramNotFoundError) Unwrap() error { return e.Err }

// StartError is a client program that was found but could not be started:
// not executable, on a file system mounted noexec, or a script whose
// interpreter (its #! line) is not installed.
type StartError struct {
	Program string
	Path    string // the file found in PATH
	Err     error
}

func (e *StartError) Error() string {
	why := e.Err.Error()
	var pe *fs.PathError
	if errors.As(e.Err, &pe) {
		why = pe.Err.Error()
	}
	switch {
	case errors.Is(e.Err, fs.ErrNotExist):
		// The file is there: what is missing is what runs it.
		if interp := shebang(e.Path); interp != "" {
			return fmt.Sprintf("start %s: %s is a script for %s, which is not installed; install it, or fix the script's #! line", e.Program, e.Path, interp)
		}
		return fmt.Sprintf("start %s: %s cannot be run here (%s): a program built for another system, or whose loader or interpreter is not installed; reinstall it", e.Program, e.Path, why)
	case errors.Is(e.Err, fs.ErrPermission):
		return fmt.Sprintf("start %s: %s may not be run (%s): make it executable (chmod +x), or install it where the file system allows programs to run (not mounted noexec)", e.Program, e.Path, why)
	}
	return fmt.Sprintf("start %s: %s: %v", e.Program, e.Path, e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }

// shebang is the interpreter a script's #! line names, or "".
func shebang(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, _ := io.ReadFull(f, buf)
	line, ok := strings.CutPrefix(string(buf[:n]), "#!")
	if !ok {
		return ""
	}
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	return strings.TrimSpace(line)
}

// LookPath finds the plan's program in PATH, or says that it is not
// installed with a [*ProgramNotFoundError]. [Plan.Exec] starts what it
// found.
func (p *Plan) LookPath() (string, error) {
	if p.path != "" {
		return p.path, nil
	}
	path, err := exec.LookPath(p.Program)
	if err != nil {
		return "", &ProgramNotFoundError{Program: p.Program, Agent: p.Agent, Err: err}
	}
	p.path = path
	return path, nil
}

// CheckDir says, with what to do, when the directory the client is to run
// in (the instance's workspace) is not a directory any more: starting it
// there would fail with the program's name in the error, as if the program
// were missing.
func (p *Plan) CheckDir() error {
	fi, err := os.Stat(p.Dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the instance's workspace %s does not exist any more; create it again (mkdir -p %s), or create an instance for another workspace", p.Dir, ShellQuote(p.Dir))
	case err != nil:
		return fmt.Errorf("the instance's workspace: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("the instance's workspace %s is not a directory any more; move the file away, or create an instance for another workspace", p.Dir)
	}
	return nil
}

// outputGrace is how long a headless run keeps reading the output of what
// the client left running after it exited.
const outputGrace = 2 * time.Second

// forwarded are the signals `instance run` passes on to the client rather
// than dying of them.
var forwarded = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// SignalsToWatch is sigs less SIGHUP when agentctl was started with it
// ignored (nohup): watching a signal would take it over, and a run
// started with nohup must outlive the session that started it, as any
// program does. The client then inherits it ignored.
func SignalsToWatch(sigs ...os.Signal) []os.Signal {
	if !signal.Ignored(syscall.SIGHUP) {
		return sigs
	}
	return slices.DeleteFunc(slices.Clone(sigs), func(s os.Signal) bool { return s == syscall.SIGHUP })
}

// Exec starts the client, calls started with its process id once it runs,
// and waits for it to end. The client inherits the user's environment with
// the plan's variables added, runs in the plan's directory, and its output
// is copied to log when log is not nil (headless runs: an interactive
// client needs the terminal itself, so its output is not copied).
//
// Signals are forwarded: a headless client runs in a process group of its
// own, and SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to agentctl (or typed
// at its terminal) go to that group once. An interactive client shares the
// terminal's foreground group, so it gets a typed Ctrl-C from the terminal
// itself; the others are forwarded. agentctl does not die of them: it
// waits for the client and returns its exit code.
func (p *Plan) Exec(s Streams, log io.Writer, started func(pid int, at time.Time)) (*Result, error) {
	path, err := p.LookPath()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, p.Args...)
	cmd.Args[0] = p.Program
	cmd.Dir = p.Dir
	cmd.Env = os.Environ()
	for _, e := range p.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	interactive := p.Mode == Interactive
	switch {
	case interactive:
		cmd.Stdin, cmd.Stdout, cmd.Stderr = s.In, s.Out, s.ErrOut
	default:
		if !s.InTerminal {
			cmd.Stdin = s.In
		}
		cmd.Stdout, cmd.Stderr = s.Out, s.ErrOut
		if log != nil {
			l := &lockedWriter{w: log}
			cmd.Stdout, cmd.Stderr = io.MultiWriter(s.Out, l), io.MultiWriter(s.ErrOut, l)
		}
		setOwnGroup(cmd)
		// A client that leaves a process behind holding its output (a
		// server it started, a watcher) must not keep the run going: once
		// the client has exited, its output is read for at most
		// outputGrace more.
		cmd.WaitDelay = outputGrace
	}
	endWithUs(cmd)

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, SignalsToWatch(forwarded...)...)
	defer signal.Stop(sigs)

	res := &Result{Started: time.Now()}
	if err := cmd.Start(); err != nil {
		return nil, &StartError{Program: p.Program, Path: path, Err: err}
	}
	if started != nil {
		started(cmd.Process.Pid, res.Started)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case sig := <-sigs:
			if interactive && sig == os.Interrupt {
				continue // the terminal gave the client its own Ctrl-C
			}
			if res.Signal == "" {
				res.Signal = signalName(sig)
			}
			forward(cmd, sig, !interactive)
		case err := <-done:
			res.Ended = time.Now()
			var ee *exec.ExitError
			switch {
			case err == nil:
				res.ExitCode = 0
			case errors.Is(err, exec.ErrWaitDelay):
				// The client exited; what it left behind still held its
				// output. End that too: the run is over.
				res.ExitCode = exitCodeOf(cmd.ProcessState)
				forward(cmd, syscall.SIGTERM, true)
			case errors.As(err, &ee):
				res.ExitCode = exitCodeOf(ee.ProcessState)
			default:
				return nil, fmt.Errorf("wait for %s: %w", p.Program, err)
			}
			return res, nil
		}
	}
}

func signalName(sig os.Signal) string {
	if s, ok := sig.(syscall.Signal); ok {
		switch s {
		case syscall.SIGINT:
			return "SIGINT"
		case syscall.SIGTERM:
			return "SIGTERM"
		case syscall.SIGHUP:
			return "SIGHUP"
		case syscall.SIGQUIT:
			return "SIGQUIT"
		}
	}
	return sig.String()
}

// lockedWriter serialises the writes of the client's two output copies
// into one log.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
