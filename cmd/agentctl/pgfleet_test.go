package main

// A fleet sharing one PostgreSQL store, end to end through the real binary
// and real processes: each "host" is a state directory of its own (and
// HOME, workspace) whose commands run with AGENTCTL_STORE set to the same
// database and AGENTCTL_HOST to its name; `agentctl serve` daemons of two
// hosts serve the same instances. The PostgreSQL server is the tests' own
// (testkit.StartPostgres): one per top-level test, so that the tests that
// stop it disturb no other.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fleetHost is one host of a fleet: an [rcEnv] of its own whose binary is
// a wrapper that runs the real one with AGENTCTL_STORE and AGENTCTL_HOST
// set, so that every helper running e.bin (run, create, startServe) runs
// it as this host.
type fleetHost struct {
	*rcEnv
	name string
}

func newFleetHost(t *testing.T, store, name string) *fleetHost {
	t.Helper()
	e := newRCEnv(t)
	wrapper := filepath.Join(e.root, "agentctl-"+name)
	script := "#!/bin/sh\n" +
		"AGENTCTL_STORE=" + shellQuote(t, store) + "\n" +
		"AGENTCTL_HOST=" + shellQuote(t, name) + "\n" +
		"export AGENTCTL_STORE AGENTCTL_HOST\n" +
		"exec " + shellQuote(t, e.bin) + ` "$@"` + "\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	e.bin = wrapper
	return &fleetHost{rcEnv: e, name: name}
}

// fleetHosts makes one host per name, all on store.
func fleetHosts(t *testing.T, store string, names ...string) []*fleetHost {
	t.Helper()
	var hs []*fleetHost
	for _, n := range names {
		hs = append(hs, newFleetHost(t, store, n))
	}
	return hs
}

func shellQuote(t *testing.T, s string) string {
	t.Helper()
	if strings.Contains(s, "'") {
		t.Fatalf("cannot quote %q for sh", s)
	}
	return "'" + s + "'"
}

// createHTTP creates a Claude Code instance on h whose client reaches it
// through the daemon d, with flags added.
func (h *fleetHost) createHTTP(ctx context.Context, d *daemonRun, flags ...string) rcRecord {
	h.t.Helper()
	return h.create(ctx, append([]string{"--agent", "claude-code", "--workspace", h.work,
		"--transport", "http", "--url", "http://" + d.addr + "/instances/{id}/mcp"}, flags...)...)
}

// fleetRecord is what the fleet tests read of a record beyond [rcRecord].
type fleetRecord struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Host   string `json:"host"`
	Status string `json:"status"`
}

// list is `instance list -o json` on h.
func (h *fleetHost) list(ctx context.Context) []fleetRecord {
	h.t.Helper()
	out := h.mustRun(ctx, "instance", "list", "-o", "json")
	var recs []fleetRecord
	if err := json.Unmarshal([]byte(out), &recs); err != nil {
		h.t.Fatalf("instance list -o json on %s: %v\n%s", h.name, err, out)
	}
	return recs
}

