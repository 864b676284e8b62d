package main

// `agentctl serve` through the real binary: the TypeScript client (protocol
// 2025-11-25, the newest its SDK 1.32.2 speaks) and the go-sdk client
// (2026-07-28, stateless) over HTTP, the refusals, SIGTERM and isolation.
// Each request carries the token `instance create` printed for its
// instance (instanceTokens).

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// instanceTokens holds the bearer token of every instance the tests made,
// by id, as `instance create -o json` printed it (see [rcEnv.create]).
var instanceTokens sync.Map

// tokenOf is the token of the instance whose URL (or path) is url.
func tokenOf(url string) string {
	_, rest, _ := strings.Cut(url, "/instances/")
	id, _, _ := strings.Cut(rest, "/")
	v, _ := instanceTokens.Load(id)
	s, _ := v.(string)
	return s
}

// daemonRun is a running `agentctl serve`.
type daemonRun struct {
	t      testing.TB
	cmd    *exec.Cmd
	addr   string
	stderr *lockedBuffer
	done   chan error
}

// startServe starts `agentctl serve --listen 127.0.0.1:0 args...` in e and
// waits for it to say where it listens.
func startServe(ctx context.Context, e *rcEnv, args ...string) *daemonRun {
	e.t.Helper()
	cmd := exec.CommandContext(ctx, e.bin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env, cmd.Dir = e.cliEnv(), e.work
	pr, pw := io.Pipe()
	d := &daemonRun{t: e.t, cmd: cmd, stderr: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = io.MultiWriter(d.stderr, pw)
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() {
		d.done <- cmd.Wait()
		pw.Close()
	}()
	e.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-d.done
		d.done <- nil
	})
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "serving every instance at http://"); ok {
			d.addr, _, _ = strings.Cut(rest, "/")
			break
		}
	}
	go io.Copy(io.Discard, pr)
	if d.addr == "" {
		e.t.Fatalf("agentctl serve did not say where it listens:\n%s", d.stderr.String())
	}
	return d
}

func (d *daemonRun) url(id string) string { return "http://" + d.addr + "/instances/" + id + "/mcp" }

// stop sends SIGTERM and returns the exit code.
func (d *daemonRun) stop() int {
	d.t.Helper()
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	err := <-d.done
	d.done <- err
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		d.t.Fatal(err)
	}
	return 0
}

func httpPlan(url string, steps ...tsStep) tsPlan {
	return tsPlan{Args: []string{}, URL: url, Headers: map[string]string{"Authorization": "Bearer " + tokenOf(url)}, Steps: steps}
}

// bearerTransport sends the token of the instance a request is for.
type bearerTransport struct{}

func (bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tokenOf(r.URL.Path))
	return http.DefaultTransport.RoundTrip(r)
}

