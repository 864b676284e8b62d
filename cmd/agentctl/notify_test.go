package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/cmd/internal/notify"
	"github.com/agentctl/agentctl/instance"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hookReceiver is a webhook receiver for the tests: it records every
// request, checks its signature with its secret, and answers 200.
type hookReceiver struct {
	*httptest.Server
	secret string

	mu   sync.Mutex
	reqs []hookRequest
	got  chan hookRequest
}

type hookRequest struct {
	at       time.Time
	delivery string
	event    string
	signed   bool // the signature verifies with the receiver's secret
	body     []byte
}

func newHookReceiver(t *testing.T, secret string) *hookReceiver {
	t.Helper()
	h := &hookReceiver{secret: secret, got: make(chan hookRequest, 100)}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := hookRequest{at: time.Now(), delivery: r.Header.Get(notify.HeaderDelivery), event: r.Header.Get(notify.HeaderEvent), body: body,
			signed: r.Header.Get(notify.HeaderSignature) == notify.Sign(secret, body)}
		h.mu.Lock()
		h.reqs = append(h.reqs, req)
		h.mu.Unlock()
		h.got <- req
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookReceiver) requests() []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.reqs)
}

// next waits for the receiver's next request.
func (h *hookReceiver) next(t *testing.T, within time.Duration) hookRequest {
	t.Helper()
	select {
	case r := <-h.got:
		return r
	case <-time.After(within):
		t.Fatalf("no notification came within %s", within)
		return hookRequest{}
	}
}

// TestNotifyConfigFile: the [[notify]] tables are decoded strictly; a bad
// value is an error naming the file, the table and the key.
func TestNotifyConfigFile(t *testing.T) {
	cf, err := decodeConfig(`
base_url = "https://agents.example.com"

[[notify]]
url    = "https://hooks.example.com/agentctl"
events = ["question", "failed"]
secret = "env:NOTIFY_KEY"

[[notify]]
url    = "https://hooks.slack.com/services/T/B/X"
format = "slack"
secret = "literal-key"
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.notify) != 2 || cf.values[keyBaseURL] != "https://agents.example.com" {
		t.Fatalf("decoded %+v", cf)
	}
	for _, tc := range []struct{ file, want string }{
		{"[[notify]]\nevents = [\"question\"]", "[[notify]] #1: url is missing"},
		{"[[notify]]\nurl = \"hooks.example.com\"", `[[notify]] #1: url "hooks.example.com": write an absolute http:// or https:// URL`},
		{"[[notify]]\nurl = \"https://a/\"\n[[notify]]\nurl = \"https://b/\"\nevents = [\"questions\"]",
			`[[notify]] #2: events: unknown event "questions"; use question, answered, run_started, run_ended, failed`},
		{"[[notify]]\nurl = \"https://a/\"\nevents = []", "[[notify]] #1: events is empty"},
		{"[[notify]]\nurl = \"https://a/\"\nformat = \"teams\"", `[[notify]] #1: format "teams": use "json" (the default) or "slack"`},
		{"[[notify]]\nurl = \"https://a/\"\nsecret = \"\"", "[[notify]] #1: secret is empty"},
		{"[[notify]]\nurl = \"https://a/\"\nsecret = \"env:NOT A NAME\"", `[[notify]] #1: secret "env:NOT A NAME": env: takes the name`},
		{"[[notify]]\nurl = \"https://a/?k=1\"\n[[notify]]\nurl = \"https://a/?k=1\"", `[[notify]] #2: url "https://a/" is #1's too`},
		{"[[notify]]\nurl = \"https://a/\"\nurls = \"x\"", `[[notify]] #1: unknown key "urls" (a [[notify]] table's keys: url, events, format, secret)`},
		{"[[notify]]\nurl = \"https://a/\"\n[[notify]]\nurl = \"https://b/\"\nevnets = [\"question\"]", `[[notify]] #2: unknown key "evnets"`},
		{"[[notify]]\nurl = \"https://a/\"\nevents = \"question\"", "notify:"},
		{"notify = \"https://a/\"", "notify:"},
	} {
		if _, err := decodeConfig(tc.file); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.file, err, tc.want)
		}
	}
	if _, err := decodeConfig("[[notify]]\nurl = \"https://a/\"\nsecret = \"env:X\"\nform = \"json\""); err == nil ||
		!strings.Contains(err.Error(), `[[notify]] #1: unknown key "form"`) || !strings.Contains(err.Error(), "format") {
		t.Errorf("unknown key: %v", err)
	}

	// Through the settings: the error names the file; the targets read
	// their secrets from the environment.
	dir := t.TempDir()
	file := filepath.Join(dir, "config.toml")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("[[notify]]\nurl = \"https://a/\"\nformat = \"xml\"\n")
	c := newConfig(func(k string) string { return map[string]string{"AGENTCTL_CONFIG": file}[k] })
	err = c.load(nil)
	if err == nil || !strings.Contains(err.Error(), file+": [[notify]] #1: format") || exitCode(context.Background(), err) != ExitInvalid {
		t.Fatalf("load: %v", err)
	}
	write("[[notify]]\nurl = \"https://a/\"\nsecret = \"env:NOTIFY_KEY\"\n[[notify]]\nurl = \"https://b/\"\nsecret = \"env:MISSING_KEY\"\nevents = [\"failed\"]\n[[notify]]\nurl = \"https://c/\"\nsecret = \"k\"\n[[notify]]\nurl = \"https://d/\"\n")
	c = newConfig(func(k string) string {
		return map[string]string{"AGENTCTL_CONFIG": file, "NOTIFY_KEY": "from-env"}[k]
	})
	if err := c.load(nil); err != nil {
		t.Fatal(err)
	}
	ts := c.NotifyTargets()
	if len(ts) != 4 || ts[0].Secret != "from-env" || ts[0].SecretErr != nil || ts[0].Format != notify.FormatJSON || ts[0].Events != nil ||
		ts[1].Secret != "" || ts[1].SecretErr == nil || !strings.Contains(ts[1].SecretErr.Error(), "MISSING_KEY is not set") ||
		!slices.Equal(ts[1].Events, []string{"failed"}) || ts[2].Secret != "k" || ts[3].Secret != "" || ts[3].SecretErr != nil {
		t.Fatalf("targets %+v", ts)
	}
}

