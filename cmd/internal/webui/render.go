package webui

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// page is what the layout renders; exactly one of the page parts is set.
type page struct {
	Title   string
	Version string
	// Asset changes with the style sheet and the script, so that their
	// URLs do.
	Asset string
	// CSRF is the session's, for the log-out form; "" without a session.
	CSRF  string
	Flash *flash

	List  *listView
	Inst  *instanceView
	Login *loginView
	Error *errorView
}

// flash is a message at the top of a page: done (Error false) or not.
type flash struct {
	Error bool
	Text  string
}

// errorView is an error page's message and what to do about it.
type errorView struct {
	Message string
	Hint    string
}

// render writes the page named name with status.
func (u *UI) render(w http.ResponseWriter, status int, name string, p *page) {
	ts, err := templates()
	if err != nil {
		u.log.Error("web page: the templates do not parse", "error", err)
		http.Error(w, "Internal Server Error: the web page's templates are broken", http.StatusInternalServerError)
		return
	}
	p.Version, p.Asset = u.o.Version, assetVersion()
	var b bytes.Buffer
	if err := ts[name].ExecuteTemplate(&b, "layout", p); err != nil {
		u.log.Error("web page: rendering failed", "page", name, "error", err)
		http.Error(w, "Internal Server Error: the page could not be rendered", http.StatusInternalServerError)
		return
	}
	securityHeaders(w.Header())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// errorPage renders an error page: what went wrong and what to do.
func (u *UI) errorPage(w http.ResponseWriter, _ *http.Request, s *session, status int, msg, hint string) {
	p := &page{Title: http.StatusText(status), Error: &errorView{Message: msg, Hint: hint}}
	if s != nil {
		p.CSRF = s.CSRF
	}
	u.render(w, status, "error", p)
}

// assetVersion is a digest of the style sheet and the script.
var assetVersion = sync.OnceValue(func() string {
	h := sha256.New()
	for _, f := range []string{"static/app.css", "static/app.js"} {
		b, _ := assets.ReadFile(f)
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)[:6])
})

func writeJSON(w http.ResponseWriter, status int, v any) {
	securityHeaders(w.Header())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// funcs are the templates' functions.
func funcs() template.FuncMap {
	return template.FuncMap{
		"iso":       func(t any) string { return timeOf(t).UTC().Format(time.RFC3339) },
		"clock":     func(t any) string { return timeOf(t).UTC().Format("15:04:05") },
		"when":      func(t any) string { return timeOf(t).UTC().Format("2006-01-02 15:04 UTC") },
		"ago":       func(t any) string { return ago(timeOf(t)) },
		"deref":     func(p *int) int { return *p },
		"cls":       className,
		"loginHint": func() string { return loginHint },
		"percent":   func(p *float64) string { return strconv.FormatFloat(*p, 'f', -1, 64) + "%" },
		"plural": func(n int, one, many string) string {
			if n == 1 {
				return "1 " + one
			}
			return strconv.Itoa(n) + " " + many
		},
		"statusWord": statusWord,
		"join":       strings.Join,
	}
}

// timeOf is t, a time.Time or a *time.Time (the zero time for nil).
func timeOf(t any) time.Time {
	switch t := t.(type) {
	case time.Time:
		return t
	case *time.Time:
		if t != nil {
			return *t
		}
	}
	return time.Time{}
}

// className is s as one CSS class name: lower case, other characters
// made '-'.
func className(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

// ago is how long before now t was, in words.
func ago(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := time.Since(t)
	switch {
	case d < 0:
		return "just now"
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return plural(int(d/time.Minute), "minute") + " ago"
	case d < 24*time.Hour:
		return plural(int(d/time.Hour), "hour") + " ago"
	case d < 60*24*time.Hour:
		return plural(int(d/(24*time.Hour)), "day") + " ago"
	}
	return t.UTC().Format("2006-01-02")
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// statusWord is the word shown for an instance's latest status ("" before
// its first report).
func statusWord(s string) string {
	if s == "" {
		return "no report yet"
	}
	return s
}

// quote puts s in quotation marks, for messages.
func quote(s string) string { return "“" + s + "”" }

func itoa(n int) string { return strconv.Itoa(n) }