// goConnect connects the go-sdk client to url in protocol version (empty:
// its latest, 2026-07-28, stateless).
func goConnect(ctx context.Context, t *testing.T, url, version string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "go-client", Version: "v1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{}}},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect to %s (%q): %v", url, version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// The same daemon presents each instance's names for its own client: an
// Auggie instance's suffix stripped, a Claude Code instance's canonical, in
// both protocol eras.
func TestServeHTTPPresentsNamesPerInstance(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	aug := e.create(ctx, "--agent", "auggie", "--workspace", e.work)
	cc := e.create(ctx, "--agent", "claude-code", "--workspace", e.work)
	d := startServe(ctx, e)
	for _, c := range []struct {
		rec  rcRecord
		want string
	}{{aug, "get_instance"}, {cc, "get_instance_agentctl"}} {
		// The TypeScript SDK in both eras: 1.32.2 (2025-11-25, sessions)
		// and its v2 client package pinned to 2026-07-28 (stateless).
		for _, era := range []string{"", "2026-07-28"} {
			plan := httpPlan(d.url(c.rec.ID), tsStep{Op: "list"}, tsStep{Op: "call", Name: c.want})
			plan.Era = era
			out := runTS(ctx, t, plan, e.work, e.clientEnv())
			if want := cmp.Or(era, "2025-11-25"); out.Server.ProtocolVersion != want {
				t.Errorf("the TypeScript client negotiated %q, want %s", out.Server.ProtocolVersion, want)
			}
			if names := listNames(t, out.result(t, 0, "list")); !slices.Contains(names, c.want) {
				t.Errorf("%s over HTTP (TypeScript, %s) lists %v, want %s", c.rec.Agent, out.Server.ProtocolVersion, names, c.want)
			}
			var got instanceOut
			structured(t, out.result(t, 1, "call"), &got)
			if got.ID != c.rec.ID {
				t.Errorf("get_instance on %s's URL answered for %q", c.rec.ID, got.ID)
			}
		}
		cs := goConnect(ctx, t, d.url(c.rec.ID), "")
		if v := cs.InitializeResult().ProtocolVersion; v < "2026-07-28" {
			t.Errorf("the go-sdk client negotiated %s, want the stateless era", v)
		}
		if names := testkit.ToolNames(ctx, t, cs); !slices.Contains(names, c.want) {
			t.Errorf("%s over HTTP (go-sdk, 2026-07-28) lists %v, want %s", c.rec.Agent, names, c.want)
		}
	}
	if code := d.stop(); code != 0 {
		t.Errorf("SIGTERM: exit %d, want 0\n%s", code, d.stderr.String())
	}
	for _, tok := range []string{aug.Token, cc.Token} {
		if tok == "" || strings.Contains(d.stderr.String(), tok) {
			t.Errorf("instance create printed no token, or the token is in the daemon's log:\n%s", d.stderr.String())
		}
	}
}

func rawRequest(t *testing.T, method, url, body string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	return res.StatusCode, string(b)
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`

func TestServeHTTPRefuses(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	rec := e.create(ctx, "--agent", "claude-code", "--workspace", e.work)
	doomed := e.create(ctx, "--agent", "claude-code", "--workspace", e.work)
	d := startServe(ctx, e, "--max-body", "1KiB")
	auth := map[string]string{"Authorization": "Bearer " + rec.Token}
	other := map[string]string{"Authorization": "Bearer " + doomed.Token}
	with := func(m map[string]string) map[string]string {
		out := map[string]string{"Authorization": "Bearer " + rec.Token}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"pad":"` + strings.Repeat("x", 2048) + `"}}}`
	for _, c := range []struct {
		name string
		url  string
		body string
		hdr  map[string]string
		want int
	}{
		{"the right token", d.url(rec.ID), initializeBody, auth, 200},
		{"no token", d.url(rec.ID), initializeBody, nil, 401},
		{"a wrong token", d.url(rec.ID), initializeBody, map[string]string{"Authorization": "Bearer nope"}, 401},
		{"another instance's token", d.url(rec.ID), initializeBody, other, 401},
		{"the token cut short", d.url(rec.ID), initializeBody, map[string]string{"Authorization": "Bearer " + rec.Token[:len(rec.Token)-1]}, 401},
		{"no token, unknown instance", d.url("01zzzzzzzzzzzzzzzzzzzzzzzz"), initializeBody, nil, 401},
		// A token opens its own instance's URL only: another URL, known or
		// not, is 401, so a token tells nothing of other instances.
		{"unknown instance", d.url("01zzzzzzzzzzzzzzzzzzzzzzzz"), initializeBody, auth, 401},
		{"a label instead of the id", d.url(rec.ID[:8]), initializeBody, auth, 401},
		{"a bad Host", d.url(rec.ID), initializeBody, with(map[string]string{"Host": "rebind.attacker.example"}), 403},
		{"a cross-origin POST", d.url(rec.ID), initializeBody, with(map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}), 403},
		{"an oversized body", d.url(rec.ID), big, auth, 413},
	} {
		code, body := rawRequest(t, http.MethodPost, c.url, c.body, c.hdr)
		if code != c.want {
			t.Errorf("%s: %d, want %d: %s", c.name, code, c.want, body)
		}
	}
	code, body := rawRequest(t, http.MethodGet, "http://"+d.addr+"/health", "", nil)
	if code != 200 || !strings.Contains(body, `"instances": 2`) || strings.Contains(body, rec.ID) {
		t.Errorf("GET /health: %d %s", code, body)
	}

	// A deleted instance: its open session ends, and its token (deleted
	// with it) opens nothing any more.
	cs := goConnect(ctx, t, d.url(doomed.ID), "2025-11-25")
	testkit.ToolNames(ctx, t, cs)
	// Its endpoint holds the serve lock: a plain delete refuses.
	if res := e.run(ctx, "instance", "delete", doomed.ID); res.code == 0 {
		t.Errorf("instance delete of a served instance succeeded without --force\n%s", res)
	}
	e.mustRun(ctx, "instance", "delete", doomed.ID, "--force")
	awaitStatus(ctx, t, d.url(doomed.ID), other, 401) // within the token cache's second
	if _, err := cs.ListTools(ctx, nil); err == nil {
		t.Error("the deleted instance's session still answers")
	}
	if code := d.stop(); code != 0 {
		t.Errorf("SIGTERM: exit %d\n%s", code, d.stderr.String())
	}
}

