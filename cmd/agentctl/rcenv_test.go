package main

// The isolated environment in which the tests run the real agentctl binary
// (see realclient_test.go).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/agentctl/agentctl/internal/testkit"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
	t      testing.TB
	bin    string
	root   string
	state  string // AGENTCTL_STATE_DIR of the CLI commands
	home   string // HOME
	config string // XDG_CONFIG_HOME (user agent definitions live under it)
	work   string // the working directory and --workspace of the commands
}

func newRCEnv(t testing.TB) *rcEnv {
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
	return e.runEnv(ctx, nil, args...)
}

// runEnv is [rcEnv.run] with variables added to the CLI's environment.
func (e *rcEnv) runEnv(ctx context.Context, extra []string, args ...string) rcResult {
	e.t.Helper()
	cmd := exec.CommandContext(ctx, e.bin, args...)
	cmd.Env = append(e.cliEnv(), extra...)
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
	// Token is the instance's bearer token, which only create prints.
	Token string `json:"token"`
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
	instanceTokens.Store(rec.ID, rec.Token)
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

// rcEvent is one line of `instance events -o jsonl`.
type rcEvent struct {
	Seq      int64    `json:"seq"`
	Instance string   `json:"instance_id"`
	Tool     string   `json:"tool"`
	Status   string   `json:"status"`
	Message  string   `json:"message"`
	Percent  *float64 `json:"percent,omitempty"`
	RunID    string   `json:"run_id,omitempty"`
}

func (ev rcEvent) String() string {
	b, _ := json.Marshal(ev)
	return string(b)
}

func (e *rcEnv) events(ctx context.Context, id string) []rcEvent {
	e.t.Helper()
	out := e.mustRun(ctx, "instance", "events", id, "-o", "jsonl")
	var evs []rcEvent
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var ev rcEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			e.t.Fatalf("instance events -o jsonl: line %q is not JSON: %v", line, err)
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
	ent := nativeEntry(t, rec)
	if !filepath.IsAbs(ent.Command) {
		t.Fatalf("%s: command %q is not an absolute path; the client may start it from any directory", rec.MCPConfigPath, ent.Command)
	}
	return ent.Command, ent.Args
}

// nativeEntry is rec's entry in the mcpServers of its JSON client
// configuration, which must be its only one.
func nativeEntry(t *testing.T, rec rcRecord) (ent struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
}) {
	t.Helper()
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
	e, ok := cfg.MCPServers[rec.ServerName]
	if !ok || len(cfg.MCPServers) != 1 {
		t.Fatalf("%s: want exactly one mcpServers entry %q, got:\n%s", rec.MCPConfigPath, rec.ServerName, data)
	}
	ent.Command, ent.Args = e.Command, e.Args
	return ent
}

// lockedBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type lockedBuffer = testkit.Buffer

// awaitQuestion polls the real binary until instance id has exactly one
// open question, and returns it; it fails the test if run (the client
// asking) ends first.
func (e *rcEnv) awaitQuestion(ctx context.Context, id string, run *tsRun) rcQuestion {
	e.t.Helper()
	for {
		qs := e.questions(ctx, id, false)
		if len(qs) > 1 {
			e.t.Fatalf("want at most one open question, got %+v", qs)
		}
		if len(qs) == 1 {
			return qs[0]
		}
		select {
		case <-run.done:
			e.t.Fatalf("the client finished before a question was open\nstdout:\n%s\nstderr:\n%s", run.stdout.String(), run.stderr.String())
		case <-ctx.Done():
			e.t.Fatalf("no open question appeared: %v", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// servePipes is `agentctl mcp serve` started on pipes of its own, which the
// test writes and reads as a client would, byte for byte.
type servePipes struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *lockedBuffer
}

// startServePipes starts `agentctl mcp serve --instance id` with args.
func (e *rcEnv) startServePipes(id string, args ...string) *servePipes {
	e.t.Helper()
	cmd := exec.Command(e.bin, append([]string{"mcp", "serve", "--instance", id}, args...)...)
	cmd.Env, cmd.Dir = e.cliEnv(), e.work
	p := &servePipes{cmd: cmd, stderr: &lockedBuffer{}}
	cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		e.t.Fatal(err)
	}
	if p.stdout, err = cmd.StdoutPipe(); err != nil {
		e.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	return p
}
