package main

// Tests that drive the real agentctl binary with an independent MCP client:
// the official TypeScript SDK (testdata/tsclient/client.mjs). The endpoint is
// started exactly as a client would start it, from the native MCP
// configuration file that `instance create` wrote.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rcTimeout bounds each real-process test. It is generous on purpose: the
// tests never assert on speed, only on outcomes.
const rcTimeout = 3 * time.Minute

// ---------------------------------------------------------------------------
// An isolated environment for the real binary.

// rcEnv is a fresh, isolated world for the real binary: its own state
// directory, HOME and XDG directories, and a workspace to run in.
type rcEnv struct {
	t      *testing.T
	bin    string
	root   string
	state  string // AGENTCTL_STATE_DIR of the CLI commands
	home   string // HOME
	config string // XDG_CONFIG_HOME (user agent definitions live under it)
	work   string // the working directory and --workspace of the commands
}

func newRCEnv(t *testing.T) *rcEnv {
	t.Helper()
	root := t.TempDir()
	e := &rcEnv{t: t, bin: realBinary(t), root: root}
	e.state = filepath.Join(root, "state")
	e.home = filepath.Join(root, "home")
	e.config = filepath.Join(root, "config")
	e.work = filepath.Join(root, "work")
	for _, d := range []string{e.home, e.config, e.work, filepath.Join(root, "xdg-state"), filepath.Join(root, "xdg-cache"), filepath.Join(root, "xdg-data")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// cleanEnviron is the test process's environment without anything that
// could point agentctl at real user state.
func cleanEnviron() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AGENTCTL_") || strings.HasPrefix(k, "XDG_") || k == "HOME" ||
			k == "NO_COLOR" || k == "CLICOLOR" || k == "CLICOLOR_FORCE" {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// cliEnv is the environment of the agentctl CLI commands the test runs: the
// state directory comes from AGENTCTL_STATE_DIR.
func (e *rcEnv) cliEnv() []string {
	return append(cleanEnviron(),
		"AGENTCTL_STATE_DIR="+e.state,
		"HOME="+e.home,
		"XDG_CONFIG_HOME="+e.config,
		"XDG_STATE_HOME="+filepath.Join(e.root, "xdg-state"),
		"XDG_CACHE_HOME="+filepath.Join(e.root, "xdg-cache"),
		"XDG_DATA_HOME="+filepath.Join(e.root, "xdg-data"),
		"NO_COLOR=1",
	)
}

// clientEnv is the environment of the MCP client process (node), and so of
// the endpoint it starts: no AGENTCTL_STATE_DIR and a HOME and
// XDG_STATE_HOME with no agentctl state in them, so the endpoint finds its
// instance only if the written configuration names the state directory.
// XDG_CONFIG_HOME is the CLI's, so that an endpoint that (wrongly) consulted
// the agent definitions would see the user's edits.
func (e *rcEnv) clientEnv() []string {
	other := filepath.Join(e.root, "client-home")
	for _, d := range []string{other, filepath.Join(other, "state")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			e.t.Fatal(err)
		}
	}
	return append(cleanEnviron(),
		"HOME="+other,
		"XDG_CONFIG_HOME="+e.config,
		"XDG_STATE_HOME="+filepath.Join(other, "state"),
		"XDG_CACHE_HOME="+filepath.Join(e.root, "xdg-cache"),
		"XDG_DATA_HOME="+filepath.Join(e.root, "xdg-data"),
	)
}

// rcResult is the outcome of one CLI run.
type rcResult struct {
	args           []string
	stdout, stderr string
	code           int
}

func (r rcResult) String() string {
	return "agentctl " + strings.Join(r.args, " ") + ": exit " + itoa(r.code) + "\nstdout:\n" + r.stdout + "\nstderr:\n" + r.stderr
}

func itoa(n int) string { return strconv.Itoa(n) }

// run runs the real binary with args in the workspace and returns its outcome.
func (e *rcEnv) run(ctx context.Context, args ...string) rcResult {
	e.t.Helper()
	cmd := exec.CommandContext(ctx, e.bin, args...)
	cmd.Env = e.cliEnv()
	cmd.Dir = e.work
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := rcResult{args: args, stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	default:
		e.t.Fatalf("run agentctl %v: %v", args, err)
	}
	if ctx.Err() != nil {
		e.t.Fatalf("agentctl %v did not finish before the test's deadline: %v\n%s", args, ctx.Err(), res)
	}
	return res
}

// mustRun runs the binary and fails the test unless it exits 0.
func (e *rcEnv) mustRun(ctx context.Context, args ...string) string {
	e.t.Helper()
	res := e.run(ctx, args...)
	if res.code != 0 {
		e.t.Fatalf("want exit 0\n%s", res)
	}
	return res.stdout
}

// rcRecord is the part of `instance create/show -o json` the tests read,
// decoded by its contract field names (not by the product's Go type).
type rcRecord struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Agent        string `json:"agent"`
	ServerName   string `json:"server_name"`
	Capabilities struct {
		ToolNames struct {
			Namespacing string `json:"namespacing"`
			Template    string `json:"template"`
		} `json:"tool_names"`
	} `json:"capabilities"`
	MCPConfigPath   string `json:"mcp_config_path"`
	Dir             string `json:"dir"`
	QuestionTimeout string `json:"question_timeout"`
}

// create runs `instance create -o json` with extra flags and decodes the record.
func (e *rcEnv) create(ctx context.Context, flags ...string) rcRecord {
	e.t.Helper()
	out := e.mustRun(ctx, append([]string{"instance", "create", "-o", "json"}, flags...)...)
	var rec rcRecord
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		e.t.Fatalf("instance create -o json printed no record: %v\n%s", err, out)
	}
	if rec.ID == "" || rec.MCPConfigPath == "" {
		e.t.Fatalf("instance create -o json: record without id or mcp_config_path:\n%s", out)
	}
	return rec
}

