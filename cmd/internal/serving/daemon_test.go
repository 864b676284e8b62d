package serving_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/cmd/internal/provision"
	"github.com/agentctl/agentctl/cmd/internal/serving"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const token = "test-token-1234"

// world is a state directory with a store and a running daemon.
type world struct {
	t     testing.TB
	state string
	st    *instance.Store
	url   string
	stop  context.CancelCauseFunc
	done  chan error
}

func newWorld(t testing.TB, mod func(*serving.Options)) *world {
	t.Helper()
	w := &world{t: t, state: t.TempDir()}
	st, err := instance.Open(context.Background(), w.state)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	w.st = st
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := serving.Options{Store: st, Checker: staticToken(token), Listen: ln.Addr().String(),
		PollInterval: 20 * time.Millisecond, Grace: 200 * time.Millisecond, Endpoint: serving.EndpointOptions{Version: "test"}}
	if mod != nil {
		mod(&o)
	}
	d := serving.New(o)
	ctx, stop := context.WithCancelCause(context.Background())
	w.stop, w.done, w.url = stop, make(chan error, 1), "http://"+ln.Addr().String()
	go func() { w.done <- d.Serve(ctx, ln) }()
	t.Cleanup(func() {
		stop(errors.New("test over"))
		<-w.done
	})
	return w
}

func (w *world) create(agent string, mounts ...mount.Mount) *instance.Record {
	w.t.Helper()
	return w.createWith(agent, provision.CreateOptions{Mounts: mounts})
}

// createWith creates an instance of agent with o (its definition,
// workspace, executable and question timeout filled in).
func (w *world) createWith(agent string, o provision.CreateOptions) *instance.Record {
	w.t.Helper()
	cat, err := agents.Load(agents.LoadOptions{UserDir: filepath.Join(w.t.TempDir(), "none")})
	if err != nil {
		w.t.Fatal(err)
	}
	def, err := cat.Lookup(agent)
	if err != nil {
		w.t.Fatal(err)
	}
	rec, _, err := provision.Create(context.Background(), func(ctx context.Context) (*instance.Store, error) { return instance.Open(ctx, w.state) },
		func() provision.CreateOptions {
			o.Definition, o.Workspace, o.Executable, o.QuestionTimeout = def, w.t.TempDir(), "/opt/agentctl", time.Hour
			return o
		}())
	if err != nil {
		w.t.Fatal(err)
	}
	return rec
}

func (w *world) get(path, tok string) (int, http.Header, string) {
	w.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, w.url+path, nil)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

type bearer struct{ tok string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

func (w *world) connect(id, version string) *mcp.ClientSession {
	w.t.Helper()
	return w.connectRetries(id, version, -1)
}

// connectRetries connects with the transport's MaxRetries (0: the
// SDK's default, as clients run it).
func (w *world) connectRetries(id, version string, retries int) *mcp.ClientSession {
	w.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: w.url + "/instances/" + id + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: retries}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		w.t.Fatalf("connect to %s (%q): %v", id, version, err)
	}
	w.t.Cleanup(func() { cs.Close() })
	return cs
}

func TestTokenIsCheckedBeforeTheInstance(t *testing.T) {
	w := newWorld(t, nil)
	rec := w.create("claude-code")
	for _, c := range []struct {
		path, tok string
		want      int
	}{
		{"/instances/" + rec.ID + "/health", "", 401},
		{"/instances/" + rec.ID + "/health", "wrong", 401},
		{"/instances/01nosuchinstance0000000000/health", "", 401},
		{"/instances/01nosuchinstance0000000000/mcp", "wrong", 401},
		{"/instances/01nosuchinstance0000000000/mcp", token, 404},
		{"/instances/" + rec.ID + "/health", token, 200},
	} {
		code, hdr, body := w.get(c.path, c.tok)
		if code != c.want {
			t.Errorf("GET %s with token %q: %d, want %d: %s", c.path, c.tok, code, c.want, body)
		}
		if code == 401 && !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("401 without WWW-Authenticate: Bearer: %v", hdr)
		}
		if strings.Contains(body, token) {
			t.Errorf("the token is in an answer: %s", body)
		}
	}
}

func TestHealthSaysNothingOfInstances(t *testing.T) {
	w := newWorld(t, nil)
	w.create("auggie")
	w.create("claude-code")
	code, _, body := w.get("/health", "")
	var got map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &got) != nil {
		t.Fatalf("GET /health: %d %s", code, body)
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range got {
			if !yield(k) {
				return
			}
		}
	})
	if !slices.Equal(keys, []string{"instances", "status", "store", "store_ok", "version"}) || got["instances"] != 2.0 || got["status"] != "ok" ||
		got["store"] != "sqlite" || got["store_ok"] != true {
		t.Errorf("GET /health = %s", body)
	}
}

