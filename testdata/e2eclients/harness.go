package main

// The harness: installs each client's pinned package, runs it through
// `agentctl instance run` against the fake model, answers its question as a
// person would, and checks what happened.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// runPrompt is the task the client is given; the fake model ignores it and
// follows its script, but a client may look at it.
const runPrompt = "Use the ask_user_question tool to ask the user which colour the button should be, then tell me the answer."

// The checks of one run, in the report's column order.
const (
	checkName   = iota // the ask tool's name sent to the model is the one `tools list` predicts
	checkShown         // the question showed in `agentctl instance questions`
	checkAnswer        // the answer ("blue") reached the model in the tool result
	checkExit          // `agentctl instance run` exited 0
	checkWait          // `agentctl instance wait --status done` exited 0
	checkStatus        // the instance's recorded status is done
	numChecks
)

var checkTitles = [numChecks]string{
	"name = `tools list`", "question shown", "answer reached model", "run exit 0", "wait done", "status done",
}

type outcome int

const (
	notChecked outcome = iota
	passed
	failed
)

type check struct {
	outcome outcome
	reason  string // why it failed
}

// runResult is one client x transport run.
type runResult struct {
	client     Client
	transport  string
	version    string // the installed version
	predicted  string // `tools list`'s model-visible name of ask_user_question
	observed   string // the name the ask tool was declared under to the model
	toolSearch string // the search tool the model had to call first, if any
	bridge     string // the tool the model called the ask tool through, if any
	checks     [numChecks]check
	notes      []string // why the run went wrong, beyond single checks
	setupEnv   []string // the variables the client's Setup set
	setupFiles []string // the files it wrote, ~/ for HOME and ./ for the workspace
}

func (r *runResult) pass(i int) { r.checks[i] = check{outcome: passed} }

func (r *runResult) fail(i int, format string, args ...any) {
	r.checks[i] = check{outcome: failed, reason: fmt.Sprintf(format, args...)}
}

func (r *runResult) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

type harness struct {
	agentctl string // absolute path
	cache    string
	workdir  string // where runs' throwaway directories are made
	timeout  time.Duration
	keep     bool
	log      io.Writer

	mu     sync.Mutex
	groups map[int]bool // process groups started and not yet ended
}

// startGroup starts cmd as the leader of a new process group, tracked until
// endGroup so that an interrupted harness can end it.
func (h *harness) startGroup(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	h.groups[cmd.Process.Pid] = true
	return nil
}

// endGroup kills what is left of a process group whose leader has exited.
func (h *harness) endGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	h.mu.Lock()
	delete(h.groups, pgid)
	h.mu.Unlock()
}

// killGroups kills every process group still tracked.
func (h *harness) killGroups() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for pgid := range h.groups {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// Catalog clients that are not on npm, the only package registry (with the Go
// module proxy and Debian's) this harness may install from.
func init() {
	for _, c := range []Client{
		{ID: "cursor", NotRunnable: "cursor-agent is installed by Cursor's own download script, not from npm"},
		{ID: "goose", NotRunnable: "Goose is a native program from its GitHub releases or Homebrew, not from npm"},
		{ID: "kiro", NotRunnable: "Kiro CLI (kiro-cli) is installed by Kiro's own download script, not from npm"},
		{ID: "vscode-copilot", NotRunnable: "Copilot Chat runs inside the VS Code editor (its agent definition says agentctl cannot start it) " +
			"and needs the Marketplace extension and a GitHub sign-in"},
	} {
		registerClient(c)
	}
}

// agentctlCmd runs one agentctl command to completion (bounded by timeout) and
// returns its stdout, its stderr and its exit code (-1 if it did not run).
func (h *harness) agentctlCmd(w *world, timeout time.Duration, args ...string) (stdout, stderr string, code int) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.agentctl, args...)
	cmd.Env = w.clientEnv()
	cmd.Dir = w.env.Workspace
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code = 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		code = -1
		errb.WriteString(err.Error())
	}
	if ctx.Err() != nil {
		errb.WriteString(" (timed out after " + timeout.String() + ")")
	}
	return out.String(), errb.String(), code
}