// rcQuestion is one question of `instance questions -o json`.
type rcQuestion struct {
	ID       string   `json:"id"`
	Instance string   `json:"instance_id"`
	Text     string   `json:"question"`
	Choices  []string `json:"choices"`
	Status   string   `json:"status"`
	Answer   string   `json:"answer"`
}

func (e *rcEnv) questions(ctx context.Context, id string, all bool) []rcQuestion {
	e.t.Helper()
	args := []string{"instance", "questions", id, "-o", "json"}
	if all {
		args = append(args, "--all")
	}
	out := e.mustRun(ctx, args...)
	var qs []rcQuestion
	if err := json.Unmarshal([]byte(out), &qs); err != nil {
		e.t.Fatalf("instance questions -o json: %v\n%s", err, out)
	}
	if qs == nil {
		e.t.Fatalf("instance questions -o json printed %q, want a JSON array", strings.TrimSpace(out))
	}
	return qs
}

// rcEvent is one line of `instance events -o json`.
type rcEvent struct {
	Seq      int64    `json:"seq"`
	Instance string   `json:"instance_id"`
	Tool     string   `json:"tool"`
	Status   string   `json:"status"`
	Message  string   `json:"message"`
	Percent  *float64 `json:"percent,omitempty"`
}

func (ev rcEvent) String() string {
	b, _ := json.Marshal(ev)
	return string(b)
}

func (e *rcEnv) events(ctx context.Context, id string) []rcEvent {
	e.t.Helper()
	out := e.mustRun(ctx, "instance", "events", id, "-o", "json")
	var evs []rcEvent
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var ev rcEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			e.t.Fatalf("instance events -o json: line %q is not JSON: %v", line, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// nativeServer reads the native MCP configuration file the record names and
// returns the command and args of the entry under the record's server name.
// Both formats used here are {"mcpServers": {S: {"command", "args"}}}.
func nativeServer(t *testing.T, rec rcRecord, wantFile string) (string, []string) {
	t.Helper()
	if got := filepath.Base(rec.MCPConfigPath); got != wantFile {
		t.Fatalf("mcp_config_path %s: file is %q, want %q", rec.MCPConfigPath, got, wantFile)
	}
	if filepath.Dir(rec.MCPConfigPath) != rec.Dir {
		t.Errorf("mcp_config_path %s is not directly inside the instance directory %s", rec.MCPConfigPath, rec.Dir)
	}
	data, err := os.ReadFile(rec.MCPConfigPath)
	if err != nil {
		t.Fatalf("read the native MCP configuration: %v", err)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("%s is not JSON: %v\n%s", rec.MCPConfigPath, err, data)
	}
	ent, ok := cfg.MCPServers[rec.ServerName]
	if !ok || len(cfg.MCPServers) != 1 {
		t.Fatalf("%s: want exactly one mcpServers entry %q, got:\n%s", rec.MCPConfigPath, rec.ServerName, data)
	}
	if !filepath.IsAbs(ent.Command) {
		t.Fatalf("%s: command %q is not an absolute path; the client may start it from any directory", rec.MCPConfigPath, ent.Command)
	}
	return ent.Command, ent.Args
}

// ---------------------------------------------------------------------------
// The TypeScript client.

// tsClientDir returns the directory of the TypeScript client, failing (never
// skipping) when node or its installed dependencies are missing.
func tsClientDir(t *testing.T) (node, script string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "tsclient")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node (>= 20) is not on PATH: the real-client tests need it and the TypeScript MCP SDK; run `make deps` (npm ci in testdata/tsclient) after installing Node.js: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Fatalf("the TypeScript MCP SDK is not installed in %s: run `make deps` (npm ci in testdata/tsclient): %v", dir, err)
	}
	return node, filepath.Join(dir, "client.mjs")
}