// toolName is the name instance id's client calls the built-in base by
// (tools list's "transport" name).
func (h *fleetHost) toolName(ctx context.Context, id, base string) string {
	h.t.Helper()
	out := h.mustRun(ctx, "tools", "list", "--instance", id, "-o", "json")
	var lists []struct {
		Tools []struct {
			Base      string `json:"base"`
			Kind      string `json:"kind"`
			Transport string `json:"transport"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &lists); err != nil {
		h.t.Fatalf("tools list -o json: %v\n%s", err, out)
	}
	for _, l := range lists {
		for _, tl := range l.Tools {
			if tl.Base == base && tl.Kind == "builtin" {
				return tl.Transport
			}
		}
	}
	h.t.Fatalf("tools list --instance %s lists no built-in %s:\n%s", id, base, out)
	return ""
}

// fleetConnect connects the go-sdk client (its latest protocol) to url
// with the token of the instance whose URL it is ([bearerTransport]); an
// error is the caller's to judge.
func fleetConnect(ctx context.Context, url string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "fleet-client", Version: "v1"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{}}}, nil)
}

// callTool calls name and decodes its structured result into v; an error
// result is an error.
func callTool(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any, v any) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return err
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if res.IsError {
		var text []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text = append(text, tc.Text)
			}
		}
		return fmt.Errorf("%s: error result: %s", name, strings.Join(text, " "))
	}
	if v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			return fmt.Errorf("%s: structured content %s: %v", name, raw, err)
		}
	}
	return nil
}

// pollStatus posts an initialize to url with token until the answer's
// status satisfies ok, for at most limit, and returns the last status and
// how long it took (ok false: never).
func pollStatus(t *testing.T, url, token string, limit time.Duration, want func(int) bool) (code int, took time.Duration, ok bool) {
	t.Helper()
	start := time.Now()
	for {
		code, _ = rawRequest(t, http.MethodPost, url, initializeBody, map[string]string{"Authorization": "Bearer " + token})
		if want(code) {
			return code, time.Since(start), true
		}
		if time.Since(start) > limit {
			return code, time.Since(start), false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func is401(code int) bool { return code == http.StatusUnauthorized }

// TestPGFleet: two daemons of two hosts and the CLI of a third share one
// PostgreSQL store (one database per subtest, on one server).
func TestPGFleet(t *testing.T) {
	t.Parallel()
	pg := testkit.StartPostgres(t)

	// A question asked through host-b's daemon is answered by `instance
	// answer` on host-c; `instance wait` on host-c sees the final status
	// reported through host-a's daemon.
	t.Run("AskAnswerWait", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
		defer cancel()
		hs := fleetHosts(t, pg.NewDatabase(t), "host-a", "host-b", "host-c")
		a, b, c := hs[0], hs[1], hs[2]
		da, db := startServe(ctx, a.rcEnv), startServe(ctx, b.rcEnv)
		rec := a.createHTTP(ctx, da, "--ask-via", "store", "--question-timeout", "5m")

		var shown fleetRecord
		if err := json.Unmarshal([]byte(c.mustRun(ctx, "instance", "show", rec.ID, "-o", "json")), &shown); err != nil {
			t.Fatal(err)
		}
		if shown.Host != "host-a" {
			t.Errorf("instance show on host-c: host %q, want host-a (AGENTCTL_HOST of the creating process)", shown.Host)
		}
		ask, report := c.toolName(ctx, rec.ID, "ask_user_question"), c.toolName(ctx, rec.ID, "report_progress")

		// The client asks through daemon B.
		asker := db
		csB, err := fleetConnect(ctx, db.url(rec.ID))
		if err != nil {
			t.Errorf("daemon B (host-b) does not serve instance %s created on host-a: %v\ndaemon B's log:\n%s", rec.ID, err, db.stderr.String())
			asker = da // to test the rest
			csB = goConnect(ctx, t, da.url(rec.ID), "")
		} else {
			defer csB.Close()
		}
		type answerOut struct {
			Answered   bool   `json:"answered"`
			Answer     string `json:"answer"`
			Status     string `json:"status"`
			QuestionID string `json:"question_id"`
		}
		type called struct {
			out answerOut
			err error
			at  time.Time
		}
		callDone := make(chan called, 1)
		go func() {
			var out answerOut
			err := callTool(ctx, csB, ask, map[string]any{"question": "Ship the fleet?"}, &out)
			callDone <- called{out, err, time.Now()}
		}()
		var q rcQuestion
		for q.ID == "" {
			if qs := c.questions(ctx, rec.ID, false); len(qs) > 0 {
				q = qs[0]
				break
			}
			select {
			case r := <-callDone:
				t.Fatalf("%s through %s returned before its question reached the store: %+v, %v\n%s", ask, asker.addr, r.out, r.err, asker.stderr.String())
			case <-ctx.Done():
				t.Fatal("the question never reached the store")
			case <-time.After(50 * time.Millisecond):
			}
		}
		if q.Text != "Ship the fleet?" {
			t.Errorf("host-c sees the question %+v", q)
		}

		// `instance wait` on host-c, started before the end is reported.
		waitCmd := exec.CommandContext(ctx, c.bin, "instance", "wait", rec.ID, "--timeout", "2m")
		waitCmd.Env, waitCmd.Dir = c.cliEnv(), c.work
		var waitOut, waitErr bytes.Buffer
		waitCmd.Stdout, waitCmd.Stderr = &waitOut, &waitErr
		if err := waitCmd.Start(); err != nil {
			t.Fatal(err)
		}
		type waited struct {
			err error
			at  time.Time
		}
		waitDone := make(chan waited, 1)
		go func() {
			err := waitCmd.Wait()
			waitDone <- waited{err, time.Now()}
		}()

		res := c.run(ctx, "instance", "answer", rec.ID, "yes, ship it")
		answerExited := time.Now()
		if res.code != 0 {
			t.Fatalf("instance answer on host-c:\n%s", res)
		}
		var r called
		select {
		case r = <-callDone:
		case <-ctx.Done():
			t.Fatalf("%s did not return after instance answer exited", ask)
		}
		note := ""
		if r.at.Before(answerExited) {
			note = " (negative: the call returned before the answering process had exited)"
		}
		t.Logf("instance answer (host-c) exited -> %s through %s returned: %v%s",
			ask, map[*daemonRun]string{da: "daemon A", db: "daemon B"}[asker], r.at.Sub(answerExited), note)
		if r.err != nil {
			t.Fatalf("%s: %v\ndaemon log:\n%s", ask, r.err, asker.stderr.String())
		}
		if !r.out.Answered || r.out.Answer != "yes, ship it" || r.out.Status != "answered" || r.out.QuestionID != q.ID {
			t.Errorf("%s returned %+v, want the answer to question %s", ask, r.out, q.ID)
		}

		select {
		case w := <-waitDone:
			t.Fatalf("instance wait exited before the final report: %v\nstdout:\n%s\nstderr:\n%s", w.err, waitOut.String(), waitErr.String())
		default:
		}
		csA := goConnect(ctx, t, da.url(rec.ID), "")
		if err := callTool(ctx, csA, report, map[string]any{"message": "shipped", "status": "done"}, nil); err != nil {
			t.Fatalf("%s through daemon A: %v\n%s", report, err, da.stderr.String())
		}
		reported := time.Now()
		select {
		case w := <-waitDone:
			t.Logf("report_progress done through daemon A returned -> instance wait (host-c) exited: %v", w.at.Sub(reported))
			if w.err != nil {
				t.Errorf("instance wait on host-c: %v, want exit 0 (done)\nstdout:\n%s\nstderr:\n%s", w.err, waitOut.String(), waitErr.String())
			}
		case <-ctx.Done():
			t.Fatalf("instance wait on host-c did not see the done status\nstderr:\n%s", waitErr.String())
		}
		if qs := b.questions(ctx, rec.ID, true); len(qs) != 1 || qs[0].Status != "answered" || qs[0].Answer != "yes, ship it" {
			t.Errorf("host-b's instance questions --all: %+v, want the one question, answered", qs)
		}
	})

	// A rotated token is refused by the other host's daemon within the
	// token cache's second; a deleted instance is refused by the other
	// host's daemon.
	t.Run("TokensAndDelete", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
		defer cancel()
		hs := fleetHosts(t, pg.NewDatabase(t), "host-a", "host-b")
		a, b := hs[0], hs[1]
		da, db := startServe(ctx, a.rcEnv), startServe(ctx, b.rcEnv)
		rec := a.createHTTP(ctx, da)
		old := rec.Token

		// Both daemons accept the token (and daemon B caches it, just
		// before the rotation).
		var warmed time.Time // daemon B's last acceptance of the old token
		for _, d := range []*daemonRun{da, db} {
			warmed = time.Now()
			if code, body := rawRequest(t, http.MethodPost, d.url(rec.ID), initializeBody, map[string]string{"Authorization": "Bearer " + old}); code != 200 {
				t.Errorf("before the rotation, %s answers the token %d, want 200: %s", d.addr, code, body)
			}
		}
		var rot struct {
			ID    string `json:"id"`
			Token string `json:"token"`
		}
		out := a.mustRun(ctx, "instance", "token", "rotate", rec.ID, "-o", "json")
		rotated := time.Now()
		if err := json.Unmarshal([]byte(out), &rot); err != nil || rot.Token == "" || rot.Token == old {
			t.Fatalf("instance token rotate -o json: %v\n%s", err, out)
		}
		instanceTokens.Store(rec.ID, rot.Token)
		code, _, ok := pollStatus(t, db.url(rec.ID), old, 10*time.Second, is401)
		took := time.Since(rotated) // from the rotating process's exit
		t.Logf("daemon B last accepted the old token %v before the rotation ended; it refuses it %v after (%v after that acceptance)",
			rotated.Sub(warmed), took, time.Since(warmed))
		switch {
		case !ok:
			t.Errorf("daemon B still accepts the rotated-out token %v after the rotation on host-a (last answer %d)", took, code)
		case took > 5*time.Second:
			t.Errorf("!!! daemon B refused the rotated-out token only %v after the rotation: it trusts tokens far beyond the documented second", took)
		case took > time.Second:
			t.Logf("!!! WARNING: daemon B refused the rotated-out token only %v after the rotation, beyond the documented second", took)
		default:
			t.Logf("rotation on host-a -> daemon B refuses the old token: %v", took)
		}
		if _, took, ok := pollStatus(t, da.url(rec.ID), old, 10*time.Second, is401); !ok {
			t.Errorf("daemon A still accepts the rotated-out token after %v", took)
		}
		for _, d := range []*daemonRun{da, db} {
			if code, took, ok := pollStatus(t, d.url(rec.ID), rot.Token, 10*time.Second, func(c int) bool { return c == 200 }); !ok {
				t.Errorf("%s does not accept the new token after %v: %d", d.addr, took, code)
			}
		}

		// Delete through host-b (forced: daemon A's endpoint serves it).
		res := b.run(ctx, "instance", "delete", rec.ID, "--force")
		deleted := time.Now()
		if res.code != 0 {
			t.Fatalf("instance delete --force on host-b of host-a's instance:\n%s", res)
		}
		gone := func(c int) bool { return c == http.StatusUnauthorized || c == http.StatusNotFound }
		for _, d := range []*daemonRun{da, db} {
			code, _, ok := pollStatus(t, d.url(rec.ID), rot.Token, 10*time.Second, gone)
			if !ok {
				t.Errorf("%s still answers %d for the instance deleted on host-b %v ago", d.addr, code, time.Since(deleted))
			} else {
				t.Logf("delete on host-b -> %s refuses the instance (%d): %v", d.addr, code, time.Since(deleted))
			}
		}
		if res := a.run(ctx, "instance", "show", rec.ID); res.code == 0 {
			t.Errorf("host-a still shows the instance deleted on host-b:\n%s", res)
		}
		if _, err := os.Stat(rec.Dir); err == nil {
			t.Logf("note: the instance's directory on host-a (%s) outlives its delete through host-b", rec.Dir)
		}
	})

	// 64 `instance create` processes at once, on three hosts, into a
	// database no process has used yet (so they migrate it together).
	t.Run("ParallelCreate", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
		defer cancel()
		hs := fleetHosts(t, pg.NewDatabase(t), "host-a", "host-b", "host-c")
		const n = 64
		results := make([]rcResult, n)
		var wg sync.WaitGroup
		start := time.Now()
		for i := range n {
			h := hs[i%len(hs)]
			args := []string{"instance", "create", "--agent", "claude-code", "--workspace", h.work}
			if i%2 == 0 {
				args = append(args, "--name", fmt.Sprintf("par-%02d", i))
			}
			wg.Go(func() { results[i] = h.run(ctx, args...) })
		}
		wg.Wait()
		t.Logf("%d parallel instance create processes: %v", n, time.Since(start))
		created := map[string]int{}
		for i, r := range results {
			id := strings.TrimSpace(r.stdout)
			if r.code != 0 || id == "" {
				t.Errorf("create %d on %s:\n%s", i, hs[i%len(hs)].name, r)
				continue
			}
			if j, dup := created[id]; dup {
				t.Errorf("creates %d and %d both printed the id %s", j, i, id)
			}
			created[id] = i
		}
		recs := hs[0].list(ctx)
		seen := map[string]bool{}
		hosts := map[string]int{}
		for _, r := range recs {
			if seen[r.ID] {
				t.Errorf("instance list shows %s twice", r.ID)
			}
			seen[r.ID] = true
			hosts[r.Host]++
			if _, ok := created[r.ID]; !ok {
				t.Errorf("instance list shows %s, which no create printed", r.ID)
			}
		}
		if len(seen) != n {
			t.Errorf("instance list -o json shows %d distinct ids, want %d", len(seen), n)
		}
		for id, i := range created {
			if !seen[id] {
				t.Errorf("create %d's instance %s is not listed", i, id)
			}
		}
		for k, h := range hs {
			if want := (n + len(hs) - 1 - k) / len(hs); hosts[h.name] != want {
				t.Errorf("instance list shows %d instances of %s, want %d (all hosts: %v)", hosts[h.name], h.name, want, hosts)
			}
			// --host keeps one host's instances: those its creates printed.
			out := hs[(k+1)%len(hs)].mustRun(ctx, "instance", "list", "--host", h.name, "-o", "json")
			var mine []fleetRecord
			if err := json.Unmarshal([]byte(out), &mine); err != nil {
				t.Fatalf("instance list --host %s -o json: %v\n%s", h.name, err, out)
			}
			for _, r := range mine {
				if i, ok := created[r.ID]; !ok || i%len(hs) != k || r.Host != h.name {
					t.Errorf("instance list --host %s shows %s (host %q), which no create on %s printed", h.name, r.ID, r.Host, h.name)
				}
			}
			if len(mine) != hosts[h.name] {
				t.Errorf("instance list --host %s shows %d instances, want %d", h.name, len(mine), hosts[h.name])
			}
		}
	})

	// /health of a daemon on a PostgreSQL store names its kind and says it
	// is reachable.
	t.Run("Health", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
		defer cancel()
		a := newFleetHost(t, pg.NewDatabase(t), "host-a")
		d := startServe(ctx, a.rcEnv)
		h, code, body := fleetHealth(t, d)
		if code != 200 || h == nil || h.Store != "postgres" || h.StoreOK == nil || !*h.StoreOK {
			t.Errorf("GET /health: %d %s, want 200 with \"store\": \"postgres\" and \"store_ok\": true", code, body)
		}
		if strings.Contains(body, pg.Password()) {
			t.Errorf("GET /health shows the store's password: %s", body)
		}
	})
}