// TestNotifyTestCommand: `notify test` sends a signed sample to every
// target that takes the event and prints each answer; --url picks one.
func TestNotifyTestCommand(t *testing.T) {
	h := newHookReceiver(t, "k")
	cfg := filepath.Join(t.TempDir(), "config.toml")
	content := "base_url = \"https://agents.example.com\"\n" +
		"[[notify]]\nurl = \"" + h.URL + "/json?token=planted\"\nsecret = \"env:NOTIFY_KEY\"\n" +
		"[[notify]]\nurl = \"" + h.URL + "/slack\"\nformat = \"slack\"\nsecret = \"k\"\n" +
		"[[notify]]\nurl = \"" + h.URL + "/failures\"\nevents = [\"failed\"]\n"
	if err := os.WriteFile(cfg, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newTestFactory(t, "AGENTCTL_CONFIG="+cfg, "NOTIFY_KEY=k")
	if err := runCommand(f, NewCmdNotifyTest(f.Factory, nil)); err != nil {
		t.Fatalf("notify test: %v\n%s%s", err, f.out, f.errOut)
	}
	out := f.out.String()
	if strings.Contains(out, "planted") || !strings.Contains(out, notify.Redact(h.URL+"/json")+"\tjson\tquestion\t200\tok\t") ||
		!strings.Contains(out, notify.Redact(h.URL+"/slack")+"\tslack\tquestion\t200\tok\t") || !strings.Contains(out, "not sent: it does not take question") {
		t.Errorf("output:\n%s", out)
	}
	reqs := h.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	for _, r := range reqs {
		if !r.signed || r.event != "question" || !strings.Contains(string(r.body), "test") {
			t.Errorf("request %+v %s", r, r.body)
		}
		var n instance.Notification
		if json.Unmarshal(r.body, &n) == nil && n.ID != "" && (n.ID != r.delivery || !n.Test || n.Question == nil ||
			n.Link != "https://agents.example.com/ui/instances/"+sampleInstance) {
			t.Errorf("json sample %s", r.body)
		}
	}

	f = newTestFactory(t, "AGENTCTL_CONFIG="+cfg, "NOTIFY_KEY=k")
	if err := runCommand(f, NewCmdNotifyTest(f.Factory, nil), "--event", "failed", "--url", h.URL+"/failures", "-o", "json"); err != nil {
		t.Fatalf("notify test --url: %v\n%s", err, f.errOut)
	}
	var res []notifyTestResult
	if err := json.Unmarshal(f.out.Bytes(), &res); err != nil || len(res) != 1 || res[0].Status != 200 || !res[0].OK || res[0].Event != "failed" {
		t.Fatalf("%v %+v", err, res)
	}
	if r := h.requests()[2]; r.event != "failed" || r.signed {
		t.Errorf("--url request %+v", r)
	}

	// A receiver that refuses: exit 1, its status shown.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "nope", http.StatusForbidden) }))
	defer bad.Close()
	f = newTestFactory(t)
	err := runCommand(f, NewCmdNotifyTest(f.Factory, nil), "--url", bad.URL)
	if exitCode(context.Background(), err) != ExitError || !strings.Contains(f.out.String(), "403") || !strings.Contains(f.out.String(), "nope") {
		t.Errorf("refused: %v\n%s", err, f.out)
	}
	// No target at all.
	f = newTestFactory(t)
	if err := runCommand(f, NewCmdNotifyTest(f.Factory, nil)); exitCode(context.Background(), err) != ExitInvalid || !strings.Contains(err.Error(), "no [[notify]] table") {
		t.Errorf("without targets: %v", err)
	}
	f = newTestFactory(t)
	if err := runCommand(f, NewCmdNotifyTest(f.Factory, nil), "--event", "asked"); exitCode(context.Background(), err) != ExitUsage {
		t.Errorf("--event asked: %v", err)
	}
}

// notifyEnv is a real-binary environment whose config file has the given
// [[notify]] tables (and base_url).
func notifyEnv(t *testing.T, tables string) *rcEnv {
	t.Helper()
	e := newRCEnv(t)
	dir := filepath.Join(e.config, "agentctl")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "base_url = \"https://agents.example.com\"\n" + tables
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

// serveMCP starts `agentctl mcp serve` of instance id with extra
// variables, connected to an MCP client (no elicitation: questions go to
// the store).
func serveMCP(t *testing.T, ctx context.Context, e *rcEnv, id string, extra ...string) (*mcp.ClientSession, *exec.Cmd, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(e.bin, "mcp", "serve", "--instance", id)
	cmd.Env, cmd.Dir = append(e.cliEnv(), extra...), e.work
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "notify-test", Version: "1"}, nil)
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	return sess, cmd, stderr
}