// SIGTERM while ask_user_question waits: the call is answered with an
// error, the daemon exits 0, and the question is cancelled, not left open.
func TestServeHTTPSIGTERMDuringAQuestion(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	rec := e.create(ctx, "--agent", "claude-code", "--workspace", e.work, "--question-timeout", "1h")
	d := startServe(ctx, e, "--grace", "300ms")
	run := askOverHTTP(ctx, t, e, d, rec, "Deploy?")
	if code := d.stop(); code != 0 {
		t.Errorf("SIGTERM: exit %d, want 0\n%s", code, d.stderr.String())
	}
	out := run.wait()
	r := out.result(t, 0, "call")
	if r.Error == nil || !strings.Contains(r.Error.Message, "server is closing") {
		t.Errorf("the waiting call ended with %s, want the closing error", r)
	}
	qs := e.questions(ctx, rec.ID, true)
	if len(qs) != 1 || qs[0].Status != "cancelled" || qs[0].Text != "Deploy?" {
		t.Errorf("after SIGTERM the store holds %+v, want the question, cancelled", qs)
	}
	// The event says the endpoint stopped, not that the client stopped
	// waiting.
	var why string
	for _, ev := range e.events(ctx, rec.ID) {
		if ev.Status == "unanswered" {
			why = ev.Message
		}
	}
	if !strings.Contains(why, "the endpoint stopped (interrupted by terminated) before anyone answered") {
		t.Errorf("the unanswered event says %q, want that the endpoint stopped", why)
	}
}

// An external server that crashes in one instance leaves another
// instance's session untouched.
func TestServeHTTPUpstreamCrashIsIsolated(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	spec := fmt.Sprintf(`{"command":%q,"args":["-misbehave","-tools","1"]}`, serverBin(t))
	a := e.create(ctx, "--agent", "claude-code", "--workspace", e.work, "--mcp-json", "up="+spec)
	b := e.create(ctx, "--agent", "claude-code", "--workspace", e.work, "--mcp-json", "up="+spec)
	d := startServe(ctx, e)
	csA := goConnect(ctx, t, d.url(a.ID), "2025-11-25")
	csB := goConnect(ctx, t, d.url(b.ID), "2025-11-25")
	call := func(cs *mcp.ClientSession, name string) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
	}
	if res, err := call(csB, "tool_0"); err != nil || res.IsError {
		t.Fatalf("B's tool before the crash: %v %v", res, err)
	}
	if res, err := call(csA, "crash"); err == nil && !res.IsError {
		t.Errorf("A's crash tool answered %v", res.Content)
	}
	for i := range 3 {
		if res, err := call(csB, "tool_0"); err != nil || res.IsError {
			t.Fatalf("B's tool after A's server crashed (call %d): %v %v", i, res, err)
		}
	}
	if names := testkit.ToolNames(ctx, t, csA); !slices.Contains(names, "get_instance_agentctl") {
		t.Errorf("A's session after its server crashed: %v", names)
	}
}

