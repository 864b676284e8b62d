// Package webui is the web page `agentctl serve` serves beside the MCP
// URLs: every instance of the store, newest activity first; an instance's
// open questions with answer forms, its events and its headless run's
// output as they come, the names its model sees and its mounts' and
// servers' health.
//
// The page is server-rendered HTML ([html/template]) with one small script
// for the live parts (server-sent events) and the answer buttons; both,
// and the style sheet, are embedded in the binary. Without the script
// everything but the live updates works: forms post and pages reload.
//
// Access needs an operator token (never an instance's token): GET
// /login?token=T shows a page whose form posts the token (the script
// sends it at once and takes the token out of the address bar and the
// history); POST /login checks it against the store's hashes
// ([instance.Store.CreateUISession]) and sets a session cookie, HttpOnly
// and SameSite=Strict (and Secure behind an https base URL), named after
// the base URL's port so that two daemons on one host keep their logins
// apart. Every form
// carries the session's CSRF token and a POST without it is refused (403).
// The daemon puts the page behind the same Host and Origin checks as the
// MCP URLs.
//
//	ui := webui.New(webui.Options{Store: st, Live: live})
//	ui.Register(mux) // GET /, /ui/..., /login, /logout
//	defer ui.Close() // ends the live streams
package webui

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Endpoint is what the page reads of an instance's running endpoint:
// *mcpserver.Endpoint has it.
type Endpoint interface {
	Health() mcpserver.Health
	ToolNames() []mcpserver.NamedTool
}

// Options configure a [UI].
type Options struct {
	Store *instance.Store
	// Live, when set, runs fn with instance id's endpoint if the daemon
	// runs one now (holding it meanwhile) and reports whether it did; the
	// page then shows the endpoint's own health and names. Otherwise they
	// come from the record, the external servers as not started.
	Live func(id string, fn func(Endpoint)) bool
	// BaseURL is the public URL the page is reached at, if set; an https
	// one makes the session cookie Secure, and its port is in the
	// cookie's name (see [UI.cookieName]).
	BaseURL string
	// SessionTTL is how long a login lasts (0: [instance.DefaultSessionTTL]).
	SessionTTL time.Duration
	// PollInterval is how often a live stream reads the store when nothing
	// woke it (0: one second). PostgreSQL wakes it at once.
	PollInterval time.Duration
	// Version is agentctl's, shown at the foot of the page.
	Version string
	// Logger receives the page's errors (never a token); nil discards.
	Logger *slog.Logger
}

// UI is the web page's handlers.
type UI struct {
	o   Options
	log *slog.Logger
	// cookie is the session cookie's name (see [UI.cookieName]).
	cookie string
	// closing ends the live streams when the daemon stops.
	closing   chan struct{}
	closeOnce sync.Once
}

// New returns the page's handlers; [UI.Register] mounts them.
func New(o Options) *UI {
	if o.SessionTTL <= 0 {
		o.SessionTTL = instance.DefaultSessionTTL
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Live == nil {
		o.Live = func(string, func(Endpoint)) bool { return false }
	}
	u := &UI{o: o, log: o.Logger, closing: make(chan struct{})}
	u.cookie = sessionCookieName(o.BaseURL, u.secure())
	return u
}

// Register mounts the page on mux: GET / (the instances), /ui/... (an
// instance, its live stream, its answer forms, the static files), /login
// and /logout.
func (u *UI) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", u.authed(u.listPage))
	mux.HandleFunc("GET /ui/{$}", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/", http.StatusSeeOther) })
	mux.HandleFunc("GET /ui/instances/{id}", u.authed(u.instancePage))
	mux.HandleFunc("GET /ui/instances/{id}/events", u.liveStream)
	mux.HandleFunc("POST /ui/instances/{id}/questions/{qid}/answer", u.authed(u.answer))
	mux.HandleFunc("POST /ui/instances/{id}/restart", u.authed(u.restart))
	mux.HandleFunc("GET /ui/static/{file}", u.static)
	mux.HandleFunc("GET /login", u.loginPage)
	mux.HandleFunc("POST /login", u.login)
	mux.HandleFunc("POST /logout", u.authed(u.logout))
	// Anything else under /ui/ is the page's own 404, not the daemon's.
	mux.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		u.errorPage(w, r, nil, http.StatusNotFound, "There is no page here.", "")
	})
}

// Close ends the live streams (the daemon is stopping); the browsers try
// again and say so.
func (u *UI) Close() { u.closeOnce.Do(func() { close(u.closing) }) }

// cookieName is the session cookie's name (see sessionCookieName).
func (u *UI) cookieName() string { return u.cookie }

