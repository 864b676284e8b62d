package proxy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/mcpserver/mount"
)

// minSecretLen is the shortest value that is replaced wherever it occurs in
// a text; a shorter one ("1", "on") would mangle the text, and is replaced
// only where it stands in its URL (the URL, its user information, its
// query), which is also where net/http and go-sdk quote it.
const minSecretLen = 3

// redactor returns the replacer that takes an HTTP server's secrets out of
// a text before it is stored, logged or shown to a model: every form of its
// URL that an error may quote (as written, as url.URL prints it, and as
// net/http prints it with the password as "***") becomes [mount.RedactURL]'s
// form, and its user information, its query, their values and its headers'
// values become "redacted". Errors of go-sdk and net/http quote the URL
// (`Post "http://user:***@h/mcp?key=SECRET": dial tcp ...`), and a server
// may echo a header in its answer. A stdio server has no such secrets in
// what agentctl writes: nothing logs its environment.
func redactor(m mount.Resolved) *strings.Replacer {
	if m.URL == "" {
		return strings.NewReplacer()
	}
	redacted := mount.RedactURL(m.URL)
	// Longest first: at one position, the first matching argument wins.
	pairs := []string{m.URL, redacted}
	var short []string
	add := func(secret, with string) {
		if secret == "" || secret == with {
			return
		}
		if len(secret) < minSecretLen {
			return
		}
		short = append(short, secret, with)
	}
	if u, err := url.Parse(m.URL); err == nil {
		pairs = append(pairs, u.String(), redacted)
		if u.User != nil {
			user := u.User.Username()
			pw, hasPW := u.User.Password()
			if hasPW {
				starred := strings.Replace(u.String(), u.User.String()+"@", user+":***@", 1)
				pairs = append(pairs, starred, redacted,
					u.User.String()+"@", "redacted@", user+":"+pw+"@", "redacted@", user+":***@", "redacted@")
				add(u.User.String(), "redacted")
				add(pw, "redacted")
				add(url.QueryEscape(pw), "redacted")
			} else {
				pairs = append(pairs, u.User.String()+"@", "redacted@")
			}
		}
		for _, seg := range mount.SecretSegments(u.Path) {
			add(seg, "redacted")
		}
		if u.RawQuery != "" {
			pairs = append(pairs, "?"+u.RawQuery, "?redacted")
			add(u.RawQuery, "redacted")
			for _, vs := range u.Query() {
				for _, v := range vs {
					add(v, "redacted")
					add(url.QueryEscape(v), "redacted")
				}
			}
		}
	}
	for _, v := range m.Headers {
		add(v, "redacted")
		if f := strings.Fields(v); len(f) > 1 {
			add(f[len(f)-1], "redacted") // the token of "Bearer TOKEN"
		}
	}
	return strings.NewReplacer(append(pairs, short...)...)
}

// scrub returns err with the server's secrets taken out of its text (see
// redactor; for a stdio server, what its stderr's lines lose: see
// stderrRedactor, since an error may quote the server's output, which may
// hold its environment); nil for nil. The result wraps nothing: what it
// would unwrap to still holds them. An error with nothing to take out is
// returned as it is.
func (s *Server) scrub(err error) error {
	if err == nil {
		return nil
	}
	if s.mount.URL == "" {
		if s.stderr == nil || s.stderr.redact == nil {
			return err
		}
		if text := s.stderr.redact.Replace(err.Error()); text != err.Error() {
			return errors.New(text)
		}
		return err
	}
	return errors.New(s.redact.Replace(err.Error()))
}

// redactLogger returns l with the server's secrets taken out of every
// record (see redactor): go-sdk's client session logs errors that quote
// the URL ("calling tools/call: Post \"http://...\": ..."). A stdio
// server's logger is l.
func (s *Server) redactLogger(l *slog.Logger) *slog.Logger {
	if s.mount.URL == "" {
		return l
	}
	return slog.New(redactHandler{l.Handler(), s.redact})
}

// redactHandler passes records on with r applied to the message and to
// every attribute's text.
type redactHandler struct {
	slog.Handler
	r *strings.Replacer
}

func (h redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.Replace(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = h.attr(a)
	}
	return redactHandler{h.Handler.WithAttrs(clean), h.r}
}