// run runs client c over transport (stdio or http) and checks it.
func (h *harness) run(c Client, transport string) (res runResult) {
	res = runResult{client: c, transport: transport}
	binDir, err := h.install(c)
	if err != nil {
		res.note("not installed: %v", err)
		return res
	}
	res.version = installedVersion(h.installDir(c), c.Package)
	w, err := newWorld(h.workdir, binDir)
	if err != nil {
		res.note("no throwaway directories: %v", err)
		return res
	}
	defer func() {
		h.scrub(&res, w.root)
		if h.keep || runFailed(res) {
			fmt.Fprintf(h.log, "  kept %s\n", w.root)
			return
		}
		_ = os.RemoveAll(w.root)
	}()

	modelLog, err := os.Create(w.path("fake-model.log"))
	if err != nil {
		res.note("%v", err)
		return res
	}
	defer modelLog.Close()
	model := NewModel()
	model.Log = modelLog
	api, err := startFakeAPI(model)
	if err != nil {
		res.note("fake model: %v", err)
		return res
	}
	defer api.Close()
	w.env.ModelURL = api.URL
	w.env.Transport = transport

	create := []string{"instance", "create", "--agent", c.ID, "--workspace", w.env.Workspace, "-o", "json"}
	if transport == "http" {
		url, stop, err := h.startServe(w)
		if err != nil {
			res.note("agentctl serve: %v", err)
			return res
		}
		defer stop()
		create = append(create, "--transport", "http", "--url", url)
	}
	out, errOut, code := h.agentctlCmd(w, time.Minute, create...)
	var rec struct{ ID string }
	if code != 0 || json.Unmarshal([]byte(out), &rec) != nil || rec.ID == "" {
		res.note("agentctl instance create failed (exit %d): %s", code, lastLines(errOut, 3))
		return res
	}
	w.env.Instance = rec.ID

	res.predicted, err = h.predictedAskName(w, rec.ID)
	if err != nil {
		res.note("%v", err)
	}
	if err := h.connectIfNeeded(w, c, rec.ID); err != nil {
		res.note("%v", err)
	}
	if c.Setup != nil {
		before := w.files()
		if err := c.Setup(&w.env); err != nil {
			res.note("client setup: %v", err)
			return res
		}
		res.setupFiles = newFiles(before, w.files())
		for k := range w.env.Env {
			res.setupEnv = append(res.setupEnv, k)
		}
		sort.Strings(res.setupEnv)
	}

	exitCode, timedOut, shown, runErr := h.runClient(w, c, rec.ID)
	if runErr != nil {
		res.note("%v", runErr)
	}
	obs := model.Observations()
	h.judge(&res, w, rec.ID, obs, exitCode, timedOut, shown)
	return res
}

// scrub takes this machine's paths out of a run's reasons, which go into a
// committed report: the run's directory becomes RUN, the package cache CACHE.
func (h *harness) scrub(res *runResult, root string) {
	r := strings.NewReplacer(root, "RUN", h.cache, "CACHE")
	for i := range res.checks {
		res.checks[i].reason = r.Replace(res.checks[i].reason)
	}
	for i := range res.notes {
		res.notes[i] = r.Replace(res.notes[i])
	}
}

// runFailed says some check of the run failed or could not be made.
func runFailed(r runResult) bool {
	for _, c := range r.checks {
		if c.outcome != passed {
			return true
		}
	}
	return false
}

// startServe starts `agentctl serve` for the world's state directory on a free
// loopback port and returns the --url template for instance create.
func (h *harness) startServe(w *world) (url string, stop func(), err error) {
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	logf, err := os.Create(w.path("serve.log"))
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(h.agentctl, "serve", "--listen", addr, "--grace", "2s")
	cmd.Env = w.base
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := h.startGroup(cmd); err != nil {
		logf.Close()
		return "", nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited); logf.Close() }()
	stop = func() { h.stopGroup(cmd.Process.Pid, exited, 10*time.Second) }
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return "http://" + addr + "/instances/{id}/mcp", stop, nil
			}
		}
		select {
		case <-exited:
			return "", nil, fmt.Errorf("exited at once: %s", lastLines(readFile(w.path("serve.log")), 3))
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("%s/health did not answer within 15s", addr)
		}
	}
}

