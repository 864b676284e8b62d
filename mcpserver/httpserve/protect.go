package httpserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// ProtectOptions configure [Protect].
type ProtectOptions struct {
	// Listen is the address the server listens on (host:port). A request's
	// Host, and its Origin if it has one, must name it (see [HostAllowed]):
	// never a DNS name the server was not told about, which is what a DNS
	// rebinding attack sends, nor a page of another origin. When its port
	// is 0 or missing, the port the request came in on is used.
	Listen string
	// AllowedHosts are more names a request's Host or Origin may give: the
	// names remote clients reach the server by. A name without a port is
	// allowed with any port; one with a port, with that port only (a Host
	// without a port naming a default port, 80 or 443).
	AllowedHosts []string
	// MaxBodyBytes refuses a request whose Content-Length says its body is
	// larger, with 413, before reading it (the [Handler] also stops reading
	// a body at the cap, whatever it announced). 0 means
	// [DefaultMaxBodyBytes].
	MaxBodyBytes int64
	// BodyTimeout bounds reading a request's body, from the moment Protect
	// sees the request (a [Handler] behind it restarts the count with its
	// own [Options.BodyTimeout] when it gets the request, so the time
	// spent building an endpoint is not taken from the body): a client
	// that sends its body slowly (or never ends it) has its connection
	// closed then, on every route, whether or not the route reads the
	// body. The deadline is lifted once the body has been read to its
	// end, so a long call or event stream is not cut. 0 means
	// [DefaultBodyTimeout].
	BodyTimeout time.Duration
}