// sessionCookieName is the name of the session cookie of the page at
// base: agentctl_session_PORT, PORT being base's (its scheme's default
// when it has none), with the __Host- prefix when it is Secure, which also
// binds it to this host and path /. Browsers keep one cookie jar per host
// whatever the port, so two daemons on one host (two stores, on 7821 and
// 7822) must not share a name: logging in to one would overwrite, and so
// end, the other's session. The daemons of one shared store behind one
// base URL share it, as they share the sessions. Without a base URL (or
// with one that does not parse) it is agentctl_session.
func sessionCookieName(base string, secure bool) string {
	name := "agentctl_session"
	if u, err := url.Parse(base); err == nil && u.Host != "" {
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
		}
		if port != "" {
			name += "_" + port
		}
	}
	if secure {
		name = "__Host-" + name
	}
	return name
}

func (u *UI) secure() bool { return strings.HasPrefix(strings.ToLower(u.o.BaseURL), "https://") }

// session is the request's session, if its cookie names one in force.
type session struct {
	id string
	*instance.UISession
}

// currentSession reads the request's session; nil when there is none (no
// cookie, or a wrong, expired or revoked one), with an error only when the
// store failed.
func (u *UI) currentSession(r *http.Request) (*session, error) {
	c, err := r.Cookie(u.cookieName())
	if err != nil || c.Value == "" {
		return nil, nil
	}
	s, err := u.o.Store.UISession(r.Context(), c.Value)
	if errors.Is(err, instance.ErrNotAuthorized) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &session{id: c.Value, UISession: s}, nil
}

// authed wraps a page that needs a session: without one the answer is
// the log-in page (401), with nothing of the store's in it.
func (u *UI) authed(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := u.currentSession(r)
		if err != nil {
			u.log.Error("web page: reading the session failed", "error", err)
			u.errorPage(w, r, nil, http.StatusServiceUnavailable, "The store did not answer, so your session could not be checked.", "Try again in a moment.")
			return
		}
		if s == nil {
			u.needLogin(w, r)
			return
		}
		if r.Method == http.MethodPost && !u.csrfOK(w, r, s) {
			return
		}
		h(w, r, s)
	}
}

// maxForm bounds a form's body.
const maxForm = 64 << 10

// csrfOK checks a POST's CSRF token against the session's, answering 403
// when it is missing or wrong.
func (u *UI) csrfOK(w http.ResponseWriter, r *http.Request, s *session) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		u.errorPage(w, r, s, http.StatusBadRequest, "The form could not be read: "+err.Error(), "")
		return false
	}
	got := r.PostForm.Get("csrf")
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(s.CSRF)) != 1 {
		msg := "This form did not come from this page of your session (its CSRF token is missing or wrong), so nothing was done."
		if wantsJSON(r) {
			writeJSON(w, http.StatusForbidden, answerResult{Error: msg})
			return false
		}
		u.errorPage(w, r, s, http.StatusForbidden, msg, "Reload the page and try again.")
		return false
	}
	return true
}

// securityHeaders are on every answer of the page's.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// Not no-referrer: with it a browser sends "Origin: null" on a form's
	// POST, which the Origin check refuses. same-origin still sends no
	// address (and so no login token) to another site.
	h.Set("Referrer-Policy", "same-origin")
}

func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

// static serves the embedded style sheet and script.
func (u *UI) static(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	var ctype string
	switch {
	case strings.HasSuffix(name, ".css"):
		ctype = "text/css; charset=utf-8"
	case strings.HasSuffix(name, ".js"):
		ctype = "text/javascript; charset=utf-8"
	default:
		http.NotFound(w, r)
		return
	}
	b, err := assets.ReadFile("static/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	securityHeaders(w.Header())
	w.Header().Set("Content-Type", ctype)
	// The URLs carry the version: a new binary's files are new URLs.
	w.Header().Set("Cache-Control", "private, max-age=3600")
	_, _ = w.Write(b)
}

// stopped is done when the request or the page ends.
func (u *UI) stopped(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-u.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// templates are the pages, parsed once when first needed (not at
// start-up: a command that serves no page pays nothing).
var templates = sync.OnceValues(func() (map[string]*template.Template, error) {
	out := map[string]*template.Template{}
	for _, name := range []string{"list", "instance", "login", "error"} {
		t, err := template.New(name).Funcs(funcs()).ParseFS(assets, "templates/layout.html", "templates/fragments.html", "templates/"+name+".html")
		if err != nil {
			return nil, err
		}
		out[name] = t
	}
	return out, nil
})

// fragment renders one of fragments.html's templates (for the live
// stream and the answer's JSON).
func fragment(name string, data any) (string, error) {
	ts, err := templates()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := ts["instance"].ExecuteTemplate(&b, name, data); err != nil {
		return "", err
	}
	return b.String(), nil
}