// notifyLog is `agentctl notify log -o json`.
func notifyLog(t *testing.T, ctx context.Context, e *rcEnv) []instance.OutboxRow {
	t.Helper()
	var rows []instance.OutboxRow
	if err := json.Unmarshal([]byte(e.mustRun(ctx, "notify", "log", "-o", "json")), &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// awaitLog polls `notify log` until cond holds.
func awaitLog(t *testing.T, ctx context.Context, e *rcEnv, what string, cond func([]instance.OutboxRow) bool) []instance.OutboxRow {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		rows := notifyLog(t, ctx, e)
		if cond(rows) {
			return rows
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: never; notify log: %+v", what, rows)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestNotifyQuestionEndToEnd: through the binary, a question the model
// asks with ask_user_question reaches the receiver within a second,
// signed, linking to the instance's page, without the instance's token
// or its mount's secret; a failure it reports follows; a target that does
// not take these events gets nothing; `notify log` lists the deliveries.
func TestNotifyQuestionEndToEnd(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	const secret, planted = "hook-key-1", "plantedMountSecret-8842"
	h := newHookReceiver(t, secret)
	other := newHookReceiver(t, "")
	e := notifyEnv(t, "[[notify]]\nurl = \""+h.URL+"/hook?token=plantedQuery\"\nevents = [\"question\", \"failed\"]\nsecret = \"env:NOTIFY_KEY\"\n"+
		"[[notify]]\nurl = \""+other.URL+"\"\nevents = [\"run_started\", \"run_ended\"]\n")
	rec := e.create(ctx, "--agent", "auggie", "--name", "fix-login", "--ask-via", "store",
		"--mcp-json", `web={"command":"/bin/true","env":{"API_KEY":"`+planted+`"}}`)
	// The outbox is looked at once a minute: a notification within the
	// bound below was sent as the question was asked.
	sess, _, stderr := serveMCP(t, ctx, e, rec.ID, "NOTIFY_KEY="+secret, testNotifyEnv+"=poll=1m")
	defer sess.Close()

	asked := time.Now()
	answered := make(chan error, 1)
	go func() {
		_, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user_question",
			Arguments: map[string]any{"question": "Ship it?", "choices": []string{"yes", "no"}}})
		answered <- err
	}()
	got := h.next(t, 20*time.Second)
	// Sent when the question is asked, not when the outbox is next looked
	// at; a loaded CI machine may take a few seconds, so the bound is
	// loose, and anything above 1 s is logged.
	if took := got.at.Sub(asked); took > 10*time.Second {
		t.Errorf("the notification came %s after the question, want it sent as the question is asked", took)
	} else if took > time.Second {
		t.Logf("the notification came %s after the question (a loaded machine?)", took)
	}
	if !got.signed || got.event != "question" {
		t.Errorf("request %+v", got)
	}
	for _, s := range []string{planted, rec.Token, secret, "plantedQuery"} {
		if s != "" && strings.Contains(string(got.body), s) {
			t.Errorf("the notification carries %q: %s", s, got.body)
		}
	}
	var n instance.Notification
	if err := json.Unmarshal(got.body, &n); err != nil {
		t.Fatal(err)
	}
	if n.ID != got.delivery || n.Instance.ID != rec.ID || n.Instance.Name != "fix-login" || n.Instance.Agent != "auggie" ||
		n.Question == nil || n.Question.Text != "Ship it?" || !slices.Equal(n.Question.Choices, []string{"yes", "no"}) ||
		n.Link != "https://agents.example.com/ui/instances/"+rec.ID {
		t.Errorf("notification %s", got.body)
	}
	e.mustRun(ctx, "instance", "answer", rec.ID, n.Question.ID, "yes")
	select {
	case err := <-answered:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ask_user_question did not return after the answer")
	}

	if _, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "report_progress",
		Arguments: map[string]any{"status": "failed", "message": "the tests do not pass"}}); err != nil {
		t.Fatal(err)
	}
	failed := h.next(t, 20*time.Second)
	if !failed.signed || failed.event != "failed" || !strings.Contains(string(failed.body), "the tests do not pass") {
		t.Errorf("failure %+v %s", failed, failed.body)
	}
	rows := awaitLog(t, ctx, e, "both delivered", func(rows []instance.OutboxRow) bool {
		return len(rows) == 2 && rows[0].Status == "delivered" && rows[1].Status == "delivered"
	})
	if rows[0].Event != "failed" || rows[1].Event != "question" || rows[1].ID != got.delivery || rows[1].Attempts != 1 ||
		rows[1].Target != notify.Redact(h.URL+"/hook") || rows[1].InstanceID != rec.ID {
		t.Errorf("notify log %+v", rows)
	}
	table := e.mustRun(ctx, "notify", "log")
	if !strings.Contains(table, got.delivery+"\tquestion\t"+rec.ID+"\t"+notify.Redact(h.URL+"/hook")+"\tdelivered\t1\t") || strings.Contains(table, "plantedQuery") {
		t.Errorf("notify log:\n%s", table)
	}
	if len(other.requests()) != 0 {
		t.Errorf("a target that takes neither event got %d", len(other.requests()))
	}
	if strings.Contains(stderr.String(), "component=notify") {
		t.Errorf("the endpoint warned:\n%s", stderr.String())
	}
}

