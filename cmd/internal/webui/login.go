package webui

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentctl/agentctl/instance"
)

// loginView is the log-in page: a form that posts an operator token.
type loginView struct {
	// Token is the one the login URL carried, when it did: the form posts
	// it, and the script sends the form at once (AutoSubmit).
	Token      string
	AutoSubmit bool
	Next       string
	Error      string
	LoggedOut  bool
}

// loginHint says where a login URL comes from.
const loginHint = "`agentctl serve` prints a login URL when it makes the first operator token; `agentctl ui`, run where the store is, prints a new one."

// loginPage is GET /login. With ?token= it shows a form holding the token,
// which the script posts at once after taking the token out of the
// address bar (and so out of the history); nothing is set by a GET.
// Without, a form to paste a token into.
func (u *UI) loginPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	v := &loginView{Token: q.Get("token"), Next: safeNext(q.Get("next")), LoggedOut: q.Get("out") != ""}
	v.AutoSubmit = v.Token != ""
	u.render(w, http.StatusOK, "login", &page{Title: "Log in", Login: v})
}

// needLogin answers a request without a session: the log-in page (401)
// coming back to the page asked for, or a JSON error for the script.
func (u *UI) needLogin(w http.ResponseWriter, r *http.Request) {
	if wantsJSON(r) {
		writeJSON(w, http.StatusUnauthorized, answerResult{Error: "Your session ended: log in again. " + loginHint})
		return
	}
	next := "/"
	if r.Method == http.MethodGet {
		next = safeNext(r.URL.RequestURI())
	}
	u.render(w, http.StatusUnauthorized, "login", &page{Title: "Log in", Login: &loginView{Next: next}})
}

// login is POST /login: the operator token checked against the store's
// hashes opens a session, whose id goes into an HttpOnly, SameSite=Strict
// cookie (Secure behind https); then to the page asked for.
func (u *UI) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		u.errorPage(w, r, nil, http.StatusBadRequest, "The form could not be read: "+err.Error(), "")
		return
	}
	token := strings.TrimSpace(r.PostForm.Get("token"))
	next := safeNext(r.PostForm.Get("next"))
	if token == "" {
		u.render(w, http.StatusUnauthorized, "login", &page{Title: "Log in", Login: &loginView{Next: next, Error: "Paste an operator token first."}})
		return
	}
	id, sess, err := u.o.Store.CreateUISession(r.Context(), token, u.o.SessionTTL)
	switch {
	case errors.Is(err, instance.ErrNotAuthorized):
		msg := "That is not an operator token in force: it is mistyped, or was revoked (agentctl ui --new-token revokes the others)."
		if strings.HasPrefix(token, instance.TokenPrefix) {
			msg = "That is an instance's token: the page takes an operator token only."
		}
		u.render(w, http.StatusUnauthorized, "login", &page{Title: "Log in", Login: &loginView{Next: next, Error: msg}})
		return
	case err != nil:
		u.storeFailed(w, r, nil, err)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: u.cookieName(), Value: id, Path: "/",
		Expires: sess.ExpiresAt, MaxAge: int(u.o.SessionTTL.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: u.secure(),
	})
	securityHeaders(w.Header())
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout is POST /logout: the session ends, in the store too.
func (u *UI) logout(w http.ResponseWriter, r *http.Request, s *session) {
	if err := u.o.Store.DeleteUISession(r.Context(), s.id); err != nil {
		u.storeFailed(w, r, s, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: u.cookieName(), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: u.secure()})
	securityHeaders(w.Header())
	http.Redirect(w, r, "/login?out=1", http.StatusSeeOther)
}

// safeNext is where to go after logging in: a path of this server, never
// another site's URL; "/" for anything else. It takes printable ASCII
// only, without a backslash: browsers drop tabs and newlines from a URL
// and read '\' as '/', so "/\t/evil.example" and "/\\evil.example" are
// "//evil.example", another site, and a path of the page (the request
// URI needLogin passes) is ASCII, escaped. What is left must parse as a
// path alone (no scheme, no host), starting with one '/'.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/login") {
		return "/"
	}
	for i := 0; i < len(next); i++ {
		if c := next[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return "/"
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(u.EscapedPath(), "/") || strings.HasPrefix(u.EscapedPath(), "//") {
		return "/"
	}
	return next
}
