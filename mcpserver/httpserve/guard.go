package httpserve

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
)

// GuardOptions configure [Guard].
type GuardOptions struct {
	// Listen is the address the server listens on (host:port). A request's
	// Host must name it, or localhost / a loopback address, or (when Listen
	// is an unspecified address such as 0.0.0.0) any IP address: never a
	// DNS name the server was not told about, which is what a DNS
	// rebinding attack sends.
	Listen string
	// AllowedHosts are more names a request's Host may give (with or
	// without a port): the names remote clients reach the server by.
	AllowedHosts []string
	// MaxBodyBytes refuses a request whose Content-Length says its body is
	// larger, with 413, before reading it (the [Handler] also stops reading
	// a body at the cap, whatever it announced). 0 means
	// [DefaultMaxBodyBytes].
	MaxBodyBytes int64
}

// Guard wraps next with the checks every request passes first: the Host
// (DNS-rebinding protection, 403), cross-origin requests from browsers
// ([http.NewCrossOriginProtection], 403), and the body's announced size
// (413).
func Guard(next http.Handler, o GuardOptions) http.Handler {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	listenHost, _, err := net.SplitHostPort(o.Listen)
	if err != nil {
		listenHost = o.Listen
	}
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Forbidden: cross-origin request refused (a browser page of another origin may not call this server)", http.StatusForbidden)
	}))
	inner := cop.Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !HostAllowed(r.Host, listenHost, o.AllowedHosts) {
			http.Error(w, fmt.Sprintf("Forbidden: Host %q is not this server's address (DNS-rebinding protection); use %s or localhost", r.Host, o.Listen), http.StatusForbidden)
			return
		}
		if r.ContentLength > o.MaxBodyBytes {
			http.Error(w, fmt.Sprintf("request body of %d bytes exceeds the limit of %d bytes", r.ContentLength, o.MaxBodyBytes), http.StatusRequestEntityTooLarge)
			return
		}
		inner.ServeHTTP(w, r)
	})
}

// HostAllowed reports whether a request's Host header may reach a server
// listening on listenHost (see [GuardOptions.Listen]).
func HostAllowed(hostHeader, listenHost string, allowed []string) bool {
	host, _, err := net.SplitHostPort(hostHeader)
	if err != nil {
		host = hostHeader
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if host == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	if ip != nil && ip.IsLoopback() {
		return true
	}
	lh := strings.Trim(listenHost, "[]")
	if strings.EqualFold(host, lh) {
		return true
	}
	if lip := net.ParseIP(lh); ip != nil && (lh == "" || (lip != nil && lip.IsUnspecified())) {
		return true
	}
	for _, a := range allowed {
		ah, _, err := net.SplitHostPort(a)
		if err != nil {
			ah = a
		}
		if strings.EqualFold(host, strings.Trim(ah, "[]")) {
			return true
		}
	}
	return false
}

// TokenChecker checks an instance's bearer token. The instance store
// implements it (the token's hash lives there); it must compare in
// constant time, and say false, not an error, for an instance that does
// not exist, so that an unauthenticated caller learns nothing of which
// instances exist.
type TokenChecker interface {
	CheckToken(ctx context.Context, instanceID, token string) (bool, error)
}

// TokenCheckerFunc adapts a function to [TokenChecker].
type TokenCheckerFunc func(ctx context.Context, instanceID, token string) (bool, error)

// CheckToken calls f.
func (f TokenCheckerFunc) CheckToken(ctx context.Context, instanceID, token string) (bool, error) {
	return f(ctx, instanceID, token)
}

// StaticToken is a [TokenChecker] that accepts one token for every
// instance, compared in constant time: for tests and single-user setups.
type StaticToken string

// CheckToken reports whether token is t.
func (t StaticToken) CheckToken(_ context.Context, _, token string) (bool, error) {
	return t != "" && subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1, nil
}

// BearerToken returns the token of the request's `Authorization: Bearer
// TOKEN` header.
func BearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// Authorize checks the request's bearer token for instanceID with c. It
// writes 401 (with `WWW-Authenticate: Bearer`) and returns false when the
// token is missing or wrong, and 500 when c fails. The token never
// reaches a log or an answer.
func Authorize(w http.ResponseWriter, r *http.Request, c TokenChecker, instanceID string, log *slog.Logger) bool {
	token, ok := BearerToken(r)
	if ok {
		good, err := c.CheckToken(r.Context(), instanceID, token)
		if err != nil {
			if log != nil {
				log.Error("checking a token failed", "instance", instanceID, "error", err)
			}
			http.Error(w, "Internal Server Error: the token could not be checked", http.StatusInternalServerError)
			return false
		}
		if good {
			return true
		}
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="agentctl"`)
	msg := "Unauthorized: this URL needs the instance's token: Authorization: Bearer TOKEN"
	if ok {
		msg = "Unauthorized: the token is not this instance's"
	}
	http.Error(w, msg, http.StatusUnauthorized)
	return false
}

// ServerOptions are an [http.Server]'s timeouts.
type ServerOptions struct {
	// ReadHeaderTimeout bounds reading a request's headers (default 10s).
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long (default 2m).
	IdleTimeout time.Duration
	// MaxHeaderBytes caps a request's headers (default 64 KiB).
	MaxHeaderBytes int
	// ErrorLog receives the server's own errors; nil: the log package's.
	ErrorLog *slog.Logger
}

// NewServer returns an [http.Server] for h with the timeouts set. There is
// no ReadTimeout nor WriteTimeout: a session's event stream and a call
// waiting for a person's answer live long on purpose; each request is
// bounded by [Options.RequestTimeout] instead, and a body is read under
// the cap of [Options.MaxBodyBytes].
func NewServer(h http.Handler, o ServerOptions) *http.Server {
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = 10 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 2 * time.Minute
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = 64 << 10
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: o.ReadHeaderTimeout, IdleTimeout: o.IdleTimeout, MaxHeaderBytes: o.MaxHeaderBytes}
	if o.ErrorLog != nil {
		srv.ErrorLog = slog.NewLogLogger(o.ErrorLog.Handler(), slog.LevelWarn)
	}
	return srv
}