// TestNotifyServeBaseURLFlag: a question asked through `agentctl serve
// --base-url URL` is notified with a link to URL's page of the instance:
// the flag reaches the notifications, as it reaches the login URL, and
// wins over the config file's base_url (flag > env > file: see
// TestConfigPrecedence).
func TestNotifyServeBaseURLFlag(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	h := newHookReceiver(t, "")
	e := notifyEnv(t, "[[notify]]\nurl = \""+h.URL+"\"\nevents = [\"question\"]\n") // base_url https://agents.example.com
	rec := e.create(ctx, "--agent", "claude-code", "--transport", "http", "--ask-via", "store")
	d := startServe(ctx, e, "--base-url", "https://flag.example:8443")
	cs := goConnect(ctx, t, d.url(rec.ID), "2025-06-18")
	answered := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user_question_agentctl", Arguments: map[string]any{"question": "Link?"}})
		answered <- err
	}()
	got := h.next(t, 30*time.Second)
	var n instance.Notification
	if err := json.Unmarshal(got.body, &n); err != nil {
		t.Fatal(err)
	}
	if want := "https://flag.example:8443/ui/instances/" + rec.ID; got.event != "question" || n.Link != want {
		t.Errorf("notification %s: want event question, link %s", got.body, want)
	}
	e.mustRun(ctx, "instance", "answer", rec.ID, n.Question.ID, "yes")
	select {
	case err := <-answered:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ask_user_question did not return after the answer")
	}
}

