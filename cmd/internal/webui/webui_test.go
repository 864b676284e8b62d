package webui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/cmd/internal/provision"
	"github.com/agentctl/agentctl/cmd/internal/webui"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver/httpserve"
	"github.com/agentctl/agentctl/mcpserver/mount"
)

// clock is the store's clock, which a test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.t.IsZero() {
		return time.Now()
	}
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// site is a store and the page over it, behind the daemon's Host and
// Origin checks.
type site struct {
	t     *testing.T
	state string
	st    *instance.Store
	clock *clock
	srv   *httptest.Server
	token string // the operator token
}

func newSite(t *testing.T, mod func(*webui.Options)) *site {
	t.Helper()
	s := &site{t: t, state: t.TempDir(), clock: &clock{}}
	st, err := instance.Open(context.Background(), s.state, instance.WithClock(s.clock.now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s.st = st
	if s.token, err = st.EnsureOperatorToken(context.Background()); err != nil {
		t.Fatal(err)
	}
	o := webui.Options{Store: st, Version: "test", PollInterval: 20 * time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	ui := webui.New(o)
	mux := http.NewServeMux()
	ui.Register(mux)
	s.srv = httptest.NewUnstartedServer(nil)
	s.srv.Config.Handler = httpserve.Protect(mux, httpserve.ProtectOptions{Listen: s.srv.Listener.Addr().String()})
	s.srv.Start()
	t.Cleanup(func() {
		ui.Close()
		s.srv.Close()
	})
	return s
}

// create makes an instance of agent labelled label.
func (s *site) create(agent, label string, mounts ...mount.Mount) *instance.Record {
	s.t.Helper()
	cat, err := agents.Load(agents.LoadOptions{UserDir: filepath.Join(s.t.TempDir(), "none")})
	if err != nil {
		s.t.Fatal(err)
	}
	def, err := cat.Lookup(agent)
	if err != nil {
		s.t.Fatal(err)
	}
	rec, _, err := provision.Create(context.Background(), func(ctx context.Context) (*instance.Store, error) { return instance.Open(ctx, s.state) },
		provision.CreateOptions{Definition: def, Name: label, Workspace: s.t.TempDir(), Executable: "/opt/agentctl", Mounts: mounts, QuestionTimeout: time.Hour})
	if err != nil {
		s.t.Fatal(err)
	}
	return rec
}

// browser is an HTTP client with a cookie jar that does not follow
// redirects.
type browser struct {
	t    *testing.T
	s    *site
	c    *http.Client
	csrf string
}

func (s *site) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: s.t, s: s, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type answer struct {
	code int
	hdr  http.Header
	body string
}

func (b *browser) do(method, path string, form url.Values, hdr map[string]string) answer {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.s.srv.URL+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return answer{res.StatusCode, res.Header, string(data)}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// login logs in with token and reads the session's CSRF token from the
// instances page.
func (b *browser) login(token string) answer {
	b.t.Helper()
	a := b.do(http.MethodPost, "/login", url.Values{"token": {token}, "next": {"/"}}, nil)
	if a.code == http.StatusSeeOther {
		page := b.do(http.MethodGet, "/", nil, nil)
		if m := csrfRE.FindStringSubmatch(page.body); m != nil {
			b.csrf = m[1]
		}
	}
	return a
}

// noData fails if the answer shows anything of the instances that the
// request did not give (the log-in page sends a browser back to the
// path it asked for).
func noData(t *testing.T, what string, a answer, recs ...*instance.Record) {
	t.Helper()
	for _, r := range recs {
		for _, secret := range []string{r.ID, r.Name, r.Workspace, r.Agent, "Ship it?"} {
			if secret != "" && strings.Contains(a.body, secret) && !strings.Contains(what, secret) {
				t.Errorf("%s: the answer (%d) shows %q of an instance:\n%s", what, a.code, secret, a.body)
			}
		}
	}
}

// TestUILogin: without a session every page is the log-in page (401) with
// no instance's data; the login URL's GET sets nothing; a wrong, an
// instance's or a missing token opens nothing; the operator token sets an
// HttpOnly, SameSite=Strict cookie (not Secure over http) and the pages
// open.
func TestUILogin(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	rec := s.create("claude-code", "fix-login")
	instToken, err := s.st.RotateToken(context.Background(), rec.ID, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.st.AddQuestion(context.Background(), rec.ID, "Ship it?", []string{"yes", "no"}); err != nil {
		t.Fatal(err)
	}
	b := s.browser()
	for _, path := range []string{"/", "/?q=fix", "/ui/instances/" + rec.ID, "/ui/instances/fix-login", "/ui/instances/" + rec.ID + "/events"} {
		a := b.do(http.MethodGet, path, nil, map[string]string{"Authorization": "Bearer " + instToken.Token})
		if a.code != http.StatusUnauthorized {
			t.Errorf("GET %s without a session (an instance token as bearer): %d, want 401", path, a.code)
		}
		noData(t, "GET "+path+" without a session", a, rec)
		if strings.Contains(a.body, "Ship it?") || strings.Contains(a.body, rec.Workspace) {
			t.Errorf("GET %s without a session shows the instance's data", path)
		}
	}
	a := b.do(http.MethodPost, "/ui/instances/"+rec.ID+"/questions/x/answer", url.Values{"answer": {"yes"}}, nil)
	if a.code != http.StatusUnauthorized {
		t.Errorf("POST an answer without a session: %d, want 401", a.code)
	}
	noData(t, "POST an answer without a session", a, rec)

	a = b.do(http.MethodGet, "/login?token="+url.QueryEscape(s.token), nil, nil)
	if a.code != http.StatusOK || a.hdr.Get("Set-Cookie") != "" || !strings.Contains(a.body, "data-autosubmit") {
		t.Errorf("GET the login URL: %d, Set-Cookie %q; want a page whose form posts the token, and no cookie", a.code, a.hdr.Get("Set-Cookie"))
	}
	if cc := a.hdr.Get("Cache-Control"); cc != "no-store" || a.hdr.Get("Referrer-Policy") != "same-origin" {
		t.Errorf("the login page: Cache-Control %q, Referrer-Policy %q; want no-store, same-origin", cc, a.hdr.Get("Referrer-Policy"))
	}
	noData(t, "GET the login URL", a, rec)

	for _, bad := range []string{"", "agtop_wrong", instToken.Token, s.token + "x"} {
		a := b.login(bad)
		if a.code != http.StatusUnauthorized || a.hdr.Get("Set-Cookie") != "" {
			t.Errorf("log in with %q: %d, Set-Cookie %q; want 401 and no cookie", bad, a.code, a.hdr.Get("Set-Cookie"))
		}
		noData(t, "log in with a wrong token", a, rec)
	}
	if a := b.do(http.MethodGet, "/", nil, nil); a.code != http.StatusUnauthorized {
		t.Errorf("after failed logins, GET /: %d, want 401", a.code)
	}

	a = b.login(s.token)
	if a.code != http.StatusSeeOther || a.hdr.Get("Location") != "/" {
		t.Fatalf("log in: %d to %q, want 303 to /", a.code, a.hdr.Get("Location"))
	}
	cookie := a.hdr.Get("Set-Cookie")
	for _, want := range []string{"agentctl_session=", "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("the session cookie %q lacks %s", cookie, want)
		}
	}
	if strings.Contains(cookie, "Secure") || strings.Contains(cookie, s.token) {
		t.Errorf("the session cookie over http: %q; want it not Secure and without the token", cookie)
	}
	page := b.do(http.MethodGet, "/", nil, nil)
	if page.code != http.StatusOK || !strings.Contains(page.body, "fix-login") || !strings.Contains(page.body, "Ship it?") {
		t.Errorf("GET / logged in: %d, want the instance and its question:\n%s", page.code, page.body)
	}
	for _, secret := range []string{s.token, instToken.Token} {
		if strings.Contains(page.body, secret) {
			t.Errorf("the instances page shows a token")
		}
	}
	// A label is redirected to the id's page.
	if a := b.do(http.MethodGet, "/ui/instances/fix-login", nil, nil); a.code != http.StatusSeeOther || a.hdr.Get("Location") != "/ui/instances/"+rec.ID {
		t.Errorf("GET /ui/instances/fix-login: %d to %q, want 303 to the id's page", a.code, a.hdr.Get("Location"))
	}
	// Log out: the session ends in the store, not only in the browser.
	old := b.c.Jar.Cookies(mustURL(t, s.srv.URL))
	if a := b.do(http.MethodPost, "/logout", url.Values{"csrf": {b.csrf}}, nil); a.code != http.StatusSeeOther {
		t.Fatalf("log out: %d", a.code)
	}
	b2 := s.browser()
	b2.c.Jar.SetCookies(mustURL(t, s.srv.URL), old)
	if a := b2.do(http.MethodGet, "/", nil, nil); a.code != http.StatusUnauthorized {
		t.Errorf("the cookie of a session logged out: %d, want 401", a.code)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestUILoginNext: after logging in the browser goes to the form's next
// only when it is a path of this server as a browser reads it; a control
// character, a space or a backslash (which browsers drop or read as '/',
// making "/\t/evil.example" another site), another site's URL or anything
// that is not a path sends it to / instead. The log-in page's form does
// not carry such a next either.
func TestUILoginNext(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	for next, want := range map[string]string{
		"/ui/instances/x":              "/ui/instances/x",
		"/?q=fix&status=done":          "/?q=fix&status=done",
		"/ui/instances/x?answered=1#a": "/ui/instances/x?answered=1#a",
		"/\t/evil.example":             "/",
		"/\n/evil.example":             "/",
		"/\r\n/evil.example":           "/",
		"/\x00/evil.example":           "/",
		"/\x0b/evil.example":           "/",
		"/\x7f/evil.example":           "/",
		"/ /evil.example":              "/",
		"/\u00a0/evil.example":         "/",
		"/\u2028/evil.example":         "/",
		"/\\evil.example":              "/",
		"/\\/evil.example":             "/",
		"//evil.example":               "/",
		"///evil.example":              "/",
		"https://evil.example/":        "/",
		"javascript:alert(1)":          "/",
		"evil.example":                 "/",
		"":                             "/",
		"/login?next=/":                "/",
	} {
		// The transport's own answer, Location as sent: a client would
		// refuse to parse one with a control character.
		req, _ := http.NewRequest(http.MethodPost, s.srv.URL+"/login", strings.NewReader(url.Values{"token": {s.token}, "next": {next}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, err := http.DefaultTransport.RoundTrip(req)
		if err != nil { // a Location no client can read
			t.Errorf("log in with next %q: %v", next, err)
			continue
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != want {
			t.Errorf("log in with next %q: %d to %q, want 303 to %q", next, res.StatusCode, res.Header.Get("Location"), want)
		}
		page := s.browser().do(http.MethodGet, "/login?"+url.Values{"next": {next}}.Encode(), nil, nil)
		if want == "/" && next != "" && strings.Contains(page.body, `name="next" value="`+template.HTMLEscapeString(next)+`"`) {
			t.Errorf("the log-in page's form carries next %q", next)
		}
	}
}

// TestUISecureCookie: behind an https base URL the cookie is Secure and
// bound to the host (__Host-).
func TestUISecureCookie(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(o *webui.Options) { o.BaseURL = "https://agents.example.com" })
	a := s.browser().do(http.MethodPost, "/login", url.Values{"token": {s.token}}, nil)
	c := a.hdr.Get("Set-Cookie")
	if a.code != http.StatusSeeOther || !strings.HasPrefix(c, "__Host-agentctl_session_443=") || !strings.Contains(c, "; Secure") {
		t.Errorf("log in behind https: %d, cookie %q; want a Secure __Host- cookie named after port 443", a.code, c)
	}
}

// TestUICookieNamePerPort: the session cookie is named after the base
// URL's port (its scheme's default when it has none), so that two daemons
// on one host, whose cookies a browser keeps together whatever the port,
// do not log each other out; its attributes stay.
func TestUICookieNamePerPort(t *testing.T) {
	t.Parallel()
	for base, want := range map[string]string{
		"http://127.0.0.1:17830":          "agentctl_session_17830=",
		"http://127.0.0.1:17831":          "agentctl_session_17831=",
		"http://agents.example.com":       "agentctl_session_80=",
		"https://agents.example.com:8443": "__Host-agentctl_session_8443=",
	} {
		s := newSite(t, func(o *webui.Options) { o.BaseURL = base })
		b := s.browser()
		a := b.do(http.MethodPost, "/login", url.Values{"token": {s.token}}, nil)
		c := a.hdr.Get("Set-Cookie")
		if a.code != http.StatusSeeOther || !strings.HasPrefix(c, want) {
			t.Errorf("base %s: log in: %d, cookie %q; want 303 and %s", base, a.code, c, want)
		}
		for _, attr := range []string{"; HttpOnly", "; SameSite=Strict", "; Path=/"} {
			if !strings.Contains(c, attr) {
				t.Errorf("base %s: the cookie %q lacks %s", base, c, attr)
			}
		}
		if strings.HasPrefix(base, "http://") {
			// The cookie the server set opens the page.
			if page := b.do(http.MethodGet, "/", nil, nil); page.code != http.StatusOK {
				t.Errorf("base %s: GET / logged in: %d", base, page.code)
			}
		}
	}
}

// TestUICSRFRequired: a POST of the session without its CSRF token, or
// with another's, is refused (403) and changes nothing; with it, it
// answers the question.
func TestUICSRFRequired(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	rec := s.create("claude-code", "")
	q, err := s.st.AddQuestion(context.Background(), rec.ID, "Ship it?", []string{"yes", "no"})
	if err != nil {
		t.Fatal(err)
	}
	b, other := s.browser(), s.browser()
	b.login(s.token)
	other.login(s.token)
	if b.csrf == "" || other.csrf == "" || b.csrf == other.csrf {
		t.Fatalf("CSRF tokens %q and %q: want one per session", b.csrf, other.csrf)
	}
	path := "/ui/instances/" + rec.ID + "/questions/" + q.ID + "/answer"
	for _, form := range []url.Values{{"answer": {"yes"}}, {"answer": {"yes"}, "csrf": {""}}, {"answer": {"yes"}, "csrf": {other.csrf}}} {
		for _, hdr := range []map[string]string{nil, {"Accept": "application/json"}} {
			if a := b.do(http.MethodPost, path, form, hdr); a.code != http.StatusForbidden {
				t.Errorf("POST %v (%v): %d, want 403", form, hdr, a.code)
			}
		}
	}
	if a := b.do(http.MethodPost, "/logout", url.Values{}, nil); a.code != http.StatusForbidden {
		t.Errorf("log out without the CSRF token: %d, want 403", a.code)
	}
	if got, _ := s.st.Question(context.Background(), rec.ID, q.ID); got.Status != instance.QuestionOpen {
		t.Fatalf("after refused POSTs the question is %s, want open", got.Status)
	}
	a := b.do(http.MethodPost, path, url.Values{"answer": {"yes"}, "csrf": {b.csrf}}, nil)
	if a.code != http.StatusSeeOther || !strings.HasPrefix(a.hdr.Get("Location"), "/ui/instances/"+rec.ID+"?answered="+q.ID) {
		t.Fatalf("POST with the CSRF token: %d to %q, want 303 to the instance's page", a.code, a.hdr.Get("Location"))
	}
	if got, _ := s.st.Question(context.Background(), rec.ID, q.ID); got.Status != instance.QuestionAnswered || got.Answer != "yes" {
		t.Errorf("the question: %s %q, want answered yes", got.Status, got.Answer)
	}
	page := b.do(http.MethodGet, a.hdr.Get("Location"), nil, nil)
	if !strings.Contains(page.body, "Answered “Ship it?” with “yes”") {
		t.Errorf("the page after answering does not say so:\n%s", page.body)
	}
	// Answered already: 409, said plainly.
	a = b.do(http.MethodPost, path, url.Values{"answer": {"no"}, "csrf": {b.csrf}}, map[string]string{"Accept": "application/json"})
	var res struct {
		OK    bool
		Error string
	}
	_ = json.Unmarshal([]byte(a.body), &res)
	if a.code != http.StatusConflict || res.OK || !strings.Contains(res.Error, "answered already") {
		t.Errorf("answering again: %d %s, want 409 saying it was answered", a.code, a.body)
	}
}

// TestUIAnswerForms: a choice, free text to a question without choices,
// and free text in place of the choices (other) reach the store as
// `instance answer` would send them; an empty answer is refused.
func TestUIAnswerForms(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	rec := s.create("claude-code", "")
	ctx := context.Background()
	b := s.browser()
	b.login(s.token)
	post := func(q *instance.Question, form url.Values) answer {
		form.Set("csrf", b.csrf)
		return b.do(http.MethodPost, "/ui/instances/"+rec.ID+"/questions/"+q.ID+"/answer", form, map[string]string{"Accept": "application/json"})
	}
	choice, _ := s.st.AddQuestion(ctx, rec.ID, "Which database?", []string{"Staging", "Production"})
	free, _ := s.st.AddQuestion(ctx, rec.ID, "What name?", nil)
	other, _ := s.st.AddQuestion(ctx, rec.ID, "Ship it?", []string{"yes", "no"})

	page := b.do(http.MethodGet, "/ui/instances/"+rec.ID, nil, nil)
	for _, want := range []string{`<button type="submit" name="answer" value="Staging" class="choice">Staging</button>`,
		`<label for="text-` + free.ID + `">Your answer</label>`, `name="other" value="1"`, `data-live="/ui/instances/` + rec.ID + `/events?`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the instance page lacks %s", want)
		}
	}
	if a := post(free, url.Values{"text": {"  "}}); a.code != http.StatusBadRequest {
		t.Errorf("an empty answer: %d, want 400", a.code)
	}
	for _, c := range []struct {
		q    *instance.Question
		form url.Values
		want string
	}{
		{choice, url.Values{"answer": {"Staging"}}, "Staging"},
		{free, url.Values{"text": {"agentctl-next"}, "free": {"1"}}, "agentctl-next"},
		{other, url.Values{"text": {"only on Friday"}, "other": {"1"}}, "only on Friday"},
	} {
		a := post(c.q, c.form)
		var res struct {
			OK       bool
			Message  string
			Question struct{ ID, Status, HTML string }
		}
		if err := json.Unmarshal([]byte(a.body), &res); err != nil || a.code != http.StatusOK || !res.OK {
			t.Errorf("answer %v: %d %s", c.form, a.code, a.body)
			continue
		}
		if res.Question.ID != c.q.ID || res.Question.Status != "answered" || !strings.Contains(res.Question.HTML, c.want) {
			t.Errorf("answer %v: the question comes back as %+v", c.form, res.Question)
		}
		got, _ := s.st.Question(ctx, rec.ID, c.q.ID)
		if got.Answer != c.want {
			t.Errorf("answer %v: stored %q, want %q", c.form, got.Answer, c.want)
		}
	}
	// A choice the question does not have is refused, not sent.
	q, _ := s.st.AddQuestion(ctx, rec.ID, "Colour?", []string{"red"})
	if a := post(q, url.Values{"answer": {"blue"}}); a.code != http.StatusConflict || !strings.Contains(a.body, "takes one of its choices") {
		t.Errorf("a choice it does not have: %d %s", a.code, a.body)
	}
}

// TestUISessionEnds: a session past its expiry, or of a revoked token,
// opens nothing.
func TestUISessionEnds(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(o *webui.Options) { o.SessionTTL = time.Hour })
	rec := s.create("claude-code", "expiry")
	b := s.browser()
	if a := b.login(s.token); a.code != http.StatusSeeOther {
		t.Fatalf("log in: %d", a.code)
	}
	s.clock.set(time.Now().Add(59 * time.Minute))
	if a := b.do(http.MethodGet, "/", nil, nil); a.code != http.StatusOK {
		t.Fatalf("before the expiry: %d", a.code)
	}
	s.clock.set(time.Now().Add(61 * time.Minute))
	a := b.do(http.MethodGet, "/", nil, nil)
	if a.code != http.StatusUnauthorized {
		t.Errorf("after the expiry: %d, want 401", a.code)
	}
	noData(t, "an expired session", a, rec)
	s.clock.set(time.Time{})

	b = s.browser()
	b.login(s.token)
	if _, _, _, err := s.st.CreateOperatorToken(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if a := b.do(http.MethodGet, "/ui/instances/"+rec.ID, nil, nil); a.code != http.StatusUnauthorized {
		t.Errorf("the session of a revoked token: %d, want 401", a.code)
	}
	if a := b.login(s.token); a.code != http.StatusUnauthorized {
		t.Errorf("logging in with a revoked token: %d, want 401", a.code)
	}
}

// TestUIList: newest activity first, the text and status filters (a GET
// form), and clear empty states.
func TestUIList(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	b := s.browser()
	b.login(s.token)
	if a := b.do(http.MethodGet, "/", nil, nil); !strings.Contains(a.body, "No instances yet") {
		t.Errorf("an empty store: want the empty state:\n%s", a.body)
	}
	ctx := context.Background()
	old := s.create("claude-code", "old-one")
	mid := s.create("auggie", "middle")
	fresh := s.create("claude-code", "fresh")
	// The oldest instance did something last.
	if _, err := s.st.AddEvent(ctx, instance.Event{InstanceID: old.ID, Tool: "t", Status: instance.StatusBlocked, Message: "waiting on CI"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.st.AddQuestion(ctx, mid.ID, "Which?", nil); err != nil {
		t.Fatal(err)
	}
	order := func(body string) []string {
		var out []string
		for _, m := range regexp.MustCompile(`class="inst" href="/ui/instances/[^"]+">([^<]+)<`).FindAllStringSubmatch(body, -1) {
			out = append(out, m[1])
		}
		return out
	}
	a := b.do(http.MethodGet, "/", nil, nil)
	if got := order(a.body); strings.Join(got, ",") != "middle,old-one,fresh" {
		t.Errorf("the instances in the order %v, want middle (a question), old-one (an event), fresh", got)
	}
	for _, want := range []string{"blocked", "no report yet", "1 waiting", fresh.Workspace} {
		if !strings.Contains(a.body, want) {
			t.Errorf("the list lacks %q", want)
		}
	}
	for q, want := range map[string]string{
		"?q=FRESH":          "fresh",
		"?q=auggie":         "middle",
		"?status=blocked":   "old-one",
		"?status=waiting":   "middle",
		"?q=old&status=any": "old-one", // an unknown status: ignored, said so
	} {
		a := b.do(http.MethodGet, "/"+q, nil, nil)
		if got := order(a.body); len(got) != 1 || got[0] != want {
			t.Errorf("GET /%s lists %v, want only %s", q, got, want)
		}
	}
	if a := b.do(http.MethodGet, "/?q=nothing-like-it", nil, nil); !strings.Contains(a.body, "No instance matches") || !strings.Contains(a.body, "Clear the filter") {
		t.Errorf("no match: want the empty state with a way back:\n%s", a.body)
	}
}

// TestUINoSecrets: an instance page names mounts by name, kind and
// prefix: a server's environment, headers and arguments never appear.
func TestUINoSecrets(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	rec := s.create("claude-code", "secrets",
		mount.Mount{Kind: mount.KindServer, Name: "web", Command: "/bin/false", Args: []string{"--api-key=argsecret123"}, Env: map[string]string{"API_KEY": "envsecret456"}},
		mount.Mount{Kind: mount.KindServer, Name: "remote", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer hdrsecret789"}})
	b := s.browser()
	b.login(s.token)
	a := b.do(http.MethodGet, "/ui/instances/"+rec.ID, nil, nil)
	if a.code != http.StatusOK {
		t.Fatalf("GET the instance: %d\n%s", a.code, a.body)
	}
	for _, secret := range []string{"argsecret123", "envsecret456", "hdrsecret789", "API_KEY", s.token} {
		if strings.Contains(a.body, secret) {
			t.Errorf("the instance page shows %q", secret)
		}
	}
	for _, want := range []string{"web", "remote", "not started", "ask_user_question_agentctl", "mcp__agentctl__ask_user_question_agentctl"} {
		if !strings.Contains(a.body, want) {
			t.Errorf("the instance page lacks %q", want)
		}
	}
}

// sseMessage is one server-sent event.
type sseMessage struct{ event, id, data string }

// TestUILiveStream: the stream sends new events, run output, questions and
// the end of the instance, from the cursor the page gave.
func TestUILiveStream(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	rec := s.create("claude-code", "live")
	ctx := context.Background()
	if _, err := s.st.AddEvent(ctx, instance.Event{InstanceID: rec.ID, Tool: "t", Status: instance.StatusRunning, Message: "before the page"}); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(rec.Dir, instance.RunLogFile)
	if err := os.WriteFile(log, []byte("=== run 1\nold output\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := s.browser()
	b.login(s.token)
	page := b.do(http.MethodGet, "/ui/instances/"+rec.ID, nil, nil)
	m := regexp.MustCompile(`data-live="([^"]+)"`).FindStringSubmatch(page.body)
	if m == nil || !strings.Contains(page.body, "old output") || !strings.Contains(page.body, "before the page") {
		t.Fatalf("the page lacks its live URL, output or event:\n%s", page.body)
	}
	liveURL := strings.ReplaceAll(m[1], "&amp;", "&")

	streamCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(streamCtx, http.MethodGet, s.srv.URL+liveURL, nil)
	res, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); res.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("the live stream: %d %s", res.StatusCode, ct)
	}
	msgs := make(chan sseMessage, 100)
	go func() {
		defer close(msgs)
		sc := bufio.NewScanner(res.Body)
		var cur sseMessage
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if cur.event != "" || len(data) > 0 {
					cur.data = strings.Join(data, "\n")
					msgs <- cur
				}
				cur, data = sseMessage{}, nil
			case strings.HasPrefix(line, "event: "):
				cur.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "id: "):
				cur.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: "))
			}
		}
	}()
	await := func(what string, ok func(sseMessage) bool) sseMessage {
		t.Helper()
		for {
			select {
			case m, open := <-msgs:
				if !open {
					t.Fatalf("the stream ended before %s", what)
				}
				if m.event == "progress" && strings.Contains(m.data, "before the page") {
					t.Errorf("the stream sent again an event the page shows")
				}
				if m.event == "output" && strings.Contains(m.data, "old output") {
					t.Errorf("the stream sent again output the page shows")
				}
				if ok(m) {
					return m
				}
			case <-streamCtx.Done():
				t.Fatalf("no %s on the stream", what)
			}
		}
	}
	if _, err := s.st.AddEvent(ctx, instance.Event{InstanceID: rec.ID, Tool: "t", Status: instance.StatusDone, Message: "all <b>done</b>"}); err != nil {
		t.Fatal(err)
	}
	ev := await("the new event", func(m sseMessage) bool { return m.event == "progress" })
	if !strings.Contains(ev.data, "all &lt;b&gt;done&lt;/b&gt;") || !strings.Contains(ev.data, ">done<") || ev.id == "" {
		t.Errorf("the event's message: %+v; want its HTML, escaped, with its status word and an id", ev)
	}
	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("new \x1b[32mgreen\x1b[0m output ✓\n")
	f.Close()
	out := await("the new output", func(m sseMessage) bool { return m.event == "output" })
	var text string
	if err := json.Unmarshal([]byte(out.data), &text); err != nil || text != "new green output ✓\n" {
		t.Errorf("the output: %q (%v), want the new line without its terminal escapes", out.data, err)
	}
	q, err := s.st.AddQuestion(ctx, rec.ID, "Deploy?", []string{"yes", "no"})
	if err != nil {
		t.Fatal(err)
	}
	qm := await("the question", func(m sseMessage) bool { return m.event == "question" && strings.Contains(m.data, q.ID) })
	var lq struct{ ID, Status, HTML string }
	if err := json.Unmarshal([]byte(qm.data), &lq); err != nil || lq.Status != "open" || !strings.Contains(lq.HTML, `value="`+b.csrf+`"`) {
		t.Errorf("the question on the stream: %+v (%v); want it open with its form", lq, err)
	}
	if _, err := s.st.Answer(ctx, rec.ID, q.ID, "yes", false); err != nil {
		t.Fatal(err)
	}
	await("the answered question", func(m sseMessage) bool {
		return m.event == "question" && strings.Contains(m.data, q.ID) && strings.Contains(m.data, `"status":"answered"`)
	})
	if _, err := s.st.DeleteInstance(ctx, rec.ID, instance.DeleteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	await("the end of the instance", func(m sseMessage) bool { return m.event == "gone" })
}

// TestUIOutputTail: a long run output shows its end, from a line's start,
// and says where the rest is.
func TestUIOutputTail(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	rec := s.create("claude-code", "long")
	var b strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&b, "line %05d <of the run>\n", i)
	}
	if err := os.WriteFile(filepath.Join(rec.Dir, instance.RunLogFile), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	br := s.browser()
	br.login(s.token)
	page := br.do(http.MethodGet, "/ui/instances/"+rec.ID, nil, nil).body
	m := regexp.MustCompile(`(?s)<pre id="output"[^>]*>(.*?)</pre>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no output on the page:\n%s", page)
	}
	out := m[1]
	if !strings.HasPrefix(out, "line ") || !strings.HasSuffix(out, "line 09999 &lt;of the run&gt;\n") || strings.Contains(out, "line 00000") {
		t.Errorf("the output shown starts %q and ends %q; want whole lines, the last ones, escaped", out[:min(40, len(out))], out[max(0, len(out)-40):])
	}
	if !strings.Contains(page, "The end of the output") || !strings.Contains(page, "agentctl instance logs "+rec.ID) {
		t.Errorf("the page does not say the output was cut and where the rest is")
	}
}

// TestUIRestartServers: the instance page of an instance with external
// servers has a button that asks its endpoints to restart them (the
// record's restart request, as `instance restart` sets it), behind the
// session's CSRF token; an instance without servers has none.
func TestUIRestartServers(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	rec := s.create("claude-code", "", mount.Mount{Kind: mount.KindServer, Name: "up", Command: "/bin/true"})
	plain := s.create("claude-code", "")
	b := s.browser()
	b.login(s.token)
	path := "/ui/instances/" + rec.ID + "/restart"
	if page := b.do(http.MethodGet, "/ui/instances/"+rec.ID, nil, nil); !strings.Contains(page.body, `action="`+path+`"`) {
		t.Fatalf("the page has no restart button:\n%s", page.body)
	}
	if page := b.do(http.MethodGet, "/ui/instances/"+plain.ID, nil, nil); strings.Contains(page.body, "/restart") {
		t.Errorf("an instance without servers has a restart button")
	}
	if a := b.do(http.MethodPost, path, url.Values{}, nil); a.code != http.StatusForbidden {
		t.Errorf("restart without the CSRF token: %d, want 403", a.code)
	}
	if got, _ := s.st.Get(context.Background(), rec.ID); got.Restarts != nil {
		t.Fatalf("a refused POST set a restart request: %+v", got.Restarts)
	}
	a := b.do(http.MethodPost, path, url.Values{"csrf": {b.csrf}}, nil)
	if a.code != http.StatusSeeOther || !strings.Contains(a.hdr.Get("Location"), "restarted=none") {
		t.Fatalf("restart: %d %v", a.code, a.hdr)
	}
	if got, _ := s.st.Get(context.Background(), rec.ID); got.Restarts[instance.RestartAll].IsZero() {
		t.Fatal("no restart request in the record")
	}
	if page := b.do(http.MethodGet, a.hdr.Get("Location"), nil, nil); !strings.Contains(page.body, "No endpoint serves this instance now") {
		t.Errorf("the page after restarting does not say that nothing serves the instance")
	}
}