func TestInstanceHealthShowsPrefixesNotSecrets(t *testing.T) {
	w := newWorld(t, nil)
	kbDir := t.TempDir()
	os.WriteFile(filepath.Join(kbDir, "a.md"), []byte("# A\n"), 0o644)
	rec := w.create("auggie",
		mount.Mount{Kind: mount.KindKB, Name: "docs", Path: kbDir},
		mount.Mount{Kind: mount.KindServer, Name: "web", ToolPrefix: "w", Command: "/nonexistent/server", Env: map[string]string{"API_KEY": "SECRET-VALUE-42"}})
	check := func(running bool) {
		t.Helper()
		code, _, body := w.get("/instances/"+rec.ID+"/health", token)
		var h serving.InstanceHealth
		if code != 200 || json.Unmarshal([]byte(body), &h) != nil {
			t.Fatalf("health: %d %s", code, body)
		}
		if h.Running != running || h.ServerName != "agentctl" || h.Capability.Namespacing != agents.NamespacingSuffix || len(h.Mounts) != 2 {
			t.Errorf("health = %s", body)
		}
		if len(h.Mounts) == 2 && (h.Mounts[0].EffectivePrefix != "docs" || h.Mounts[0].PrefixOrigin != mount.OriginDerived ||
			h.Mounts[1].EffectivePrefix != "w" || h.Mounts[1].PrefixOrigin != mount.OriginExplicit) {
			t.Errorf("mounts = %+v", h.Mounts)
		}
		if len(h.Servers) != 1 || h.Servers[0].Name != "web" {
			t.Errorf("servers = %+v", h.Servers)
		}
		for _, secret := range []string{"SECRET-VALUE-42", "API_KEY", kbDir} {
			if strings.Contains(body, secret) {
				t.Errorf("health shows %q: %s", secret, body)
			}
		}
	}
	check(false)
	cs := w.connect(rec.ID, "2025-11-25")
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	check(true)
}

// TestInstanceHealthShowsAFailedServersStderr: a stdio server that fails
// is shown down with the last lines of its stderr, its secrets taken out.
func TestInstanceHealthShowsAFailedServersStderr(t *testing.T) {
	w := newWorld(t, nil)
	rec := w.create("claude-code", mount.Mount{Kind: mount.KindServer, Name: "web", Command: "/bin/sh",
		Args: []string{"-c", `echo "starting with API_KEY=$API_KEY" >&2; echo 'fatal: the API refused the key' >&2; exit 1`},
		Env:  map[string]string{"API_KEY": "SECRET-VALUE-42"}})
	cs := w.connect(rec.ID, "2025-11-25")
	if _, err := cs.ListTools(context.Background(), nil); err != nil { // after the server's first attempt
		t.Fatal(err)
	}
	var h serving.InstanceHealth
	deadline := time.Now().Add(time.Minute) // a backstop only
	for {
		code, _, body := w.get("/instances/"+rec.ID+"/health", token)
		if code != 200 || json.Unmarshal([]byte(body), &h) != nil || len(h.Servers) != 1 {
			t.Fatalf("health: %d %s", code, body)
		}
		if strings.Contains(body, "SECRET-VALUE-42") {
			t.Fatalf("health shows the secret: %s", body)
		}
		if h.Servers[0].State == "down" && len(h.Servers[0].StderrTail) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no failed server with its stderr: %s", body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := h.Servers[0].StderrTail[:2]; !slices.Equal(got, []string{"starting with API_KEY=<redacted>", "fatal: the API refused the key"}) {
		t.Errorf("stderr_tail = %q", got)
	}
}

// Each instance's URL presents names for its own client, in both eras.
func TestPresentationPerInstance(t *testing.T) {
	w := newWorld(t, nil)
	aug, cc := w.create("auggie"), w.create("claude-code")
	for _, version := range []string{"2025-11-25", ""} {
		if got := testkit.ToolNames(context.Background(), t, w.connect(aug.ID, version)); !slices.Contains(got, "get_instance") {
			t.Errorf("%q: auggie instance lists %v, want the suffix stripped (get_instance)", version, got)
		}
		if got := testkit.ToolNames(context.Background(), t, w.connect(cc.ID, version)); !slices.Contains(got, "get_instance_agentctl") {
			t.Errorf("%q: claude-code instance lists %v, want canonical names (get_instance_agentctl)", version, got)
		}
	}
}