// TestNotifyKill9SameDelivery: an endpoint killed (SIGKILL) after the
// receiver got its POST, before it recorded the delivery, leaves the row
// pending; another endpoint delivers it again, under the same delivery
// id, once the lease runs out, so that the receiver, deduplicating by id,
// has one delivery.
func TestNotifyKill9SameDelivery(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	h := newHookReceiver(t, "k")
	e := notifyEnv(t, "[[notify]]\nurl = \""+h.URL+"\"\nsecret = \"k\"\nevents = [\"question\"]\n")
	rec := e.create(ctx, "--agent", "auggie", "--ask-via", "store")

	// The first endpoint sends, then sleeps before recording: killed then.
	sess, cmd, _ := serveMCP(t, ctx, e, rec.ID, testNotifyEnv+"=pause=1m,lease=1s")
	go func() {
		_, _ = sess.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user_question", Arguments: map[string]any{"question": "Ship it?"}})
	}()
	first := h.next(t, 20*time.Second)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	sess.Close()
	rows := notifyLog(t, ctx, e)
	if len(rows) != 1 || rows[0].Status != "pending" || rows[0].Attempts != 1 || rows[0].ID != first.delivery {
		t.Fatalf("after the kill: %+v", rows)
	}

	// Another endpoint (another process) delivers it after the lease.
	sess2, _, stderr2 := serveMCP(t, ctx, e, rec.ID, testNotifyEnv+"=poll=100ms")
	defer sess2.Close()
	second := h.next(t, 30*time.Second)
	rows = awaitLog(t, ctx, e, "delivered", func(rows []instance.OutboxRow) bool { return len(rows) == 1 && rows[0].Status == "delivered" })
	if second.delivery != first.delivery || string(second.body) != string(first.body) || !second.signed || rows[0].Attempts != 2 {
		t.Errorf("first %+v\nsecond %+v\nrow %+v\nstderr:\n%s", first, second, rows[0], stderr2.String())
	}
	distinct := map[string]bool{}
	for _, r := range h.requests() {
		distinct[r.delivery] = true
	}
	if len(h.requests()) != 2 || len(distinct) != 1 {
		t.Errorf("the receiver got %d requests of %d deliveries, want 2 of 1", len(h.requests()), len(distinct))
	}
}
