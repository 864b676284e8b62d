package main

// `instance run` driven end to end: the real agentctl starts the fake client
// (testdata/fakeclient) under a catalog client's program name; the fake
// reads its MCP configuration the way that client does, starts the
// endpoint from it, lists the tools and calls one.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/testkit"
)

// fakeReport is the JSON report of the fake client (FAKECLIENT_REPORT).
type fakeReport struct {
	Client    string            `json:"client"`
	Args      []string          `json:"args"`
	Headless  bool              `json:"headless"`
	Prompt    string            `json:"prompt"`
	Cwd       string            `json:"cwd"`
	Env       map[string]string `json:"env"`
	CodexHome string            `json:"codex_home"`
	Configs   []string          `json:"configs"`
	Servers   []struct {
		Name    string   `json:"name"`
		Command string   `json:"command"`
		Timeout *float64 `json:"timeout"`
		Trust   bool     `json:"trust"`
		Tools   []string `json:"tools"`
		Called  string   `json:"called"`
		Result  string   `json:"result"`
		Error   string   `json:"error"`
	} `json:"servers"`
}

// fakeClientOnPath installs the fake client as program in a directory of
// its own and returns the PATH that finds it first.
func fakeClientOnPath(t *testing.T, programs ...string) string {
	t.Helper()
	fake := binary(t, "fakeclient")
	dir := t.TempDir()
	for _, p := range programs {
		if err := os.Symlink(fake, filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	return dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// runWithFake runs `agentctl args...` with the fake client first on PATH
// and extra environment variables, and returns the outcome and the report.
func (e *rcEnv) runWithFake(ctx context.Context, path string, env []string, args ...string) (rcResult, *fakeReport) {
	e.t.Helper()
	report := filepath.Join(e.t.TempDir(), "report.json")
	res := e.runEnv(ctx, append([]string{"PATH=" + path, "FAKECLIENT_REPORT=" + report}, env...), args...)
	data, err := os.ReadFile(report)
	if err != nil {
		return res, nil
	}
	var r fakeReport
	if err := json.Unmarshal(data, &r); err != nil {
		e.t.Fatalf("fake client report: %v\n%s", err, data)
	}
	return res, &r
}

// TestInstanceRunRecipes: for each client whose headless form the issue
// gives, `instance run --prompt` starts it so that it finds the instance's
// endpoint where that client looks, lists the built-in tools and calls one,
// headless; the status follows the run.
func TestInstanceRunRecipes(t *testing.T) {
	t.Parallel()
	clients := []struct {
		agent, program string
		// timeout is the tool-call timeout the client is told, as its
		// configuration writes it, or 0 where it has none to tell.
		timeout float64
		// connect: the client reads servers only from its own file in the
		// workspace, so `instance connect` goes first.
		connect bool
	}{
		{"auggie", "auggie", 0, false},
		{"claude-code", "claude", 0, false},
		{"codex", "codex", 660, false}, // tool_timeout_sec: the 10 min question timeout and a minute
		// Gemini skips a settings file not owned by root all the way up,
		// as a temporary directory is: the entry goes into the workspace.
		{"gemini", "gemini", 660_000, true}, // timeout, in milliseconds
		{"qwen-code", "qwen", 660_000, false},
		{"opencode", "opencode", 660_000, false}, // timeout, in milliseconds
		{"kilo", "kilo", 660_000, false},
		{"copilot-cli", "copilot", 0, false},
		{"continue", "cn", 0, false},
		{"droid", "droid", 0, true},
		{"grok", "grok", 0, true},
	}
	var programs []string
	for _, c := range clients {
		programs = append(programs, c.program)
	}
	path := fakeClientOnPath(t, programs...)
	for _, c := range clients {
		t.Run(c.agent, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
			defer cancel()
			e := newRCEnv(t)
			rec := e.create(ctx, "--agent", c.agent)
			if c.connect {
				e.mustRun(ctx, "instance", "connect", rec.ID)
			}
			res, rep := e.runWithFake(ctx, path, nil, "instance", "run", rec.ID, "--prompt", "say hi")
			if res.code != 0 || rep == nil {
				t.Fatalf("want exit 0 and a report\n%s", res)
			}
			if !rep.Headless || rep.Prompt != "say hi" || rep.Client != c.program {
				t.Errorf("the fake ran as %q, headless %v, prompt %q", rep.Client, rep.Headless, rep.Prompt)
			}
			if rep.Env["AGENTCTL_INSTANCE"] != rec.ID {
				t.Errorf("AGENTCTL_INSTANCE = %q, want %s", rep.Env["AGENTCTL_INSTANCE"], rec.ID)
			}
			if rep.Cwd != e.work {
				t.Errorf("the client ran in %s, want the workspace %s", rep.Cwd, e.work)
			}
			if len(rep.Servers) != 1 || rep.Servers[0].Name != rec.ServerName {
				t.Fatalf("servers %+v, want the one endpoint %q\n%s", rep.Servers, rec.ServerName, res)
			}
			s := rep.Servers[0]
			if s.Error != "" || !strings.HasPrefix(s.Called, "get_instance") || !strings.Contains(s.Result, rec.ID) {
				t.Fatalf("the endpoint's get_instance call: called %q, error %q, result %q\n%s", s.Called, s.Error, s.Result, res)
			}
			if !slices.ContainsFunc(s.Tools, func(n string) bool { return strings.HasPrefix(n, "ask_user_question") }) {
				t.Errorf("tools %q lack ask_user_question", s.Tools)
			}
			if c.timeout > 0 && (s.Timeout == nil || *s.Timeout < c.timeout) {
				got := "none"
				if s.Timeout != nil {
					got = fmt.Sprint(*s.Timeout)
				}
				t.Errorf("tool-call timeout %s, want at least %v", got, c.timeout)
			}
			if !strings.Contains(res.stdout, "fakeclient: "+c.program+" server="+rec.ServerName) {
				t.Errorf("the client's output is not on stdout:\n%s", res)
			}
			evs := e.events(ctx, rec.ID)
			if len(evs) != 2 || evs[0].Status != "running" || evs[1].Status != "done" || evs[1].Tool != "agentctl instance run" {
				t.Fatalf("events %v, want running then done", evs)
			}
			log, err := os.ReadFile(filepath.Join(rec.Dir, "run.log"))
			if err != nil || !strings.Contains(string(log), "fakeclient: "+c.program+" server=") {
				t.Errorf("run.log (%v) lacks the client's output:\n%s", err, log)
			}
		})
	}
}

// TestInstanceRunCodexKeepsCodexHome: Codex's run uses -c overrides, so the
// user's CODEX_HOME (and so their login and their own servers) stays in use.
func TestInstanceRunCodexKeepsCodexHome(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	home := filepath.Join(e.root, "codex-home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "model = \"o3\"\n[mcp_servers.mine]\ncommand = " + strconvQuote(serverBin(t)) + "\nargs = [\"-tool-names\", \"get_instance_mine\"]\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := e.create(ctx, "--agent", "codex", "--question-timeout", "30m")
	res, rep := e.runWithFake(ctx, fakeClientOnPath(t, "codex"), []string{"CODEX_HOME=" + home}, "instance", "run", rec.ID, "--prompt", "hi")
	if res.code != 0 || rep == nil {
		t.Fatalf("want exit 0 and a report\n%s", res)
	}
	if rep.CodexHome != home {
		t.Fatalf("codex used CODEX_HOME %q, want the user's %q", rep.CodexHome, home)
	}
	names := map[string]float64{}
	for _, s := range rep.Servers {
		if s.Error != "" {
			t.Errorf("server %s: %s", s.Name, s.Error)
		}
		if s.Timeout != nil {
			names[s.Name] = *s.Timeout
		}
	}
	if len(rep.Servers) != 2 {
		t.Fatalf("servers %+v, want the user's and the instance's", rep.Servers)
	}
	if names["agentctl"] < 31*60 {
		t.Fatalf("agentctl's tool_timeout_sec %v does not cover the 30 min question timeout", names["agentctl"])
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestInstanceRunStatusFromModel: when the model reports a final status
// itself, the run does not overwrite it with the exit code's.
func TestInstanceRunStatusFromModel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	rec := e.create(ctx, "--agent", "opencode")
	env := []string{"FAKECLIENT_CALL=report_progress_agentctl", `FAKECLIENT_ARGS={"status":"failed","message":"the model gave up"}`}
	res, _ := e.runWithFake(ctx, fakeClientOnPath(t, "opencode"), env, "instance", "run", rec.ID, "--prompt", "hi")
	if res.code != 0 {
		t.Fatalf("want exit 0\n%s", res)
	}
	evs := e.events(ctx, rec.ID)
	last := evs[len(evs)-1]
	if last.Status != "failed" || last.Message != "the model gave up" {
		t.Fatalf("events %v: the run replaced the model's final status", evs)
	}
	// A failing exit without a report of the model's is "failed", with the code.
	res, _ = e.runWithFake(ctx, fakeClientOnPath(t, "opencode"), []string{"FAKECLIENT_EXIT=9"}, "instance", "run", rec.ID, "--prompt", "hi")
	if res.code != 9 {
		t.Fatalf("want the client's exit code 9\n%s", res)
	}
	evs = e.events(ctx, rec.ID)
	if last := evs[len(evs)-1]; last.Status != "failed" || !strings.Contains(last.Message, "exited with code 9") {
		t.Fatalf("last event %v", last)
	}
}

// startWaitingRun starts `instance run ID` of a fake client that waits
// for a signal, and returns once the client says it waits: the run, the
// rest of its stdout, and its stderr as it comes.
func startWaitingRun(ctx context.Context, t *testing.T, e *rcEnv, path, id string) (*exec.Cmd, io.Reader, *lockedBuffer) {
	t.Helper()
	return startWaitingRunEnv(ctx, t, e, path, id, "FAKECLIENT_WAIT=signal")
}

// startWaitingRunEnv is [startWaitingRun] with the fake client's
// environment variables env (one FAKECLIENT_WAIT among them).
func startWaitingRunEnv(ctx context.Context, t *testing.T, e *rcEnv, path, id string, env ...string) (*exec.Cmd, io.Reader, *lockedBuffer) {
	t.Helper()
	cmd := exec.CommandContext(ctx, e.bin, "instance", "run", id, "--prompt", "wait")
	cmd.Env = append(append(e.cliEnv(), "PATH="+path), env...)
	cmd.Dir = e.work
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errb := &lockedBuffer{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	var out []string
	for lines.Scan() {
		out = append(out, lines.Text())
		if lines.Text() == "fakeclient: waiting" {
			return cmd, stdout, errb
		}
	}
	t.Fatalf("the client never waited; output %q, stderr %s", out, errb.String())
	return nil, nil, nil
}

// waitRunStart polls `instance show` until the run of instance id under
// way has recorded its start (recorded as the client starts, so possibly
// after the client's first output), and returns the client's pid; it fails
// the test if the run's end is recorded already, or on ctx's end, with the
// run's stderr.
func waitRunStart(ctx context.Context, t *testing.T, e *rcEnv, id string, stderr *lockedBuffer) int {
	t.Helper()
	for {
		var shown struct {
			LastRun *struct {
				PID     int     `json:"pid"`
				EndedAt *string `json:"ended_at"`
			} `json:"last_run"`
		}
		out := e.mustRun(ctx, "instance", "show", id, "-o", "json")
		if err := json.Unmarshal([]byte(out), &shown); err != nil {
			t.Fatalf("instance show -o json: %v\n%s", err, out)
		}
		if r := shown.LastRun; r != nil && r.PID > 0 {
			if r.EndedAt != nil {
				t.Fatalf("the run (client pid %d) has ended already, at %s; stderr %s", r.PID, *r.EndedAt, stderr.String())
			}
			return r.PID
		}
		if ctx.Err() != nil {
			t.Fatalf("the run's start was never recorded; stderr %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestInstanceRunSignal: SIGINT sent to `instance run` reaches the client,
// which exits 130; run exits 130 too, the instance is "failed" (interrupted),
// a second run is refused while the first is under way, and `instance logs
// --follow` ends when the run does.
func TestInstanceRunSignal(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	rec := e.create(ctx, "--agent", "claude-code")
	path := fakeClientOnPath(t, "claude")
	cmd, stdout, errb := startWaitingRun(ctx, t, e, path, rec.ID)

	second, _ := e.runWithFake(ctx, path, nil, "instance", "run", rec.ID, "--prompt", "again")
	if second.code != 4 || !strings.Contains(second.stderr, "is already being run") {
		t.Errorf("a second run while the first runs: want exit 4 saying so\n%s", second)
	}
	follow := exec.CommandContext(ctx, e.bin, "instance", "logs", rec.ID, "--follow")
	follow.Env = e.cliEnv()
	var followOut lockedBuffer
	follow.Stdout = &followOut
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	// logs --follow prints the log only after it has seen the run under
	// way: once it has printed, it follows this run.
	for !strings.Contains(followOut.String(), "fakeclient: waiting") {
		if ctx.Err() != nil {
			t.Fatalf("logs --follow printed %q", followOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(stdout)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("run ended with %v, want exit 130; stderr %s", err, errb.String())
	}
	if !strings.Contains(string(rest), "fakeclient: got SIGINT") {
		t.Fatalf("the client did not get SIGINT: %q", rest)
	}
	evs := e.events(ctx, rec.ID)
	if last := evs[len(evs)-1]; last.Status != "failed" || !strings.Contains(last.Message, "interrupted (SIGINT)") {
		t.Fatalf("last event %v, want failed and interrupted", last)
	}
	done := make(chan error, 1)
	go func() { done <- follow.Wait() }()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(followOut.String(), "fakeclient: got SIGINT") {
			t.Fatalf("logs --follow: %v, output %q", err, followOut.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("instance logs --follow did not end with the run")
	}
}

// TestInstanceRunUnderNohup: a run started with SIGHUP ignored (nohup, so
// that it outlives the ssh session that started it) lives through a SIGHUP,
// and so does its client; other signals still reach the client.
func TestInstanceRunUnderNohup(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	rec := e.create(ctx, "--agent", "claude-code")
	path := fakeClientOnPath(t, "claude")
	// What nohup does: start it with SIGHUP ignored.
	cmd := exec.CommandContext(ctx, "sh", "-c", `trap "" HUP; exec "$0" instance run "$1" --prompt wait`, e.bin, rec.ID)
	cmd.Env = append(append(e.cliEnv(), "PATH="+path+string(os.PathListSeparator)+os.Getenv("PATH")), "FAKECLIENT_WAIT=signal")
	cmd.Dir = e.work
	out := &lockedBuffer{}
	errb := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(out.String(), "fakeclient: waiting") {
		if ctx.Err() != nil {
			t.Fatalf("the client never waited; output %q, stderr %s", out.String(), errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // a SIGHUP taken over would have ended it by now
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(out.String(), "fakeclient: got SIGINT") || strings.Contains(out.String(), "SIGHUP") {
		t.Fatalf("run ended with %v, want exit 130 from the later SIGINT alone; output %q, stderr %s", err, out.String(), errb.String())
	}
}

// TestInstanceRunKilled: when `instance run` is killed (SIGKILL: it can
// record nothing), its client is sent SIGTERM by the kernel, and `instance
// wait` then ends on "failed" (exit 6) saying what happened, rather than
// waiting on the "running" the killed run left.
func TestInstanceRunKilled(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the client is ended with its agentctl by Linux's parent-death signal")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	rec := e.create(ctx, "--agent", "claude-code")
	path := fakeClientOnPath(t, "claude")
	cmd, stdout, errb := startWaitingRun(ctx, t, e, path, rec.ID)
	pid := waitRunStart(ctx, t, e, rec.ID, errb)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, stdout) // the client's output, until it ends
	_ = cmd.Wait()
	for testkit.Alive(pid) {
		if ctx.Err() != nil {
			t.Fatalf("the client (pid %d) still runs after its agentctl was killed", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	res := e.run(ctx, "instance", "wait", rec.ID, "--status", "done", "--timeout", "2m")
	if res.code != 6 || !strings.Contains(res.stderr, "ended without agentctl recording how") {
		t.Fatalf("wait after a killed run: want exit 6 saying the run ended unrecorded\n%s", res)
	}
	evs := e.events(ctx, rec.ID)
	if last := evs[len(evs)-1]; last.Status != "failed" || last.Tool != "agentctl instance run" {
		t.Errorf("last event %+v, want the run's failed", last)
	}
}

// TestInstanceRunWorkspaceGone: a run whose workspace was removed says so
// (not that the program is missing) and starts nothing, not even the log;
// --dry-run warns and prints the plan. -o json is refused without
// --dry-run, which it is the output of.
func TestInstanceRunWorkspaceGone(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	rec := e.create(ctx, "--agent", "claude-code", "--workspace", ws)
	if err := os.Remove(ws); err != nil {
		t.Fatal(err)
	}
	path := fakeClientOnPath(t, "claude")
	res, _ := e.runWithFake(ctx, path, nil, "instance", "run", rec.ID, "--prompt", "hi")
	if res.code != 1 || !strings.Contains(res.stderr, "workspace "+ws+" does not exist any more") || strings.Contains(res.stderr, "fork/exec") {
		t.Errorf("run in a removed workspace: want exit 1 saying the workspace is gone\n%s", res)
	}
	if _, err := os.Stat(filepath.Join(rec.Dir, "run.log")); err == nil {
		t.Errorf("a run that never started wrote run.log")
	}
	res, _ = e.runWithFake(ctx, path, nil, "instance", "run", rec.ID, "--prompt", "hi", "--dry-run")
	if res.code != 0 || !strings.Contains(res.stderr, "warning: the instance's workspace "+ws+" does not exist any more") {
		t.Errorf("dry run in a removed workspace: want exit 0 and a warning\n%s", res)
	}
}

// TestInstanceLogsFollowNextRun: `instance logs --follow` started before
// the run (as in `run ... & logs --follow`) waits for it, prints its
// output, and ends when it does.
func TestInstanceLogsFollowNextRun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	rec := e.create(ctx, "--agent", "opencode")
	follow := exec.CommandContext(ctx, e.bin, "instance", "logs", rec.ID, "--follow")
	follow.Env = e.cliEnv()
	var out lockedBuffer
	follow.Stdout = &out
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- follow.Wait() }()
	res, _ := e.runWithFake(ctx, fakeClientOnPath(t, "opencode"), nil, "instance", "run", rec.ID, "--prompt", "followed")
	if res.code != 0 {
		t.Fatalf("want exit 0\n%s", res)
	}
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "fakeclient: prompt=followed") {
			t.Fatalf("logs --follow: %v, output %q", err, out.String())
		}
	case <-ctx.Done():
		t.Fatalf("logs --follow did not end with the run; output %q", out.String())
	}
}

// TestInstanceRunGooseToolTimeout: Goose started with --with-extension
// lets a tool call run 300 s whatever its config says; a run (and its dry
// run, in its JSON too) warns when a question may wait longer, and does
// not when it may not.
func TestInstanceRunGooseToolTimeout(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	long := e.create(ctx, "--agent", "goose") // the default 10m question timeout
	short := e.create(ctx, "--agent", "goose", "--question-timeout", "4m")
	res := e.run(ctx, "instance", "run", long.ID, "-p", "x", "--dry-run")
	want := "warning: goose, as `instance run` starts it (it cannot be told otherwise), lets a tool call run at most 5m0s"
	if res.code != 0 || !strings.Contains(res.stderr, want) || !strings.Contains(res.stderr, "--question-timeout 4m0s or less") {
		t.Errorf("dry run with a 10m question timeout: want the warning\n%s", res)
	}
	res = e.run(ctx, "instance", "run", long.ID, "-p", "x", "--dry-run", "-o", "json")
	var plan struct {
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &plan); err != nil || len(plan.Warnings) != 1 || !strings.HasPrefix(plan.Warnings[0], want) {
		t.Errorf("the dry run's JSON has warnings %q (%v), want the one\n%s", plan.Warnings, err, res)
	}
	if res := e.run(ctx, "instance", "run", short.ID, "-p", "x", "--dry-run"); res.code != 0 || strings.Contains(res.stderr, "warning:") {
		t.Errorf("dry run with a 4m question timeout: want no warning\n%s", res)
	}
}

// TestInstanceRunHeadlessQuestionReachesAPerson: clients that announce
// elicitation and decline or cancel it at once in a headless run (Codex,
// Claude Code, Copilot CLI) get the question kept in the store: it shows
// in `instance questions`, `instance answer` answers it, the answer
// reaches the client's call, and the run ends done with `wait` exiting 0.
func TestInstanceRunHeadlessQuestionReachesAPerson(t *testing.T) {
	t.Parallel()
	clients := []struct{ agent, program, elicit string }{
		{"codex", "codex", "decline"},
		{"claude-code", "claude", "cancel"},
		{"copilot-cli", "copilot", "decline"},
	}
	path := fakeClientOnPath(t, "codex", "claude", "copilot")
	for _, c := range clients {
		t.Run(c.agent, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
			defer cancel()
			e := newRCEnv(t)
			rec := e.create(ctx, "--agent", c.agent)
			env := []string{"FAKECLIENT_ELICIT=" + c.elicit, "FAKECLIENT_CALL=ask_user_question_agentctl",
				`FAKECLIENT_ARGS={"question":"Which colour?","choices":["red","blue"]}`, "FAKECLIENT_TIMEOUT=2m"}
			type outcome struct {
				res rcResult
				rep *fakeReport
			}
			done := make(chan outcome, 1)
			go func() {
				res, rep := e.runWithFake(ctx, path, env, "instance", "run", rec.ID, "--prompt", "ask me")
				done <- outcome{res, rep}
			}()
			var q rcQuestion
			for q.ID == "" {
				if qs := e.questions(ctx, rec.ID, false); len(qs) == 1 {
					q = qs[0]
					break
				}
				select {
				case o := <-done:
					t.Fatalf("the run ended before the question reached the store\n%s", o.res)
				case <-ctx.Done():
					t.Fatal("no open question appeared")
				case <-time.After(100 * time.Millisecond):
				}
			}
			if q.Text != "Which colour?" || !slices.Equal(q.Choices, []string{"red", "blue"}) {
				t.Fatalf("stored question %+v", q)
			}
			// show -o json has what list has: the status and the open questions.
			var shown struct {
				Status        string       `json:"status"`
				OpenQuestions *int         `json:"open_questions"`
				LastRun       *instanceRun `json:"last_run"`
			}
			if err := json.Unmarshal([]byte(e.mustRun(ctx, "instance", "show", rec.ID, "-o", "json")), &shown); err != nil ||
				shown.Status != "blocked" || shown.OpenQuestions == nil || *shown.OpenQuestions != 1 || shown.LastRun == nil || shown.LastRun.Mode != "headless" {
				t.Errorf("instance show -o json while asking: %+v (%v), want status blocked (the agent waits for a person), 1 open question, a headless last_run", shown, err)
			}
			e.mustRun(ctx, "instance", "answer", rec.ID, "blue")
			o := <-done
			if o.res.code != 0 || o.rep == nil || len(o.rep.Servers) != 1 {
				t.Fatalf("want exit 0 and a report of one server\n%s", o.res)
			}
			if s := o.rep.Servers[0]; s.Error != "" || !strings.Contains(s.Result, "The person answered: blue") {
				t.Fatalf("the ask call: error %q, result %q\n%s", s.Error, s.Result, o.res)
			}
			if strings.Contains(o.res.stderr, "fakeclient: elicitation") {
				t.Errorf("a headless run asked the client, which has nobody to ask:\n%s", o.res.stderr)
			}
			if res := e.run(ctx, "instance", "wait", rec.ID, "--status", "done", "--timeout", "30s"); res.code != 0 {
				t.Fatalf("instance wait: want exit 0\n%s", res)
			}
		})
	}
}

// TestInstanceRunUnansweredIsNotACleanDone: a headless run whose question
// nobody answered ends done, but `instance wait --status done` exits 8
// naming the question, unless --allow-unanswered.
func TestInstanceRunUnansweredIsNotACleanDone(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	path := fakeClientOnPath(t, "codex")
	rec := e.create(ctx, "--agent", "codex", "--question-timeout", "1s")
	env := []string{"FAKECLIENT_ELICIT=decline", "FAKECLIENT_CALL=ask_user_question_agentctl", `FAKECLIENT_ARGS={"question":"Ship it?"}`}
	res, rep := e.runWithFake(ctx, path, env, "instance", "run", rec.ID, "--prompt", "ask me")
	if res.code != 0 || rep == nil || len(rep.Servers) != 1 || !strings.Contains(rep.Servers[0].Result, "No answer came") {
		t.Fatalf("want exit 0 and an expired question\n%s", res)
	}
	evs := e.events(ctx, rec.ID)
	if !slices.ContainsFunc(evs, func(ev rcEvent) bool {
		return ev.Status == "unanswered" && ev.Tool == "ask_user_question_agentctl" && strings.Contains(ev.Message, "Ship it?")
	}) {
		t.Fatalf("events %v lack the unanswered question", evs)
	}
	w := e.run(ctx, "instance", "wait", rec.ID, "--status", "done", "--timeout", "30s")
	if w.code != ExitUnanswered || !strings.Contains(w.stderr, "got no answer") || !strings.Contains(w.stderr, "Ship it?") {
		t.Fatalf("instance wait: want exit %d naming the question\n%s", ExitUnanswered, w)
	}
	if w := e.run(ctx, "instance", "wait", rec.ID, "--status", "done", "--allow-unanswered"); w.code != 0 || !strings.Contains(w.stderr, "got no answer") {
		t.Fatalf("instance wait --allow-unanswered: want exit 0 with the warning\n%s", w)
	}
}

// TestInstanceRunPrivateConfigCopy: a client that rewrites the file it is
// handed (Qwen Code, Cline: mode 0644) gets a per-run copy in a private
// directory, removed after the run; the instance's own file (which holds
// an HTTP instance's token) keeps its content and mode 0600. The fake
// client plays Qwen Code (it has no Cline, whose recipe says the same).
func TestInstanceRunPrivateConfigCopy(t *testing.T) {
	t.Parallel()
	path := fakeClientOnPath(t, "qwen")
	for _, c := range []struct{ agent, program string }{{"qwen-code", "qwen"}} {
		t.Run(c.agent, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
			defer cancel()
			e := newRCEnv(t)
			rec := e.create(ctx, "--agent", c.agent)
			before, err := os.ReadFile(rec.MCPConfigPath)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(rec.MCPConfigPath, 0o600); err != nil { // as an HTTP instance's file is
				t.Fatal(err)
			}
			res, rep := e.runWithFake(ctx, path, []string{"FAKECLIENT_REWRITE=1", "FAKECLIENT_SESSION=skip"}, "instance", "run", rec.ID, "--prompt", "hi")
			if res.code != 0 || rep == nil {
				t.Fatalf("want exit 0 and a report\n%s", res)
			}
			if !slices.ContainsFunc(rep.Configs, func(p string) bool { return strings.Contains(p, string(filepath.Separator)+".run-config-") }) {
				t.Errorf("the client read %v, want a per-run copy", rep.Configs)
			}
			fi, err := os.Stat(rec.MCPConfigPath)
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("the instance's file: %v, mode %v; want 0600", err, fi.Mode().Perm())
			}
			if after, _ := os.ReadFile(rec.MCPConfigPath); string(after) != string(before) {
				t.Errorf("the instance's file changed:\n%s", after)
			}
			if left, _ := filepath.Glob(filepath.Join(rec.Dir, ".run-config-*")); len(left) != 0 {
				t.Errorf("the run's copy was left behind: %v", left)
			}
		})
	}
}

// instanceRun is the part of a record's last_run the tests read.
type instanceRun struct {
	Mode string `json:"mode"`
}