type tsStep struct {
	Op        string `json:"op"`
	Name      string `json:"name,omitempty"`
	Arguments any    `json:"arguments,omitempty"`
	Text      string `json:"text,omitempty"`
}

type tsPlan struct {
	Command     string   `json:"command"`
	Args        []string `json:"args"`
	Elicitation any      `json:"elicitation"`
	TimeoutMs   int      `json:"timeoutMs"`
	Steps       []tsStep `json:"steps"`
}

type tsError struct {
	Code    *int   `json:"code"`
	Message string `json:"message"`
}

func (e tsError) String() string {
	code := "none"
	if e.Code != nil {
		code = itoa(*e.Code)
	}
	return "code " + code + ": " + e.Message
}

type tsCallResult struct {
	Content           []map[string]any `json:"content"`
	StructuredContent json.RawMessage  `json:"structuredContent"`
	IsError           bool             `json:"isError"`
}

func (r tsCallResult) String() string {
	c, _ := json.Marshal(r.Content)
	return "content " + string(c) + " structuredContent " + string(r.StructuredContent) + " isError " + strconv.FormatBool(r.IsError)
}

type tsResult struct {
	Op    string `json:"op"`
	Name  string `json:"name"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Result *tsCallResult `json:"result"`
	Error  *tsError      `json:"error"`
}

func (r tsResult) String() string {
	b, _ := json.Marshal(r)
	return string(b)
}

type tsOutput struct {
	Fatal  string `json:"fatal"`
	Server struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"server"`
	Results []tsResult `json:"results"`
}

// tsRun is a running TypeScript client.
type tsRun struct {
	t              *testing.T
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{}
	err            error
}

// startTS starts the TypeScript client with plan, in working directory cwd
// and with environment env.
func startTS(ctx context.Context, t *testing.T, plan tsPlan, cwd string, env []string) *tsRun {
	t.Helper()
	node, script := tsClientDir(t)
	if plan.TimeoutMs == 0 {
		plan.TimeoutMs = int(rcTimeout / time.Millisecond)
	}
	raw, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	r := &tsRun{t: t, done: make(chan struct{})}
	r.cmd = exec.CommandContext(ctx, node, script, string(raw))
	r.cmd.Dir = cwd
	r.cmd.Env = env
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start node: %v", err)
	}
	go func() {
		r.err = r.cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = r.cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

// wait waits for the client to finish and decodes its output.
func (r *tsRun) wait() tsOutput {
	r.t.Helper()
	<-r.done
	if r.err != nil {
		r.t.Fatalf("TypeScript client failed: %v\nstdout:\n%s\nstderr:\n%s", r.err, r.stdout.String(), r.stderr.String())
	}
	var out tsOutput
	if err := json.Unmarshal(r.stdout.Bytes(), &out); err != nil {
		r.t.Fatalf("TypeScript client stdout is not one JSON document: %v\nstdout:\n%s\nstderr:\n%s", err, r.stdout.String(), r.stderr.String())
	}
	if out.Fatal != "" {
		r.t.Fatalf("TypeScript client: fatal: %s\nstderr:\n%s", out.Fatal, r.stderr.String())
	}
	return out
}

// runTS runs the client to completion.
func runTS(ctx context.Context, t *testing.T, plan tsPlan, cwd string, env []string) tsOutput {
	t.Helper()
	return startTS(ctx, t, plan, cwd, env).wait()
}

// result returns the i-th step's result, checking its op.
func (o tsOutput) result(t *testing.T, i int, op string) tsResult {
	t.Helper()
	if i >= len(o.Results) {
		t.Fatalf("the client reported %d results, want step %d", len(o.Results), i)
	}
	r := o.Results[i]
	if r.Op != op {
		t.Fatalf("result %d is op %q, want %q", i, r.Op, op)
	}
	return r
}

// listNames returns the sorted tool names of a list result.
func listNames(t *testing.T, r tsResult) []string {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("tools/list failed: %s", *r.Error)
	}
	var names []string
	for _, tool := range r.Tools {
		names = append(names, tool.Name)
	}
	sort.Strings(names)
	return names
}