// Listening beyond loopback needs --allow-remote, and then warns.
func TestServeRemoteNeedsAFlag(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	rec := e.create(ctx, "--agent", "claude-code", "--workspace", e.work)
	res := e.run(ctx, "serve", "--listen", "0.0.0.0:0")
	if res.code != ExitUsage || !strings.Contains(res.stderr, "--allow-remote") {
		t.Errorf("want a usage error naming --allow-remote\n%s", res)
	}
	res = e.run(ctx, "mcp", "serve", "--instance", rec.ID, "--http", "0.0.0.0:0")
	if res.code != ExitUsage || !strings.Contains(res.stderr, "--allow-remote") {
		t.Errorf("mcp serve --http: want a usage error naming --allow-remote\n%s", res)
	}
	cmd := exec.CommandContext(ctx, e.bin, "mcp", "serve", "--instance", rec.ID, "--http", "0.0.0.0:0", "--allow-remote")
	cmd.Env, cmd.Dir = e.cliEnv(), e.work
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.HasPrefix(sc.Text(), "serving instance ") {
			break
		}
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	go io.Copy(io.Discard, stderr)
	if err := cmd.Wait(); err != nil {
		t.Errorf("mcp serve --http after SIGTERM: %v", err)
	}
	text := strings.Join(lines, "\n")
	if !strings.Contains(text, "warning: listening on") || !strings.Contains(text, "serving instance "+rec.ID+" at http://") {
		t.Errorf("stderr:\n%s", text)
	}
}

// When an external server comes up late, tools/list_changed reaches the
// clients of both eras on one instance's URL: the TypeScript client's
// session (2025-11-25) and the go-sdk client's subscriptions/listen stream
// (2026-07-28, stateless).
func TestServeHTTPListChangedReachesBothEras(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	gate := filepath.Join(e.root, "let-the-server-start")
	spec, _ := json.Marshal(map[string]any{"command": serverBin(t), "args": []string{"-start-gate", gate}, "timeout": "1h"})
	rec := e.create(ctx, "--agent", "copilot-cli", "--workspace", e.work, "--mcp-json", "slow="+string(spec))
	d := startServe(ctx, e)
	changed := make(chan struct{}, 8)
	c := mcp.NewClient(&mcp.Implementation{Name: "go-client", Version: "v1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: d.url(rec.ID), HTTPClient: &http.Client{Transport: bearerTransport{}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v < "2026-07-28" {
		t.Fatalf("the go-sdk client negotiated %s", v)
	}
	if names := testkit.ToolNames(ctx, t, cs); slices.Contains(names, "echo") {
		t.Fatalf("the gated server's tools are listed before it started: %v", names)
	}
	plan := httpPlan(d.url(rec.ID), tsStep{Op: "list"}, tsStep{Op: "touch", Path: gate}, tsStep{Op: "await_list_changed"}, tsStep{Op: "list"})
	plan.TimeoutMs = 60_000
	out := runTS(ctx, t, plan, e.work, e.clientEnv())
	if !out.result(t, 2, "await_list_changed").Received {
		t.Error("the TypeScript client (2025-11-25) got no tools/list_changed")
	}
	if names := listNames(t, out.result(t, 3, "list")); !slices.Contains(names, "echo") {
		t.Errorf("the TypeScript client's list after the change: %v", names)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("the go-sdk client (2026-07-28) got no tools/list_changed")
	}
	if names := testkit.ToolNames(ctx, t, cs); !slices.Contains(names, "echo") {
		t.Errorf("the go-sdk client's list after the change: %v", names)
	}
}

// TestServeHTTPClientConfig: the configuration `instance create --transport
// http` writes for Claude Code (url and Authorization header) is enough
// for a real client to reach the instance through `agentctl serve`, and
// after `instance token rotate` the old header is refused and the
// rewritten file works.
func TestServeHTTPClientConfig(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	d := startServe(ctx, e)
	rec := e.create(ctx, "--agent", "claude-code", "--workspace", e.work, "--transport", "http", "--url", "http://"+d.addr+"/instances/{id}/mcp")
	read := func() (url string, headers map[string]string) {
		t.Helper()
		data, err := os.ReadFile(rec.MCPConfigPath)
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			MCPServers map[string]struct {
				Type    string            `json:"type"`
				URL     string            `json:"url"`
				Headers map[string]string `json:"headers"`
			} `json:"mcpServers"`
		}
		if err := json.Unmarshal(data, &cfg); err != nil {
			t.Fatal(err)
		}
		s := cfg.MCPServers[rec.ServerName]
		if s.Type != "http" || s.URL != d.url(rec.ID) {
			t.Fatalf("%s: entry %+v, want type http and the daemon's URL", rec.MCPConfigPath, s)
		}
		return s.URL, s.Headers
	}
	// lists runs the TypeScript client with only what the file says.
	lists := func(when string) {
		t.Helper()
		url, headers := read()
		out := runTS(ctx, t, tsPlan{Args: []string{}, URL: url, Headers: headers, Steps: []tsStep{{Op: "list"}}}, e.work, e.clientEnv())
		if names := listNames(t, out.result(t, 0, "list")); !slices.Contains(names, "get_instance_agentctl") {
			t.Fatalf("%s, the configuration's URL and header list %v", when, names)
		}
	}
	lists("after create")
	url, headers := read()

	e.mustRun(ctx, "instance", "token", "rotate", rec.ID)
	// The daemon trusts a token it accepted for a second (tokenCacheTTL)
	// without asking the store again: the old one is refused after that.
	awaitStatus(ctx, t, url, headers, 401)
	lists("after token rotate")
}