// healthOut is what the fleet tests read of GET /health.
type healthOut struct {
	Status    string `json:"status"`
	Instances *int   `json:"instances"`
	Store     string `json:"store"`
	StoreOK   *bool  `json:"store_ok"`
}

// fleetHealth gets d's /health; h is nil when the body is not JSON.
func fleetHealth(t *testing.T, d *daemonRun) (h *healthOut, code int, body string) {
	t.Helper()
	code, body = rawRequest(t, http.MethodGet, "http://"+d.addr+"/health", "", nil)
	var out healthOut
	if json.Unmarshal([]byte(body), &out) != nil {
		return nil, code, body
	}
	return &out, code, body
}

// TestPGFleetHealth: a daemon's /health says when its PostgreSQL store is
// unreachable, and again when it is back; it counts the instances while the
// store answers, and says null (not 0: not an empty fleet) while it does
// not.
func TestPGFleetHealth(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	pg := testkit.StartPostgres(t)
	a := newFleetHost(t, pg.NewDatabase(t), "host-a")
	d := startServe(ctx, a.rcEnv)
	a.createHTTP(ctx, d)
	await := func(when string, ok bool) {
		t.Helper()
		start := time.Now()
		var (
			h    *healthOut
			code int
			body string
		)
		for time.Since(start) < 15*time.Second {
			h, code, body = fleetHealth(t, d)
			if strings.Contains(body, pg.Password()) {
				t.Fatalf("%s: GET /health shows the store's password: %s", when, body)
			}
			if h != nil && h.Store == "postgres" && h.StoreOK != nil && *h.StoreOK == ok {
				t.Logf("%s: GET /health %d %s after %v", when, code, strings.TrimSpace(body), time.Since(start))
				if ok && (h.Instances == nil || *h.Instances != 1) || !ok && h.Instances != nil || !strings.Contains(body, `"instances":`) {
					t.Errorf("%s: GET /health counts instances as %s, want %s", when, body, map[bool]string{true: "1", false: "null"}[ok])
				}
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Errorf("%s: GET /health answers %d %s, want JSON with \"store\": \"postgres\" and \"store_ok\": %v", when, code, strings.TrimSpace(body), ok)
	}
	await("store up", true)
	pg.Stop(t)
	await("store down", false)
	pg.Start(t)
	await("store up again", true)
	if strings.Contains(d.stderr.String(), pg.Password()) {
		t.Errorf("the daemon's log shows the store's password:\n%s", d.stderr.String())
	}
}

// TestPGFleetOutage: PostgreSQL stopped in immediate mode in the middle
// of a run of writes, and started again, loses nothing that was
// acknowledged: every `instance create` that exited 0 has its record, and
// every report_progress a daemon answered has its event. While it is
// down, the commands fail naming the store, without its password.
func TestPGFleetOutage(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	pg := testkit.StartPostgres(t)
	store := pg.NewDatabase(t)
	u, err := url.Parse(store)
	if err != nil {
		t.Fatal(err)
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	a := newFleetHost(t, store, "host-a")
	d := startServe(ctx, a.rcEnv)
	rec := a.createHTTP(ctx, d)
	report := a.toolName(ctx, rec.ID, "report_progress")

	type write struct {
		what  string // the create's --name, or the report's message
		id    string // the create's id
		ok    bool   // acknowledged
		down  bool   // begun while the server was (known to be) stopped
		out   string // the command's stderr, or the call's error
		phase string
	}
	var (
		mu     sync.Mutex
		writes []write
		phase  = "before"
	)
	setPhase := func(p string) { mu.Lock(); phase = p; mu.Unlock() }
	count := func(p string, kind byte, ok bool) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, w := range writes {
			if w.phase == p && w.what[0] == kind && w.ok == ok {
				n++
			}
		}
		return n
	}
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		var cs *mcp.ClientSession
		defer func() {
			if cs != nil {
				cs.Close()
			}
		}()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			mu.Lock()
			p := phase
			mu.Unlock()
			name := fmt.Sprintf("c-%03d", i)
			res := a.run(ctx, "instance", "create", "--agent", "claude-code", "--workspace", a.work, "--name", name)
			w := write{what: name, id: strings.TrimSpace(res.stdout), ok: res.code == 0, down: p == "down", out: res.stderr, phase: p}
			mu.Lock()
			writes = append(writes, w)
			mu.Unlock()

			msg := fmt.Sprintf("r-%03d", i)
			w = write{what: msg, down: p == "down", phase: p}
			if cs == nil {
				var err error
				if cs, err = fleetConnect(ctx, d.url(rec.ID)); err != nil {
					cs, w.out = nil, err.Error()
				}
			}
			if cs != nil {
				if err := callTool(ctx, cs, report, map[string]any{"message": msg}, nil); err != nil {
					w.out = err.Error()
					cs.Close()
					cs = nil
				} else {
					w.ok = true
				}
			}
			mu.Lock()
			writes = append(writes, w)
			mu.Unlock()
			if !w.ok {
				time.Sleep(20 * time.Millisecond) // no busy loop while the store is down
			}
		}
	}()
	awaitCount := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				close(stop)
				<-writerDone
				t.Fatalf("gave up waiting for %s; writes: %+v", what, writes)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	awaitCount("5 creates acknowledged", func() bool { return count("before", 'c', true) >= 5 })
	pg.Stop(t) // while a write is under way, most likely
	stoppedAt := time.Now()
	setPhase("down")
	// Down for a second at least: long enough for the daemon's pool and
	// listener to notice.
	awaitCount("3 creates failing while the server is down", func() bool {
		return count("down", 'c', false) >= 3 && time.Since(stoppedAt) > time.Second
	})
	pg.Start(t)
	t.Logf("PostgreSQL was down for %v", time.Since(stoppedAt))
	setPhase("after")
	awaitCount("5 creates and 3 reports acknowledged after the restart", func() bool {
		return count("after", 'c', true) >= 5 && count("after", 'r', true) >= 3
	})
	close(stop)
	<-writerDone

	present := map[string]fleetRecord{}
	for _, r := range a.list(ctx) {
		present[r.Name] = r
	}
	events := map[string]bool{}
	for _, ev := range a.events(ctx, rec.ID) {
		events[ev.Message] = true
	}
	var acked, failed, failedButPresent, failedDown int
	for _, w := range writes {
		isCreate := w.what[0] == 'c'
		has := events[w.what]
		if isCreate {
			r, ok := present[w.what]
			has = ok
			if ok && w.ok && r.ID != w.id {
				t.Errorf("create %s printed id %s, but the store holds %s under that name", w.what, w.id, r.ID)
			}
		}
		switch {
		case w.ok:
			acked++
			if !has {
				t.Errorf("%s (%s) was acknowledged but is lost after the restart", w.what, w.phase)
			}
		default:
			failed++
			if has {
				failedButPresent++
			}
		}
		if !isCreate || w.ok || !w.down {
			continue
		}
		failedDown++
		if !strings.Contains(w.out, u.Host) || !strings.Contains(w.out, dbName) {
			t.Errorf("create %s, failing while the store is down, does not name the store (%s, database %s):\n%s", w.what, u.Host, dbName, w.out)
		}
		if strings.Contains(w.out, pg.Password()) {
			t.Errorf("create %s, failing while the store is down, shows the store's password:\n%s", w.what, w.out)
		}
	}
	t.Logf("%d writes: %d acknowledged (all kept: see errors otherwise), %d failed (%d of them creates while the server was down; %d failed but present anyway)",
		len(writes), acked, failed, failedDown, failedButPresent)
	for _, w := range writes {
		if !w.ok && w.down && w.what[0] == 'c' {
			t.Logf("a create's stderr while the store was down:\n%s", strings.TrimSpace(w.out))
			break
		}
	}
	if failedDown == 0 {
		t.Error("no create failed while the store was down")
	}
	if strings.Contains(d.stderr.String(), pg.Password()) {
		t.Errorf("the daemon's log shows the store's password:\n%s", d.stderr.String())
	}
}