func (h redactHandler) WithGroup(name string) slog.Handler {
	return redactHandler{h.Handler.WithGroup(name), h.r}
}

func (h redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.Replace(v.String()))
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, ga := range g {
			clean[i] = h.attr(ga)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		text := fmt.Sprint(v.Any())
		if clean := h.r.Replace(text); clean != text {
			return slog.String(a.Key, clean)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// stderrRedaction takes a stdio server's secrets out of what it writes to
// its stderr (see stderrRedactor); longest is the longest secret's length.
type stderrRedaction struct {
	replacer *strings.Replacer
	longest  int
}

// Redacted is what a secret in a server's stderr becomes.
const Redacted = "<redacted>"

// stderrRedactor returns what takes a stdio server's secrets out of the
// lines of its stderr that get_instance, /instances/ID/health and `tools
// list` show: a server may print its environment or its command line
// (a crash report, a usage message). The secrets are every value of the
// mount's env (all of them, as [mount.Mount.Redacted] hides them), the
// value of every variable of environ (agentctl's own, which the server
// inherits) whose name [mount.SecretName] says is a credential, and the
// value of every argument that is such a flag's (`--token T`,
// `--api-key=K`); and, whatever a variable's or a flag's name, what a URL
// in a variable's value or in an argument holds of a credential (see
// urlSecrets: DATABASE_URL=postgres://user:PASSWORD@host/db). A value of
// several lines counts each line. A value shorter than minSecretLen is
// left: it would mangle the text.
func stderrRedactor(m mount.Resolved, environ []string) *stderrRedaction {
	var secrets []string
	add := func(v string) {
		for line := range strings.SplitSeq(v, "\n") {
			if line = strings.TrimRight(line, "\r"); len(line) >= minSecretLen {
				secrets = append(secrets, line)
			}
		}
	}
	for _, v := range m.Env {
		add(v)
	}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if mount.SecretName(k) {
			add(v)
		} else {
			urlSecrets(v, add)
		}
	}
	for _, a := range m.Args {
		urlSecrets(a, add)
	}
	for i, a := range m.Args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || !mount.SecretName(name) {
			continue
		}
		if hasValue {
			add(value)
		} else if i+1 < len(m.Args) {
			add(m.Args[i+1])
		}
	}
	// Longest first: at one position, the first matching argument wins.
	slices.SortFunc(secrets, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) })
	secrets = slices.Compact(secrets)
	r := &stderrRedaction{}
	pairs := make([]string, 0, 2*len(secrets))
	for _, s := range secrets {
		pairs = append(pairs, s, Redacted)
		r.longest = max(r.longest, len(s))
	}
	r.replacer = strings.NewReplacer(pairs...)
	return r
}

// urlUserinfo finds the user information of a URL in a text (scheme://,
// then everything up to the last '@' before the host), and urlQueryParam a
// query's parameter (?name=value, &name=value).
var (
	urlUserinfo   = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://([^\s/?#]*)@`)
	urlQueryParam = regexp.MustCompile(`[?&]([^\s=&#]+)=([^\s&#]*)`)
)

// urlSecrets calls add with what the URLs in text hold of a credential:
// the "user:password" of their user information and its password, as
// written and percent-decoded, and the value of every query parameter
// whose name [mount.SecretName] says is a credential's
// (?sslpassword=P, ?token=T). A URL's password is a secret whatever the
// name of the variable that holds it (DATABASE_URL, REDIS_URL, a DSN).
func urlSecrets(text string, add func(string)) {
	if !strings.Contains(text, "://") {
		return
	}
	for _, m := range urlUserinfo.FindAllStringSubmatch(text, -1) {
		_, pw, hasPW := strings.Cut(m[1], ":")
		if !hasPW || pw == "" {
			continue
		}
		add(m[1])
		add(pw)
		if dec, err := url.PathUnescape(pw); err == nil && dec != pw {
			add(dec)
		}
	}
	for _, m := range urlQueryParam.FindAllStringSubmatch(text, -1) {
		if m[2] == "" || !mount.SecretName(m[1]) {
			continue
		}
		add(m[2])
		if dec, err := url.QueryUnescape(m[2]); err == nil && dec != m[2] {
			add(dec)
		}
	}
}
