package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/internal/testkit"
)

// loginTokenOf is the token of a login URL.
func loginTokenOf(t *testing.T, login string) string {
	t.Helper()
	u, err := url.Parse(strings.TrimSpace(login))
	if err != nil || u.Path != "/login" || u.Query().Get("token") == "" {
		t.Fatalf("%q is not a login URL", login)
	}
	return u.Query().Get("token")
}

// TestUICommand: `agentctl ui` makes a new operator token each time and
// prints its login URL (the earlier ones keep working); --new-token
// revokes them; the URL is the base URL's when one is set; -o json.
func TestUICommand(t *testing.T) {
	t.Parallel()
	f := newTestFactory(t)
	ctx := context.Background()
	run := func(args ...string) (string, error) {
		t.Helper()
		f.out.Reset()
		f.errOut.Reset()
		err := runCommand(f, NewCmdUI(f.Factory, nil), args...)
		return f.out.String(), err
	}
	out, err := run()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "http://127.0.0.1:7821/login?token="+instance.OperatorTokenPrefix) {
		t.Errorf("agentctl ui printed %q, want the default address's login URL", out)
	}
	first := loginTokenOf(t, out)
	out, err = run("--listen", "127.0.0.1:8080")
	if err != nil || !strings.HasPrefix(out, "http://127.0.0.1:8080/login?token=") {
		t.Fatalf("ui --listen: %q, %v", out, err)
	}
	second := loginTokenOf(t, out)
	if !strings.Contains(f.errOut.String(), "earlier ones still work") {
		t.Errorf("ui's narration: %q", f.errOut.String())
	}
	st, err := f.Store(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, tok := range []string{first, second} {
		if _, err := st.CheckOperatorToken(ctx, tok); err != nil {
			t.Errorf("a token ui printed does not work: %v", err)
		}
	}
	out, err = run("--new-token", "--base-url", "https://agents.example.com/", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		LoginURL string `json:"login_url"`
		PageURL  string `json:"page_url"`
		TokenID  string `json:"token_id"`
		Revoked  int    `json:"revoked"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("ui -o json: %v\n%s", err, out)
	}
	if !strings.HasPrefix(j.LoginURL, "https://agents.example.com/login?token=") || j.PageURL != "https://agents.example.com/" || j.Revoked != 2 || j.TokenID == "" {
		t.Errorf("ui --new-token --base-url -o json: %+v", j)
	}
	for _, tok := range []string{first, second} {
		if _, err := st.CheckOperatorToken(ctx, tok); !errors.Is(err, instance.ErrNotAuthorized) {
			t.Errorf("--new-token left an earlier token working: %v", err)
		}
	}
	if _, err := st.CheckOperatorToken(ctx, loginTokenOf(t, j.LoginURL)); err != nil {
		t.Errorf("the new token does not work: %v", err)
	}
	for _, bad := range []string{"ftp://x", "https://agents.example.com/sub/path", "agents.example.com"} {
		if _, err := run("--base-url", bad); exitCode(ctx, err) != ExitUsage {
			t.Errorf("ui --base-url %s: %v (exit %d), want a usage error", bad, err, exitCode(ctx, err))
		}
	}
	// base_url from the environment.
	fe := newTestFactory(t, "AGENTCTL_BASE_URL=http://box.example:9000")
	fe.out.Reset()
	if err := runCommand(fe, NewCmdUI(fe.Factory, nil)); err != nil || !strings.HasPrefix(fe.out.String(), "http://box.example:9000/login?token=") {
		t.Errorf("ui with AGENTCTL_BASE_URL: %q, %v", fe.out.String(), err)
	}
}

// TestUICommandOpen: --open hands the login URL to the browser opener,
// and a failed opener is a warning, the URL still printed.
func TestUICommandOpen(t *testing.T) {
	t.Parallel()
	f := newTestFactory(t)
	var opened []string
	fail := false
	cmd := NewCmdUI(f.Factory, func(ctx context.Context, o *UIOptions) error {
		o.OpenBrowser = func(u string) error {
			opened = append(opened, u)
			if fail {
				return errors.New("no display")
			}
			return nil
		}
		return uiRun(ctx, o)
	})
	if err := runCommand(f, cmd, "--open"); err != nil {
		t.Fatal(err)
	}
	if len(opened) != 1 || opened[0] != strings.TrimSpace(f.out.String()) {
		t.Errorf("--open opened %q, printed %q", opened, f.out.String())
	}
	fail = true
	f.out.Reset()
	cmd = NewCmdUI(f.Factory, func(ctx context.Context, o *UIOptions) error {
		o.OpenBrowser = func(string) error { return errors.New("no display") }
		return uiRun(ctx, o)
	})
	if err := runCommand(f, cmd, "--open"); err != nil || !strings.Contains(f.errOut.String(), "could not open a browser") || f.out.Len() == 0 {
		t.Errorf("--open without a browser: %v; stdout %q stderr %q", err, f.out.String(), f.errOut.String())
	}
}

// TestServeUIOptions: serve serves the page unless --no-ui, and takes
// --base-url over the base_url setting.
func TestServeUIOptions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  []string
		args []string
		ui   bool
		base string
	}{
		{nil, nil, true, ""},
		{nil, []string{"--no-ui"}, false, ""},
		{[]string{"AGENTCTL_BASE_URL=https://env.example"}, nil, true, "https://env.example"},
		{[]string{"AGENTCTL_BASE_URL=https://env.example"}, []string{"--base-url", "https://flag.example"}, true, "https://flag.example"},
	} {
		f := newTestFactory(t, c.env...)
		var got *ServeOptions
		if err := runCommand(f, NewCmdServe(f.Factory, func(_ context.Context, o *ServeOptions) error { got = o; return nil }), c.args...); err != nil {
			t.Fatal(err)
		}
		if got.WebUI != c.ui || got.BaseURL != c.base {
			t.Errorf("serve %v (env %v): WebUI %v, BaseURL %q; want %v, %q", c.args, c.env, got.WebUI, got.BaseURL, c.ui, c.base)
		}
	}
	f := newTestFactory(t)
	var got *MCPServeOptions
	if err := runCommand(f, NewCmdMCPServe(f.Factory, func(_ context.Context, o *MCPServeOptions) error { got = o; return nil }), "--instance", "x", "--http", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if got.Serve.WebUI {
		t.Errorf("mcp serve --http serves the web page; it serves one instance's MCP URL only")
	}
}

var loginLineRE = regexp.MustCompile(`web page: log in at (http://\S+)`)

// loginURLOf waits for the daemon to print its login URL.
func loginURLOf(t *testing.T, d *daemonRun) string {
	t.Helper()
	var m []string
	testkit.Eventually(t, "agentctl serve's login URL", func() bool {
		m = loginLineRE.FindStringSubmatch(d.stderr.String())
		return m != nil
	})
	return m[1]
}

// TestUIServeLoginURL: the first serve of a store prints a login URL (its
// token works), the next ones do not make another; --no-ui serves no page
// (404) and makes no token; the page is behind the MCP URLs' Host and
// Origin checks.
func TestUIServeLoginURL(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	noUI := startServe(ctx, e, "--no-ui")
	for _, path := range []string{"/", "/ui/instances/x", "/ui/static/app.js", "/login"} {
		if code, _ := rawRequest(t, http.MethodGet, "http://"+noUI.addr+path, "", nil); code != http.StatusNotFound {
			t.Errorf("serve --no-ui: GET %s: %d, want 404", path, code)
		}
	}
	if strings.Contains(noUI.stderr.String(), "web page") {
		t.Errorf("serve --no-ui speaks of a web page:\n%s", noUI.stderr.String())
	}
	noUI.stop()

	d := startServe(ctx, e)
	login := loginURLOf(t, d)
	if !strings.HasPrefix(login, "http://"+d.addr+"/login?token="+instance.OperatorTokenPrefix) {
		t.Errorf("the login URL %q is not this daemon's", login)
	}
	if code, body := rawRequest(t, http.MethodGet, "http://"+d.addr+"/", "", map[string]string{"Accept": "text/html"}); code != http.StatusUnauthorized || !strings.Contains(body, "Log in") {
		t.Errorf("GET / without a session: %d, want 401 and the log-in page", code)
	}
	for _, hdr := range []map[string]string{{"Host": "evil.example:" + strings.Split(d.addr, ":")[1]}, {"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"}} {
		if code, _ := rawRequest(t, http.MethodGet, "http://"+d.addr+"/login", "", hdr); code != http.StatusForbidden {
			t.Errorf("GET /login with %v: %d, want 403 (the MCP URLs' Host and Origin rules)", hdr, code)
		}
	}
	form := url.Values{"token": {loginTokenOf(t, login)}}.Encode()
	if code, _ := rawRequest(t, http.MethodPost, "http://"+d.addr+"/login", form, map[string]string{"Origin": "http://evil.example", "Content-Type": "application/x-www-form-urlencoded"}); code != http.StatusForbidden {
		t.Errorf("a cross-origin POST /login: %d, want 403", code)
	}
	d.stop()

	again := startServe(ctx, e)
	testkit.Eventually(t, "the second serve's word on the page", func() bool { return strings.Contains(again.stderr.String(), "web page at http://") })
	if strings.Contains(again.stderr.String(), "token=") {
		t.Errorf("a second serve printed a new login URL though a token is in force:\n%s", again.stderr.String())
	}
}

// TestServeBaseURLDefaultPort: a base URL or an --allow-host name written
// with its scheme's default port (https://HOST:443, NAME:443) takes the
// Host a TLS proxy or a browser sends for it, without the port; the login
// URL is printed without the port; a refused Host is told the names the
// server takes.
func TestServeBaseURLDefaultPort(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	d := startServe(ctx, e, "--base-url", "https://agents.example.com:443", "--allow-host", "other.example:443")
	testkit.Eventually(t, "the login URL", func() bool { return strings.Contains(d.stderr.String(), "web page: log in at ") })
	if !strings.Contains(d.stderr.String(), "web page: log in at https://agents.example.com/login?token=") {
		t.Errorf("the login URL is not the base URL's, without its default port:\n%s", d.stderr.String())
	}
	for host, want := range map[string]int{
		"agents.example.com": 200, "agents.example.com:443": 200, "other.example": 200, "other.example:443": 200,
		"other.example:80": 403, "evil.example": 403,
	} {
		code, body := rawRequest(t, http.MethodGet, "http://"+d.addr+"/health", "", map[string]string{"Host": host})
		if code != want {
			t.Errorf("GET /health, Host %s: %d, want %d: %s", host, code, want, body)
		}
		if code == 403 && !strings.Contains(body, "--allow-host or the base URL (--base-url, a port meaning that port only): other.example:443, agents.example.com") {
			t.Errorf("GET /health, Host %s: the 403 does not name the names the server takes: %s", host, body)
		}
	}
	// The page's Origin check takes the base URL's origin.
	if code, body := rawRequest(t, http.MethodGet, "http://"+d.addr+"/login", "", map[string]string{"Host": "agents.example.com", "Origin": "https://agents.example.com"}); code == 403 {
		t.Errorf("GET /login from https://agents.example.com: 403: %s", body)
	}
}

// TestUIServeTwoDaemonsKeepTheirLogins: two daemons of two stores on one
// host, on two ports, in one browser (a cookie jar keeps one set of
// cookies per host, whatever the port, as browsers do): logging in to the
// second leaves the first logged in, since each names its session cookie
// after its port; the cookie keeps HttpOnly, SameSite=Strict and Path=/.
func TestUIServeTwoDaemonsKeepTheirLogins(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	a, b := startServe(ctx, newRCEnv(t)), startServe(ctx, newRCEnv(t))
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	login := func(d *daemonRun) {
		t.Helper()
		res, err := c.PostForm("http://"+d.addr+"/login", url.Values{"token": {loginTokenOf(t, loginURLOf(t, d))}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		_, port, _ := strings.Cut(d.addr, ":")
		cookie := res.Header.Get("Set-Cookie")
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("log in to %s: %d, want 303", d.addr, res.StatusCode)
		}
		if !strings.HasPrefix(cookie, "agentctl_session_"+port+"=") {
			t.Errorf("log in to %s: cookie %q; want one named after the port", d.addr, cookie)
		}
		for _, want := range []string{"HttpOnly", "SameSite=Strict", "Path=/"} {
			if !strings.Contains(cookie, want) || strings.Contains(cookie, "Secure") {
				t.Errorf("the session cookie %q lacks %s, or is Secure over http", cookie, want)
			}
		}
	}
	loggedIn := func(d *daemonRun) bool {
		t.Helper()
		res, err := c.Get("http://" + d.addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}
	login(a)
	login(b)
	if !loggedIn(b) || !loggedIn(a) {
		t.Errorf("after logging in to %s then %s: logged in to the first %v, to the second %v; want both", a.addr, b.addr, loggedIn(a), loggedIn(b))
	}
}

// TestUIServeLiveEndpoint: an instance's page shows the daemon's running
// endpoint when there is one (its external server up, with the names its
// tools have for the model) and the record's view before; never a mount's
// environment.
func TestUIServeLiveEndpoint(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	d := startServe(ctx, e)
	login := loginURLOf(t, d)
	kb := t.TempDir()
	rec := e.create(ctx, "--agent", "claude-code", "--workspace", e.work, "--transport", "http", "--url", "http://"+d.addr+"/instances/{id}/mcp",
		"--kb", "docs="+kb, "--mcp-json", `up={"command":"`+serverBin(t)+`","env":{"UP_SECRET":"s3cretvalue"}}`)

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	res, err := c.PostForm("http://"+d.addr+"/login", url.Values{"token": {loginTokenOf(t, login)}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	page := func() string {
		t.Helper()
		res, err := c.Get("http://" + d.addr + "/ui/instances/" + rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET the instance's page: %d\n%s", res.StatusCode, b)
		}
		return string(b)
	}
	before := page()
	for _, want := range []string{"is not running in this", "not started", "docs__concept_read", ">up<"} {
		if !strings.Contains(before, want) {
			t.Errorf("the page before the endpoint runs lacks %q", want)
		}
	}
	if strings.Contains(before, "up__echo") {
		t.Errorf("the page lists the external server's tools before it was started")
	}
	cs := goConnect(ctx, t, d.url(rec.ID), "")
	testkit.ToolNames(ctx, t, cs)
	after := page()
	for _, want := range []string{"runs in this", "status-up", "mcp__agentctl__up__echo", "up__echo"} {
		if !strings.Contains(after, want) {
			t.Errorf("the page of the running endpoint lacks %q", want)
		}
	}
	for _, p := range []string{before, after} {
		if strings.Contains(p, "s3cretvalue") || strings.Contains(p, "UP_SECRET") {
			t.Errorf("the page shows the mount's environment")
		}
	}
}