// Protect wraps next with the checks every request passes first, whatever
// its route: the Host (DNS-rebinding protection, 403) and the Origin (a
// browser page of another origin, 403), both by [HostAllowed]; the body's
// announced size (413); and the body's read deadline
// ([ProtectOptions.BodyTimeout]).
func Protect(next http.Handler, o ProtectOptions) http.Handler {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	// The rule is parsed once when the listen address has its port (as
	// the daemon's does), else for each request (the port it came in on).
	var static *hostRule
	if _, port, ok := splitHostPort(o.Listen, 0); ok && port != 0 {
		rule := newHostRule(o.Listen, o.AllowedHosts)
		static = &rule
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// First, so that a body the route never reads is bounded too:
		// net/http reads (discards) what is left of it after the answer.
		armBodyDeadline(w, r, o.BodyTimeout)
		rule := static
		if rule == nil {
			perRequest := newHostRule(listenAddr(o.Listen, r), o.AllowedHosts)
			rule = &perRequest
		}
		if !rule.allows(r.Host) {
			http.Error(w, fmt.Sprintf("Forbidden: Host %q is not this server's address (DNS-rebinding protection); use %s", r.Host, rule.hint()), http.StatusForbidden)
			return
		}
		if ok, why := originAllowed(r, rule); !ok {
			http.Error(w, "Forbidden: cross-origin request refused ("+why+"): a browser page of another origin may not call this server", http.StatusForbidden)
			return
		}
		if r.ContentLength > o.MaxBodyBytes {
			http.Error(w, fmt.Sprintf("request body of %d bytes exceeds the limit of %d bytes", r.ContentLength, o.MaxBodyBytes), http.StatusRequestEntityTooLarge)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// listenAddr is the listen address the Host and Origin rules use: listen,
// or the address the request came in on when listen has no port (or port
// 0).
func listenAddr(listen string, r *http.Request) string {
	if _, port, ok := splitHostPort(listen, 0); ok && port != 0 {
		return listen
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return listen
	}
	_, lport, err := net.SplitHostPort(local.String())
	if err != nil {
		return listen
	}
	host, _, ok := splitHostPort(listen, 0)
	if !ok {
		host = ""
	}
	return net.JoinHostPort(host, lport)
}

// hint says which Hosts the rule allows: the listen address's forms, then
// the names it was given (--allow-host, and the base URL's host), or how
// to give one.
func (h *hostRule) hint() string {
	hint := hostHint(h.listen)
	if len(h.allowed) == 0 {
		return hint + "; to reach it by another name, give that name with --allow-host (serve: or --base-url)"
	}
	names := make([]string, len(h.allowed))
	for i, a := range h.allowed {
		names[i] = a.host
		if strings.Contains(a.host, ":") {
			names[i] = "[" + a.host + "]"
		}
		if a.port != 0 {
			names[i] += ":" + strconv.Itoa(a.port)
		}
	}
	return hint + ", or a name given with --allow-host or the base URL (--base-url, a port meaning that port only): " + strings.Join(names, ", ")
}

func hostHint(listen string) string {
	host, port, ok := splitHostPort(listen, 0)
	if !ok || port == 0 {
		return "localhost, 127.0.0.1 or [::1] with the listen port"
	}
	p := strconv.Itoa(port)
	hint := "localhost:" + p + ", 127.0.0.1:" + p + " or [::1]:" + p
	switch ip, err := netip.ParseAddr(host); {
	case host == "" || err == nil && ip.IsUnspecified():
		hint = "an IP address of this machine with port " + p + ", " + hint
	case err != nil || !ip.IsLoopback():
		hint = listen + ", " + hint
	}
	return hint
}

// HostAllowed is the one rule of which hosts a request may name, in its
// Host header and in its Origin (see [OriginAllowed]), on a server
// listening on listen (host:port). hostport is host[:port]; without a
// port it means its scheme's default port, which a Host header does not
// say: 80 (http) or 443 (https, through a TLS proxy). It is allowed when
//
//   - its port is listen's port and its host is a loopback form,
//     localhost, 127.0.0.1 or [::1] (any case), or listen's host itself,
//     or, when listen's host is unspecified (0.0.0.0, ::, empty), any IP
//     literal;
//   - or it is one of allowed (a name without a port: with any port; a
//     name with port 80 or 443: also without a port, as a client writes
//     https://NAME:443).
//
// Nothing else: not another loopback address (127.0.0.2), another
// spelling (localhost., an IPv4-mapped ::ffff:127.0.0.1, a zone), another
// port, nor a DNS name the server was not told about.
func HostAllowed(hostport, listen string, allowed []string) bool {
	rule := newHostRule(listen, allowed)
	return rule.allows(hostport)
}

// hostRule is [HostAllowed]'s rule with its listen address and allowed
// names parsed, once for every request [Protect] checks against them.
type hostRule struct {
	listen string
	// lhost and lport are listen's; lok is false when it is malformed
	// or has no port (then only allowed names pass).
	lhost string
	lport int
	lok   bool
	// lip is lhost as an IP address, when it is one.
	lip    netip.Addr
	lipErr bool
	// allowed are the allowed names (malformed or empty ones dropped),
	// port 0 meaning any.
	allowed []hostPort
}

type hostPort struct {
	host string
	port int
}

func newHostRule(listen string, allowed []string) hostRule {
	h := hostRule{listen: listen}
	for _, a := range allowed {
		if ah, ap, ok := splitHostPort(a, 0); ok && ah != "" {
			h.allowed = append(h.allowed, hostPort{ah, ap})
		}
	}
	h.lhost, h.lport, h.lok = splitHostPort(listen, 0)
	h.lok = h.lok && h.lport != 0
	if h.lok {
		var err error
		h.lip, err = netip.ParseAddr(h.lhost)
		h.lipErr = err != nil
	}
	return h
}

// allows is [HostAllowed] for the rule's listen address and names.
func (h *hostRule) allows(hostport string) bool {
	host, port, ok := splitHostPort(hostport, noPort)
	if !ok || host == "" {
		return false
	}
	for _, a := range h.allowed {
		if asciiEqualFold(host, a.host) && (a.port == 0 || samePort(port, a.port)) {
			return true
		}
	}
	if !h.lok || !samePort(port, h.lport) {
		return false
	}
	if asciiEqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		// A name: only the listen address itself, spelt as given.
		return h.lhost != "" && asciiEqualFold(host, h.lhost)
	}
	if ip.Zone() != "" {
		return false
	}
	if ip == netip.IPv6Loopback() || ip == netip.AddrFrom4([4]byte{127, 0, 0, 1}) {
		return true
	}
	if h.lhost == "" {
		return true // listening on every address: any IP literal
	}
	if h.lipErr {
		return false
	}
	return h.lip.IsUnspecified() || ip == h.lip
}

// noPort is the port [hostRule.allows] reads from a Host without one.
const noPort = -1

// samePort reports whether port, from a Host header (noPort when it has
// none), names want: a Host without a port names its scheme's default
// port, 80 or 443 (a browser or a TLS proxy sends "Host: NAME" for
// https://NAME:443 and for http://NAME:80).
func samePort(port, want int) bool {
	if port == noPort {
		return want == 80 || want == 443
	}
	return port == want
}

// OriginAllowed reports whether a request's Origin header names this
// server (see [HostAllowed]): http or https, and a host and port the
// Host header could give (an origin without a port has its scheme's).
// "null" and every other scheme are refused.
func OriginAllowed(origin, listen string, allowed []string) bool {
	rule := newHostRule(listen, allowed)
	return rule.originAllowed(origin)
}

// originAllowed is [OriginAllowed] for the rule's listen address and names.
func (h *hostRule) originAllowed(origin string) bool {
	scheme, rest, ok := strings.Cut(origin, "://")
	if !ok {
		return false
	}
	defPort := 0
	switch strings.ToLower(scheme) {
	case "http":
		defPort = 80
	case "https":
		defPort = 443
	default:
		return false
	}
	if rest == "" || strings.ContainsAny(rest, "/?#@ \t") {
		return false
	}
	host, port, ok := splitHostPort(rest, 0)
	if !ok || host == "" {
		return false
	}
	if port == 0 {
		return h.allows(net.JoinHostPort(host, strconv.Itoa(defPort)))
	}
	return h.allows(rest)
}

// originAllowed is the Origin check of [Protect]: a request with an Origin
// must name this server ([OriginAllowed]); one without may not say (by
// Sec-Fetch-Site) that a browser sent it from another site, unless it is
// the top-level GET of a link followed from there.
func originAllowed(r *http.Request, rule *hostRule) (bool, string) {
	origins := r.Header.Values("Origin")
	switch len(origins) {
	case 0:
		switch site := r.Header.Get("Sec-Fetch-Site"); {
		case site == "", site == "same-origin", site == "none":
			return true, ""
		case (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
			r.Header.Get("Sec-Fetch-Mode") == "navigate" && r.Header.Get("Sec-Fetch-Dest") == "document":
			// A link followed from another site (a notification in a chat
			// or a mail): a page load, which carries no SameSite=Strict
			// cookie and no token, so it reaches only what anyone may
			// see (the login page).
			return true, ""
		default:
			return false, "Sec-Fetch-Site: " + site
		}
	case 1:
		if rule.originAllowed(origins[0]) {
			return true, ""
		}
		return false, fmt.Sprintf("Origin %q is not this server's", origins[0])
	default:
		return false, "more than one Origin"
	}
}

// splitHostPort splits host[:port] (an IPv6 host in brackets) into its
// host, without brackets, and port; defPort when there is none (or it is
// empty). ok is false when it is malformed or the port is not a decimal
// number up to 65535.
func splitHostPort(s string, defPort int) (host string, port int, ok bool) {
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		switch {
		case strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"):
			h = s[1 : len(s)-1]
		case strings.ContainsAny(s, ":[]"):
			return "", 0, false
		default:
			h = s
		}
		p = ""
	}
	// An IPv6 address is in brackets, and only an IPv6 address is.
	if strings.HasPrefix(s, "[") != strings.Contains(h, ":") {
		return "", 0, false
	}
	if strings.ContainsAny(h, "[] /") {
		return "", 0, false
	}
	if p == "" {
		return h, defPort, true
	}
	if len(p) > 5 {
		return "", 0, false
	}
	for _, c := range p {
		if c < '0' || c > '9' {
			return "", 0, false
		}
	}
	n, _ := strconv.Atoi(p)
	if n > 65535 {
		return "", 0, false
	}
	return h, n, true
}

// asciiEqualFold is strings.EqualFold for ASCII only: a host with another
// character is never equal to a name (strings.EqualFold would find
// "localhoſt" equal to "localhost").
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x >= 0x80 || y >= 0x80 {
			return false
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// TokenChecker checks an instance's bearer token. The instance store
// implements it (the token's hash lives there); it must compare in
// constant time, and say false, not an error, for an instance that does
// not exist, so that an unauthenticated caller learns nothing of which
// instances exist.
type TokenChecker interface {
	CheckToken(ctx context.Context, instanceID, token string) (bool, error)
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
// token is missing or wrong, 503 (with Retry-After) when c's store cannot
// be reached (a client tries again), and 500 when c fails otherwise. The
// token never reaches a log or an answer.
func Authorize(w http.ResponseWriter, r *http.Request, c TokenChecker, instanceID string, log *slog.Logger) bool {
	token, ok := BearerToken(r)
	if ok {
		good, err := c.CheckToken(r.Context(), instanceID, token)
		if err != nil {
			if log != nil {
				log.Error("checking a token failed", "instance", instanceID, "error", err)
			}
			var u interface{ StoreUnavailable() bool }
			if errors.As(err, &u) && u.StoreUnavailable() {
				w.Header().Set("Retry-After", "5")
				http.Error(w, "Service Unavailable: the store that holds the instance's token does not answer; try again shortly", http.StatusServiceUnavailable)
				return false
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
// the cap of [Options.MaxBodyBytes] and, behind [Protect], before
// [ProtectOptions.BodyTimeout] (a read deadline lifted once the body is
// read).
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