// structured returns a successful call's structuredContent, decoded into v;
// it fails the test on a protocol error or a tool error.
func structured(t *testing.T, r tsResult, v any) {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("call %s: protocol error %s, want a result", r.Name, *r.Error)
	}
	if r.Result == nil {
		t.Fatalf("call %s: neither result nor error", r.Name)
	}
	if r.Result.IsError {
		t.Fatalf("call %s: isError result: %s", r.Name, r.Result)
	}
	if len(r.Result.StructuredContent) == 0 {
		t.Fatalf("call %s: no structuredContent: %s", r.Name, r.Result)
	}
	if err := json.Unmarshal(r.Result.StructuredContent, v); err != nil {
		t.Fatalf("call %s: structuredContent %s: %v", r.Name, r.Result.StructuredContent, err)
	}
}

// wantCallError checks that a call failed with a JSON-RPC error of code.
func wantCallError(t *testing.T, r tsResult, code int) {
	t.Helper()
	if r.Error == nil {
		res := "nothing"
		if r.Result != nil {
			res = r.Result.String()
		}
		t.Fatalf("call %s: want JSON-RPC error %d, got result %s", r.Name, code, res)
	}
	if r.Error.Code == nil || *r.Error.Code != code {
		t.Fatalf("call %s: want JSON-RPC error code %d, got %s", r.Name, code, *r.Error)
	}
}

type askOut struct {
	Answered   *bool  `json:"answered"`
	Answer     string `json:"answer"`
	Status     string `json:"status"`
	QuestionID string `json:"question_id"`
}

func (a askOut) String() string {
	b, _ := json.Marshal(a)
	return string(b)
}

type progressOut struct {
	Recorded bool   `json:"recorded"`
	Seq      int64  `json:"seq"`
	Status   string `json:"status"`
}

type instanceOut struct {
	ID          string `json:"id"`
	Agent       string `json:"agent"`
	ServerName  string `json:"server_name"`
	Namespacing string `json:"namespacing"`
	Tools       []struct {
		Canonical    string `json:"canonical"`
		Transport    string `json:"transport"`
		ModelVisible string `json:"model_visible"`
		Source       string `json:"source"`
	} `json:"tools"`
}

// clientPlan is the plan that starts the endpoint from the native config.
func clientPlan(t *testing.T, rec rcRecord, file string, steps ...tsStep) tsPlan {
	t.Helper()
	command, args := nativeServer(t, rec, file)
	return tsPlan{Command: command, Args: args, Steps: steps}
}

// otherDir is a working directory for the client that is neither the
// workspace nor the instance directory.
func otherDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// ---------------------------------------------------------------------------
// Tests.