// stopGroup sends SIGTERM to a process group, then SIGKILL if its leader has
// not exited within grace.
func (h *harness) stopGroup(pgid int, exited <-chan struct{}, grace time.Duration) {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-exited
	h.endGroup(pgid)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// predictedAskName is the model-visible name `agentctl tools list` gives the
// ask_user_question tool of the instance.
func (h *harness) predictedAskName(w *world, id string) (string, error) {
	out, errOut, code := h.agentctlCmd(w, time.Minute, "tools", "list", "--instance", id, "-o", "json")
	if code != 0 {
		return "", fmt.Errorf("agentctl tools list failed (exit %d): %s", code, lastLines(errOut, 3))
	}
	var lists []struct {
		Tools []struct {
			Base         string `json:"base"`
			ModelVisible string `json:"model_visible"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &lists); err != nil {
		return "", fmt.Errorf("agentctl tools list -o json: %v", err)
	}
	for _, l := range lists {
		for _, t := range l.Tools {
			if t.Base == "ask_user_question" {
				return t.ModelVisible, nil
			}
		}
	}
	return "", errors.New("agentctl tools list shows no ask_user_question tool")
}

// connectIfNeeded runs `agentctl instance connect` for a client whose
// definition says it reads MCP servers only from its own file in the
// workspace (the recipe's workspace_config), as its definition tells a user to.
func (h *harness) connectIfNeeded(w *world, c Client, id string) error {
	out, errOut, code := h.agentctlCmd(w, time.Minute, "agents", "show", c.ID, "-o", "json")
	if code != 0 {
		return fmt.Errorf("agentctl agents show %s failed (exit %d): %s", c.ID, code, lastLines(errOut, 3))
	}
	var def struct {
		Run struct {
			WorkspaceConfig bool `json:"workspace_config"`
		} `json:"run"`
	}
	if err := json.Unmarshal([]byte(out), &def); err != nil || !def.Run.WorkspaceConfig {
		return err
	}
	if _, errOut, code := h.agentctlCmd(w, time.Minute, "instance", "connect", id); code != 0 {
		return fmt.Errorf("agentctl instance connect failed (exit %d): %s", code, lastLines(errOut, 3))
	}
	return nil
}

type question struct {
	ID       string `json:"id"`
	Question string `json:"question"`
	Status   string `json:"status"`
}

// runClient starts `agentctl instance run ID --prompt P`, answers the
// questions it asks meanwhile, and waits for it (bounded by h.timeout, after
// which its process group is killed). shown says a question of the fake
// model's showed in `agentctl instance questions`.
func (h *harness) runClient(w *world, c Client, id string) (exitCode int, timedOut, shown bool, err error) {
	logf, err := os.Create(w.path("run.log"))
	if err != nil {
		return -1, false, false, err
	}
	defer logf.Close()
	args := []string{"instance", "run", id, "--prompt", runPrompt}
	if len(c.Args) > 0 {
		args = append(append(args, "--"), c.Args...)
	}
	cmd := exec.Command(h.agentctl, args...)
	cmd.Env = w.clientEnv()
	cmd.Dir = w.env.Workspace
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := h.startGroup(cmd); err != nil {
		return -1, false, false, fmt.Errorf("agentctl instance run: %v", err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()

	pollDone := make(chan struct{})
	go func() {
		defer close(pollDone)
		answered := map[string]bool{}
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-exited:
				return
			case <-tick.C:
			}
			out, _, code := h.agentctlCmd(w, 20*time.Second, "instance", "questions", id, "-o", "json")
			var qs []question
			if code != 0 || json.Unmarshal([]byte(out), &qs) != nil {
				continue
			}
			for _, q := range qs {
				if q.Status != "open" || answered[q.ID] {
					continue
				}
				shown = shown || strings.Contains(q.Question, askQuestion)
				fmt.Fprintf(logf, "[e2e harness] question %s: %q; answering %q\n", q.ID, q.Question, askAnswer)
				_, errOut, code := h.agentctlCmd(w, 20*time.Second, "instance", "answer", id, q.ID, askAnswer)
				if code != 0 {
					fmt.Fprintf(logf, "[e2e harness] agentctl instance answer failed (exit %d): %s\n", code, errOut)
				}
				answered[q.ID] = true
			}
		}
	}()

	select {
	case <-exited:
	case <-time.After(h.timeout):
		timedOut = true
		fmt.Fprintf(logf, "[e2e harness] timed out after %s; killing the process group\n", h.timeout)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
		}
	}
	// Whatever the client left running in its group goes too.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
	h.endGroup(cmd.Process.Pid)
	<-pollDone
	exitCode = 0
	var exit *exec.ExitError
	if errors.As(waitErr, &exit) {
		exitCode = exit.ExitCode()
	} else if waitErr != nil {
		exitCode = -1
	}
	return exitCode, timedOut, shown, nil
}

// judge makes the checks of a finished run.
func (h *harness) judge(res *runResult, w *world, id string, obs Observations, exitCode int, timedOut, shown bool) {
	runLog := readFile(w.path("run.log"))
	res.observed = obs.AskToolName
	if res.observed == "" && len(obs.AskToolNames) > 0 {
		res.observed = obs.AskToolNames[0]
	}
	if obs.ToolSearchUsed {
		res.toolSearch = obs.SearchToolName
	}
	res.bridge = obs.BridgeToolName

	switch {
	case res.observed == "" && obs.ModelRequests == 0:
		res.fail(checkName, "the client never called the fake model")
	case res.observed == "":
		res.fail(checkName, "no tool named *ask_user_question* was declared to the model (declared: %s)", listOrNone(obs.ToolsDeclared, 12))
	case res.predicted == "":
		res.fail(checkName, "the model saw %s, but `tools list` predicted nothing", res.observed)
	case res.observed != res.predicted:
		res.fail(checkName, "the model saw %s, `tools list` predicted %s", res.observed, res.predicted)
	default:
		res.pass(checkName)
	}

	if !shown {
		// A question answered or closed between two polls still counts.
		out, _, code := h.agentctlCmd(w, 20*time.Second, "instance", "questions", id, "--all", "-o", "json")
		var qs []question
		if code == 0 && json.Unmarshal([]byte(out), &qs) == nil {
			for _, q := range qs {
				shown = shown || strings.Contains(q.Question, askQuestion)
			}
		}
	}
	switch {
	case shown:
		res.pass(checkShown)
	case res.observed != "":
		res.fail(checkShown, "no question in `instance questions`")
	default:
		res.fail(checkShown, "the ask tool was never called")
	}

	switch {
	case obs.AnswerHasBlue():
		res.pass(checkAnswer)
	case obs.AnswerReached:
		res.fail(checkAnswer, "the ask tool returned %s", clip(obs.AnswerText, 160))
	default:
		res.fail(checkAnswer, "no result of the ask tool reached the model")
	}

	switch {
	case timedOut:
		res.fail(checkExit, "killed after the %s timeout", h.timeout)
	case exitCode != 0:
		res.fail(checkExit, "exit code %d", exitCode)
	default:
		res.pass(checkExit)
	}

	out, errOut, code := h.agentctlCmd(w, 45*time.Second, "instance", "wait", id, "--status", "done", "--timeout", "30s")
	if code == 0 {
		res.pass(checkWait)
	} else {
		res.fail(checkWait, "exit code %d: %s", code, clip(strings.TrimSpace(out+" "+errOut), 160))
	}

	status, message, err := h.lastStatus(w, id)
	switch {
	case err != nil:
		res.fail(checkStatus, "%v", err)
	case status != "done":
		res.fail(checkStatus, "status %q: %s", status, clip(message, 160))
	default:
		res.pass(checkStatus)
	}

	// The client's own words, when it did not get as far as the question or
	// did not end well.
	if res.checks[checkName].outcome == failed || res.checks[checkExit].outcome == failed {
		if tail := lastLines(stripHarnessLines(runLog), 4); tail != "" {
			res.note("run log ends: %s", clip(tail, 400))
		}
	}
	if len(obs.Unknown) > 0 {
		seen := map[string]bool{}
		var paths []string
		for _, u := range obs.Unknown {
			p := u.Method + " " + u.Path
			if !seen[p] {
				seen[p] = true
				paths = append(paths, p)
			}
		}
		res.note("unknown requests to the fake model: %s", listOrNone(paths, 6))
	}
}

// lastStatus is the status of the instance's latest event.
func (h *harness) lastStatus(w *world, id string) (status, message string, err error) {
	out, errOut, code := h.agentctlCmd(w, 20*time.Second, "instance", "events", id, "-o", "jsonl")
	if code != 0 {
		return "", "", fmt.Errorf("agentctl instance events failed (exit %d): %s", code, lastLines(errOut, 2))
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct{ Status, Message string }
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Status != "" {
			status, message = ev.Status, ev.Message
		}
	}
	if status == "" {
		return "", "", errors.New("no events recorded")
	}
	return status, message, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// lastLines is the last n non-blank lines of s, joined with " / ".
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}

func stripHarnessLines(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "[e2e harness]") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// clip puts s on one line and cuts it to at most n runes.
func clip(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return string(r)
}

func listOrNone(items []string, n int) string {
	if len(items) == 0 {
		return "none"
	}
	if len(items) > n {
		return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
	}
	return strings.Join(items, ", ")
}
