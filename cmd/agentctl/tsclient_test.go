package main

// The TypeScript MCP client (testdata/tsclient/client.mjs) as the tests
// drive it (see realclient_test.go).

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"testing"
	"time"
)

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
	Path      string `json:"path,omitempty"` // op touch
	// Present and Absent: op await_tools.
	Present []string `json:"present,omitempty"`
	Absent  []string `json:"absent,omitempty"`
	// Argv and Env: op exec (Env, when set, is the whole environment).
	Argv []string `json:"argv,omitempty"`
	Env  []string `json:"env,omitempty"`
}

type tsPlan struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
	// URL and Headers: streamable HTTP instead of a command (serve_http_test.go).
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Era "2026-07-28" speaks the stateless era (with URL), through the
	// SDK's v2 client package; empty speaks 2025-11-25.
	Era         string `json:"era,omitempty"`
	Elicitation any    `json:"elicitation"`
	// ElicitationDelayMs is how long the client's "person" takes to
	// answer an elicitation.
	ElicitationDelayMs int      `json:"elicitationDelayMs,omitempty"`
	TimeoutMs          int      `json:"timeoutMs"`
	Steps              []tsStep `json:"steps"`
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
	Result   *tsCallResult `json:"result"`
	Error    *tsError      `json:"error"`
	Received bool          `json:"received"` // ops await_list_changed, await_tools
	// Code, Stdout and Stderr: op exec.
	Code   *int   `json:"code"`
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
}

func (r tsResult) String() string {
	b, _ := json.Marshal(r)
	return string(b)
}

type tsOutput struct {
	Fatal  string `json:"fatal"`
	Server struct {
		Name            string `json:"name"`
		Version         string `json:"version"`
		ProtocolVersion string `json:"protocolVersion"`
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