func TestRealClientAuggieAndClaudeCode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		agent, file string
		// transport names, by base
		ask, progress, get string
		// model-visible name of a canonical name
		modelSees func(canonical string) string
	}{
		{
			agent: "auggie", file: "mcp.json",
			ask: "ask_user_question", progress: "report_progress", get: "get_instance",
			modelSees: func(c string) string { return c },
		},
		{
			agent: "claude-code", file: ".mcp.json",
			ask: "ask_user_question_agentctl", progress: "report_progress_agentctl", get: "get_instance_agentctl",
			modelSees: func(c string) string { return "mcp__agentctl__" + c },
		},
	}
	for _, tc := range cases {
		t.Run(tc.agent, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
			defer cancel()
			e := newRCEnv(t)
			rec := e.create(ctx, "--agent", tc.agent)
			if rec.Agent != tc.agent || rec.ServerName != "agentctl" {
				t.Fatalf("record: agent %q server %q, want %q and agentctl", rec.Agent, rec.ServerName, tc.agent)
			}

			const progressMsg = "migrating the schema"
			plan := clientPlan(t, rec, tc.file,
				tsStep{Op: "list"},
				tsStep{Op: "call", Name: tc.progress, Arguments: map[string]any{"message": progressMsg, "status": "running", "percent": 40}},
				tsStep{Op: "call", Name: tc.ask, Arguments: map[string]any{"question": "Which database?", "choices": []string{"staging", "prod"}}},
				tsStep{Op: "call", Name: "no_such_tool", Arguments: map[string]any{}},
				tsStep{Op: "call", Name: tc.get, Arguments: map[string]any{}},
			)
			run := startTS(ctx, t, plan, otherDir(t), e.clientEnv())

			// Another process answers: poll the real binary until the question
			// is open, then answer it.
			var q rcQuestion
			for {
				qs := e.questions(ctx, rec.ID, false)
				if len(qs) > 1 {
					t.Fatalf("want at most one open question, got %+v", qs)
				}
				if len(qs) == 1 {
					q = qs[0]
					break
				}
				select {
				case <-run.done:
					t.Fatalf("the client finished before a question was open\nstdout:\n%s\nstderr:\n%s", run.stdout.String(), run.stderr.String())
				case <-ctx.Done():
					t.Fatalf("no open question appeared: %v", ctx.Err())
				case <-time.After(100 * time.Millisecond):
				}
			}
			if q.Text != "Which database?" || !slices.Equal(q.Choices, []string{"staging", "prod"}) || q.Status != "open" || q.Instance != rec.ID {
				t.Fatalf("open question = %+v, want \"Which database?\" with choices [staging prod], open, of %s", q, rec.ID)
			}
			e.mustRun(ctx, "instance", "answer", rec.ID, "staging")

			out := run.wait()
			if out.Server.Name != "agentctl" {
				t.Errorf("server name in initialize = %q, want agentctl", out.Server.Name)
			}
			if len(out.Results) != 5 {
				t.Fatalf("want 5 results, got %d: %+v", len(out.Results), out.Results)
			}

			// tools/list: exactly the transport names of this client.
			wantNames := []string{tc.ask, tc.get, tc.progress}
			sort.Strings(wantNames)
			if got := listNames(t, out.result(t, 0, "list")); !slices.Equal(got, wantNames) {
				t.Errorf("tools/list = %v, want exactly %v", got, wantNames)
			}

			// report_progress, recorded under the canonical name.
			var prog progressOut
			structured(t, out.result(t, 1, "call"), &prog)
			if !prog.Recorded || prog.Status != "running" || prog.Seq <= 0 {
				t.Errorf("report_progress result = %+v, want recorded=true status=running seq>0", prog)
			}
			evs := e.events(ctx, rec.ID)
			if len(evs) != 1 {
				t.Fatalf("instance events: want 1 event, got %+v", evs)
			}
			ev := evs[0]
			if ev.Tool != "report_progress_agentctl" || ev.Status != "running" || ev.Message != progressMsg ||
				ev.Percent == nil || *ev.Percent != 40 || ev.Seq != prog.Seq || ev.Instance != rec.ID {
				t.Errorf("event = %s, want tool report_progress_agentctl, status running, message %q, percent 40, seq %d, instance %s",
					ev, progressMsg, prog.Seq, rec.ID)
			}

			// ask_user_question, answered by the other process.
			var ask askOut
			structured(t, out.result(t, 2, "call"), &ask)
			if ask.Answered == nil || !*ask.Answered || ask.Answer != "staging" || ask.Status != "answered" || ask.QuestionID != q.ID {
				t.Errorf("ask result = %+v, want answered=true answer=staging status=answered question_id=%s", ask, q.ID)
			}
			all := e.questions(ctx, rec.ID, true)
			if len(all) != 1 || all[0].ID != q.ID || all[0].Status != "answered" || all[0].Answer != "staging" {
				t.Errorf("questions --all = %+v, want the one question answered with staging", all)
			}

			// An unknown tool is the normal unknown-tool error.
			wantCallError(t, out.result(t, 3, "call"), -32602)

			// get_instance describes the names consistently with tools/list.
			var inst instanceOut
			structured(t, out.result(t, 4, "call"), &inst)
			if inst.ID != rec.ID || inst.Agent != tc.agent || inst.ServerName != "agentctl" ||
				inst.Namespacing != rec.Capabilities.ToolNames.Namespacing {
				t.Errorf("get_instance = id %q agent %q server %q namespacing %q; want %q %q agentctl %q",
					inst.ID, inst.Agent, inst.ServerName, inst.Namespacing, rec.ID, tc.agent, rec.Capabilities.ToolNames.Namespacing)
			}
			wantTransport := map[string]string{
				"ask_user_question_agentctl": tc.ask,
				"report_progress_agentctl":   tc.progress,
				"get_instance_agentctl":      tc.get,
			}
			if len(inst.Tools) != len(wantTransport) {
				t.Errorf("get_instance lists %d tools, want %d: %+v", len(inst.Tools), len(wantTransport), inst.Tools)
			}
			for _, tool := range inst.Tools {
				tr, ok := wantTransport[tool.Canonical]
				if !ok {
					t.Errorf("get_instance lists unexpected canonical name %q", tool.Canonical)
					continue
				}
				delete(wantTransport, tool.Canonical)
				if tool.Transport != tr {
					t.Errorf("get_instance: %s transport = %q, want %q (what tools/list sent)", tool.Canonical, tool.Transport, tr)
				}
				if want := tc.modelSees(tool.Canonical); tool.ModelVisible != want {
					t.Errorf("get_instance: %s model_visible = %q, want %q", tool.Canonical, tool.ModelVisible, want)
				}
			}
			for c := range wantTransport {
				t.Errorf("get_instance does not list %s", c)
			}
		})
	}
}