// TestServeHTTPRotateEndsTheOldTokensSessions: `instance token rotate`
// ends what the old token opened: a session's GET stream of the server's
// messages (which carries a question's elicitation and the tool list's
// changes) ends within a poll of the daemon, and a change made after it
// reaches nobody through it; the session is gone (404). A session opened
// with the new token goes on.
func TestServeHTTPRotateEndsTheOldTokensSessions(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	d := startServe(ctx, e)
	rec := e.create(ctx, "--agent", "claude-code", "--workspace", e.work, "--transport", "http", "--url", "http://"+d.addr+"/instances/{id}/mcp")
	u := d.url(rec.ID)
	var lastBody string
	post := func(token, sid, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		lastBody = string(b)
		return res
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	open := func(token string) (sid string, stream *lockedBuffer, ended chan struct{}) {
		t.Helper()
		res := post(token, "", initialize)
		sid = res.Header.Get("Mcp-Session-Id")
		if res.StatusCode != 200 || sid == "" {
			t.Fatalf("initialize: %d, session %q", res.StatusCode, sid)
		}
		if res := post(token, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); res.StatusCode != http.StatusAccepted {
			t.Fatalf("notifications/initialized: %d", res.StatusCode)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		req.Header.Set("Accept", "text/event-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("GET stream: %v %v", res, err)
		}
		stream, ended = &lockedBuffer{}, make(chan struct{})
		go func() {
			defer close(ended)
			defer res.Body.Close()
			io.Copy(stream, res.Body)
		}()
		return sid, stream, ended
	}
	oldSID, oldStream, oldEnded := open(rec.Token)

	var rot struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal([]byte(e.mustRun(ctx, "instance", "token", "rotate", rec.ID, "-o", "json")), &rot); err != nil || rot.Token == "" {
		t.Fatalf("rotate -o json: %v", err)
	}
	rotated := time.Now()
	select {
	case <-oldEnded:
		if took := time.Since(rotated); took > 2*time.Second {
			t.Logf("the old token's stream ended %s after the rotation (a loaded machine?)", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the GET stream opened with the old token is still open 10s after the rotation:\n%s", oldStream.String())
	}
	// The session is gone: the old token is refused (401), and the new one
	// does not reach the old session either (404: initialize again).
	awaitStatus(ctx, t, u, map[string]string{"Authorization": "Bearer " + rec.Token}, 401)
	// The revocation starts the session's close; until the close is done
	// (a loaded machine may take a while), its requests are answered with
	// the error that it ended, never served.
	for {
		res := post(rot.Token, oldSID, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		if res.StatusCode == http.StatusNotFound {
			break
		}
		if res.StatusCode != http.StatusOK || !strings.Contains(lastBody, "the session was ended") || strings.Contains(lastBody, `"tools"`) {
			t.Fatalf("the old session with the new token: %d %s, want 404 (the session ended) or, while it closes, the error saying so", res.StatusCode, lastBody)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the old session is still open: %d %s", res.StatusCode, lastBody)
		case <-time.After(20 * time.Millisecond):
		}
	}

	// A session of the new token is not ended, and gets the change of the
	// tool list that the old stream no longer carries.
	_, newStream, newEnded := open(rot.Token)
	time.Sleep(2500 * time.Millisecond) // two polls of the daemon
	select {
	case <-newEnded:
		t.Fatalf("the new token's stream ended:\n%s", newStream.String())
	default:
	}
	kb := t.TempDir()
	if err := os.WriteFile(filepath.Join(kb, "a.md"), []byte("# a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.mustRun(ctx, "instance", "mount", "add", rec.ID, "--kb", "docs="+kb, "--yes")
	testkit.Eventually(t, "the change of the tool list on the new session's stream", func() bool {
		return strings.Contains(newStream.String(), "notifications/tools/list_changed")
	})
	if strings.Contains(oldStream.String(), "notifications/tools/list_changed") {
		t.Errorf("the old token's stream got the change made after the rotation:\n%s", oldStream.String())
	}
}

// TestServeHTTPSecondSignal: a second SIGTERM during the graceful stop ends
// the daemon at once, without waiting out --grace.
func TestServeHTTPSecondSignal(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	rec := e.create(ctx, "--agent", "claude-code", "--workspace", e.work, "--question-timeout", "1h")
	d := startServe(ctx, e, "--grace", "1h")
	askOverHTTP(ctx, t, e, d, rec, "Deploy?")
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	// The graceful stop waits for the question (--grace 1h); a second
	// signal, once the first is being acted on, ends it.
	for {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-d.done:
			d.done <- err
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 143 {
				t.Fatalf("after a second SIGTERM: %v, want exit 143\n%s", err, d.stderr.String())
			}
			if !strings.Contains(d.stderr.String(), "stopping now") {
				t.Errorf("stderr does not say so:\n%s", d.stderr.String())
			}
			return
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			t.Fatalf("the daemon did not stop on a second SIGTERM:\n%s", d.stderr.String())
		}
	}
}

// askOverHTTP has the TypeScript client call ask_user_question on rec's
// URL and returns once the question is in the store (the call waiting).
func askOverHTTP(ctx context.Context, t *testing.T, e *rcEnv, d *daemonRun, rec rcRecord, question string) *tsRun {
	t.Helper()
	run := startTS(ctx, t, httpPlan(d.url(rec.ID), tsStep{Op: "call", Name: "ask_user_question_agentctl", Arguments: map[string]any{"question": question}}), e.work, e.clientEnv())
	for len(e.questions(ctx, rec.ID, false)) == 0 {
		select {
		case <-run.done:
			t.Fatalf("the client ended before its question reached the store:\n%s\n%s", run.stdout.String(), run.stderr.String())
		case <-ctx.Done():
			t.Fatal("the question never reached the store")
		case <-time.After(20 * time.Millisecond):
		}
	}
	return run
}

// awaitStatus posts an initialize to url with hdr until it is answered
// with want (a change the daemon notices within a second), or the test's
// deadline passes.
func awaitStatus(ctx context.Context, t *testing.T, url string, hdr map[string]string, want int) {
	t.Helper()
	for {
		code, body := rawRequest(t, http.MethodPost, url, initializeBody, hdr)
		if code == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s still answers %d, want %d: %s", url, code, want, body)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