func TestDeletedInstanceEndsItsSessions(t *testing.T) {
	w := newWorld(t, nil)
	rec, other := w.create("claude-code"), w.create("claude-code")
	cs, keep := w.connect(rec.ID, "2025-11-25"), w.connect(other.ID, "2025-11-25")
	if _, err := w.st.DeleteInstance(context.Background(), rec.ID, instance.DeleteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute) // a backstop only
	for {
		code, _, body := w.get("/instances/"+rec.ID+"/mcp", token)
		if code == 404 {
			if !strings.Contains(body, "was deleted") {
				t.Errorf("404 without saying why: %s", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the deleted instance's URL still answers %d", code)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := cs.ListTools(context.Background(), nil); err == nil {
		t.Error("the deleted instance's session still answers")
	}
	if got := testkit.ToolNames(context.Background(), t, keep); !slices.Contains(got, "get_instance_agentctl") {
		t.Errorf("the other instance's session: %v", got)
	}
}

func TestIdleEndpointStops(t *testing.T) {
	w := newWorld(t, func(o *serving.Options) { o.IdleStop = 50 * time.Millisecond })
	rec := w.create("claude-code")
	cs := w.connect(rec.ID, "")
	testkit.ToolNames(context.Background(), t, cs)
	deadline := time.Now().Add(time.Minute) // a backstop only
	for {
		_, _, body := w.get("/instances/"+rec.ID+"/health", token)
		if strings.Contains(body, `"running": false`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the idle endpoint still runs: %s", body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The next request builds it again.
	if got := testkit.ToolNames(context.Background(), t, cs); !slices.Contains(got, "get_instance_agentctl") {
		t.Errorf("after the idle stop: %v", got)
	}
}

// Stopping the daemon while ask_user_question waits answers the call with
// an error and leaves the question cancelled, never open.
func TestStopCancelsAWaitingQuestion(t *testing.T) {
	w := newWorld(t, nil)
	rec := w.create("claude-code")
	for _, version := range []string{"2025-11-25"} {
		cs := w.connectRetries(rec.ID, version, 0)
		errc := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_user_question_agentctl", Arguments: map[string]any{"question": "go?"}})
			errc <- err
		}()
		for {
			qs, err := w.st.Questions(context.Background(), rec.ID, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(qs) == 1 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		w.stop(errors.New("SIGTERM"))
		if err := <-w.done; err != nil {
			t.Errorf("Serve returned %v, want nil", err)
		}
		w.done <- nil // for the cleanup
		err := <-errc
		if err == nil || !strings.Contains(err.Error(), "server is closing") {
			t.Errorf("the waiting call ended with %v", err)
		}
		qs, _ := w.st.Questions(context.Background(), rec.ID, true)
		if len(qs) != 1 || qs[0].Status != "cancelled" {
			t.Errorf("questions after the stop: %+v", qs)
		}
	}
}

// TestStopTakesAnAnswerGivenDuringTheGrace: a question asked through the
// client (elicitation) whose person answers after the stop began, within
// the grace, gets that answer to the agent: the answer comes as a request
// of its own, which the stopping daemon still takes for a session under
// way; a new session is refused (503) meanwhile. The listener closed at
// once, and the call waited out the whole grace to fail.
func TestStopTakesAnAnswerGivenDuringTheGrace(t *testing.T) {
	w := newWorld(t, func(o *serving.Options) { o.Grace = time.Minute })
	rec := w.createWith("claude-code", provision.CreateOptions{AskVia: agents.AskViaClient})
	asked, answer := make(chan struct{}), make(chan struct{})
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			close(asked)
			<-answer // the person reads; the stop comes meanwhile
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "yes"}}, nil
		}})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: w.url + "/instances/" + rec.ID + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: 0}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var once sync.Once
	give := func() { once.Do(func() { close(answer) }) }
	defer give() // on failure too, so that the client can close
	type result struct {
		r   *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_user_question_agentctl", Arguments: map[string]any{"question": "go?"}})
		done <- result{r, err}
	}()
	<-asked
	w.stop(errors.New("SIGTERM"))
	// Stopping: a new session is refused, saying so.
	for {
		req, _ := http.NewRequest(http.MethodPost, w.url+"/instances/"+rec.ID+"/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("a new session while stopping: %v; want a 503", err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(body), "stopping") {
			break
		}
		time.Sleep(10 * time.Millisecond) // the stop has not begun yet
	}
	give()
	select {
	case r := <-done:
		if r.err != nil || r.r == nil || r.r.IsError || !strings.Contains(r.r.Content[0].(*mcp.TextContent).Text, "The person answered: yes") {
			t.Fatalf("the call answered during the grace ended with %v, %+v", r.err, r.r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the answer given during the grace did not reach the call")
	}
	if err := <-w.done; err != nil {
		t.Errorf("Serve returned %v, want nil", err)
	}
	w.done <- nil // for the cleanup
}

// staticToken is a [httpserve.TokenChecker] that accepts one token for
// every instance.
type staticToken string

func (t staticToken) CheckToken(_ context.Context, _, token string) (bool, error) {
	return string(t) == token, nil
}

// TestJanitorSaysOnceThatTheStoreIsDown: a store that stops answering
// makes the janitor's poll fail each time; it says so once, not each poll.
func TestJanitorSaysOnceThatTheStoreIsDown(t *testing.T) {
	var log testkit.Buffer
	w := newWorld(t, func(o *serving.Options) {
		o.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	time.Sleep(100 * time.Millisecond) // polls that find the store well
	w.st.Close()
	time.Sleep(400 * time.Millisecond) // 20 polls of 20ms
	if n := strings.Count(log.String(), "reading the store for deleted instances failed"); n != 1 {
		t.Errorf("said %d times that the store failed; want once:\n%s", n, log.String())
	}
}