func TestRealClientQuestionTimeout(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	rec := e.create(ctx, "--agent", "auggie", "--question-timeout", "1s")
	if rec.QuestionTimeout != "1s" {
		t.Fatalf("record question_timeout = %q, want 1s", rec.QuestionTimeout)
	}
	out := runTS(ctx, t, clientPlan(t, rec, "mcp.json",
		tsStep{Op: "call", Name: "ask_user_question", Arguments: map[string]any{"question": "Anyone there?"}},
	), otherDir(t), e.clientEnv())

	var ask askOut
	structured(t, out.result(t, 0, "call"), &ask) // a normal result: no protocol error, not isError
	if ask.Answered == nil || *ask.Answered || ask.Status != "expired" || ask.Answer != "" || ask.QuestionID == "" {
		t.Errorf("ask result = %+v, want answered=false status=expired, no answer, a question_id", ask)
	}
	if open := e.questions(ctx, rec.ID, false); len(open) != 0 {
		t.Errorf("open questions after the timeout = %+v, want none", open)
	}
	all := e.questions(ctx, rec.ID, true)
	if len(all) != 1 || all[0].ID != ask.QuestionID || all[0].Status != "expired" || all[0].Text != "Anyone there?" {
		t.Errorf("questions --all = %+v, want the one question %s expired", all, ask.QuestionID)
	}
	// An expired question can no longer be answered.
	if res := e.run(ctx, "instance", "answer", rec.ID, ask.QuestionID, "late"); res.code != ExitInvalid {
		t.Errorf("answering an expired question: want exit %d (invalid)\n%s", ExitInvalid, res)
	}
}

func TestRealClientElicitation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		elicitation map[string]any
		answered    bool
		answer      string
		status      string
	}{
		{"accept", map[string]any{"action": "accept", "content": map[string]any{"answer": "blue"}}, true, "blue", "answered"},
		{"decline", map[string]any{"action": "decline"}, false, "", "declined"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
			defer cancel()
			e := newRCEnv(t)
			// A short question timeout: if the endpoint wrongly fell back to
			// the store, the call would end "expired", not hang.
			rec := e.create(ctx, "--agent", "claude-code", "--question-timeout", "2s")
			plan := clientPlan(t, rec, ".mcp.json",
				tsStep{Op: "call", Name: "ask_user_question_agentctl", Arguments: map[string]any{"question": "Favourite colour?", "choices": []string{"red", "blue"}}},
			)
			plan.Elicitation = tc.elicitation
			run := startTS(ctx, t, plan, otherDir(t), e.clientEnv())
			out := run.wait()

			var ask askOut
			structured(t, out.result(t, 0, "call"), &ask)
			if ask.Answered == nil || *ask.Answered != tc.answered || ask.Answer != tc.answer || ask.Status != tc.status {
				t.Errorf("ask result = %+v, want answered=%v answer=%q status=%q", ask, tc.answered, tc.answer, tc.status)
			}
			if ask.QuestionID != "" {
				t.Errorf("ask result has question_id %q; an elicited question is not stored", ask.QuestionID)
			}
			if !strings.Contains(run.stderr.String(), `"op":"elicitation"`) {
				t.Errorf("the client was never asked through elicitation; its stderr:\n%s", run.stderr.String())
			}
			if all := e.questions(ctx, rec.ID, true); len(all) != 0 {
				t.Errorf("questions --all = %+v, want [] (elicitation stores no question)", all)
			}
		})
	}
}

func TestRealClientDefinitionEditDoesNotChangeInstance(t *testing.T) {
	t.Parallel()
	const suffixDef = `id      = "myagent"
name    = "My agent"
command = ["myagent"]

[mcp]
config_format = "mcp-servers-json"

[capabilities.tool_names]
namespacing = "suffix"
template    = "{tool}_{server}"
max_length  = 64
charset     = "^[A-Za-z0-9_-]+$"
`
	prefixDef := strings.NewReplacer(`namespacing = "suffix"`, `namespacing = "prefix"`,
		`template    = "{tool}_{server}"`, `template    = "mcp__{server}__{tool}"`).Replace(suffixDef)
	if prefixDef == suffixDef {
		t.Fatal("test bug: the prefix definition equals the suffix one")
	}
	full := []string{"ask_user_question_agentctl", "get_instance_agentctl", "report_progress_agentctl"}
	short := []string{"ask_user_question", "get_instance", "report_progress"}

	cases := []struct {
		name              string
		atCreate, edited  string
		createdNS, editNS string
		wantList          []string
	}{
		{"suffix-then-prefix", suffixDef, prefixDef, "suffix", "prefix", short},
		{"prefix-then-suffix", prefixDef, suffixDef, "prefix", "suffix", full},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
			defer cancel()
			e := newRCEnv(t)
			defFile := filepath.Join(e.config, "agentctl", "agents", "myagent.toml")
			if err := os.MkdirAll(filepath.Dir(defFile), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(defFile, []byte(tc.atCreate), 0o644); err != nil {
				t.Fatal(err)
			}
			rec := e.create(ctx, "--agent", "myagent")
			if rec.Capabilities.ToolNames.Namespacing != tc.createdNS {
				t.Fatalf("created with namespacing %q, want %q (the user definition was not used)", rec.Capabilities.ToolNames.Namespacing, tc.createdNS)
			}

			// Edit the definition; prove the edit is in force for new instances.
			if err := os.WriteFile(defFile, []byte(tc.edited), 0o644); err != nil {
				t.Fatal(err)
			}
			probe := e.create(ctx, "--agent", "myagent")
			if probe.Capabilities.ToolNames.Namespacing != tc.editNS {
				t.Fatalf("after the edit a new instance has namespacing %q, want %q", probe.Capabilities.ToolNames.Namespacing, tc.editNS)
			}

			// The existing instance keeps its snapshot: record and endpoint.
			var shown rcRecord
			if err := json.Unmarshal([]byte(e.mustRun(ctx, "instance", "show", rec.ID, "-o", "json")), &shown); err != nil {
				t.Fatal(err)
			}
			if shown.Capabilities.ToolNames.Namespacing != tc.createdNS {
				t.Errorf("instance show: namespacing %q after the edit, want the snapshot %q", shown.Capabilities.ToolNames.Namespacing, tc.createdNS)
			}
			out := runTS(ctx, t, clientPlan(t, rec, "mcp.json",
				tsStep{Op: "list"},
				tsStep{Op: "call", Name: "report_progress", Arguments: map[string]any{"message": "short name"}},
			), otherDir(t), e.clientEnv())
			if got := listNames(t, out.result(t, 0, "list")); !slices.Equal(got, tc.wantList) {
				t.Errorf("tools/list = %v, want %v (the %s snapshot, not the edited %s definition)", got, tc.wantList, tc.createdNS, tc.editNS)
			}
			// Routing follows the snapshot too: the short name resolves only
			// for a suffix instance.
			call := out.result(t, 1, "call")
			if tc.createdNS == "suffix" {
				var prog progressOut
				structured(t, call, &prog)
				if !prog.Recorded {
					t.Errorf("report_progress by its short name on a suffix instance: %+v", prog)
				}
			} else {
				wantCallError(t, call, -32602)
			}
		})
	}
}

// lockedBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
