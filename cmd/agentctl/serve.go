package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/cmd/internal/serving"
	"github.com/agentctl/agentctl/cmd/internal/webui"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver/httpserve"
	"github.com/spf13/cobra"
)

// DefaultListen is where `agentctl serve` listens unless told otherwise.
const DefaultListen = "127.0.0.1:7821"

// ServeOptions are the inputs of `serve` (and of `mcp serve --http`, with
// Only set).
type ServeOptions struct {
	IO           *IOStreams
	Store        storeOpener
	TokenChecker func(*instance.Store, *slog.Logger) httpserve.TokenChecker

	Listen      string
	AllowRemote bool
	AllowHosts  []string
	IdleStop    time.Duration
	// SessionTimeout closes a session idle this long (0: never).
	SessionTimeout time.Duration
	MaxBody        string
	Grace          time.Duration
	LogLevel       slog.Level
	// Only is the instance (a reference) `mcp serve --http` serves.
	Only string

	KBRefreshInterval time.Duration
	FirstListWait     time.Duration

	// WebUI serves the web page at / (serve, unless --no-ui; never `mcp
	// serve --http`).
	WebUI bool
	// BaseURL is the public URL the page is reached at (--base-url, else
	// the base_url setting); "" is http://LISTEN.
	BaseURL string
	// ListenFlag names the flag Listen came from in messages ("" is
	// --listen; `mcp serve` has --http).
	ListenFlag string
}

// NewCmdServe is `agentctl serve`; runF replaces [serveRun] in tests.
func NewCmdServe(f *Factory, runF func(context.Context, *ServeOptions) error) *cobra.Command {
	opts := &ServeOptions{IO: f.IOStreams, Store: f.Store, TokenChecker: f.TokenChecker}
	var noUI bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve every instance's MCP endpoint over streamable HTTP from one process",
		Long: `Serve every instance of the store over streamable HTTP, at
http://LISTEN/instances/ID/mcp (the instance's full id), with the same endpoint
'mcp serve' gives it over stdio: the same tools under the same names for its client.

Each request needs the instance's token: Authorization: Bearer TOKEN (401
without it). An instance's endpoint, and its external servers, start with its
first request and stop after --idle-stop without a session or a request.
Instances created while it runs are served at once; a deleted instance's open
sessions end, and its token (deleted with it) opens nothing. A token opens its
own instance's URL only: any other, existing or not, answers 401. A token the
store accepted is trusted for a second, so a rotated one is refused within it;
the sessions and streams it opened are checked again every second, and end.

Clients of protocol 2025-11-25 and earlier get sessions; clients that send
Mcp-Protocol-Version: 2026-07-28 are served statelessly, on the same URL.

GET /health (no token) says it is up, its version and how many instances it
serves; GET /instances/ID/health (with the token) the instance's server name,
naming capability, mounts with their effective prefixes, and external servers'
states, with a failed stdio server's last stderr lines (secrets redacted).

At / it serves a web page (--no-ui turns it off: 404): every instance, newest
activity first, with a filter; an instance's open questions with answer
buttons (answering wakes the waiting ask_user_question as 'instance answer'
does), its events and headless run output as they come, the names its model
sees and its mounts' and servers' health. It needs an operator token, never an
instance's: when the store has none, serve makes one and prints its login URL
once on stderr (the store keeps only its SHA-256); 'agentctl ui' prints a new
one. The URL uses --base-url (or base_url, AGENTCTL_BASE_URL) when set: an
https one makes the session cookie Secure, and its host is accepted in the
Host and Origin headers like an --allow-host name.

It listens on loopback unless given --allow-remote; a Host or Origin that is
not the listen address, or localhost, 127.0.0.1 or [::1] (any case) with the
listen port, or an --allow-host name, is refused (403), as is a browser's
cross-site request; a request body is cut after 30 s.

On SIGTERM or SIGINT it takes no new session (503), lets calls in flight finish
for up to --grace (the sessions under way go on meanwhile: an answer given through
the client, or on the web page, still reaches the question waiting for it),
answers the rest with an error (a waiting question is cancelled), stops the
external servers and exits 0.

Like 'mcp serve', it sets Go's garbage collector target to 200 (GOGC) unless the
GOGC environment variable is set: the heap may grow to three times what is live
between collections, for less CPU per request.`,
		Example: `  agentctl serve
  agentctl serve --listen 127.0.0.1:8080 --idle-stop 30m
  agentctl serve --base-url https://agents.example.com   # behind a TLS proxy
  agentctl serve --listen 0.0.0.0:7821 --allow-remote --allow-host build-box.example`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.fill(f); err != nil {
				return err
			}
			opts.WebUI = !noUI
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return serveRun(cmd.Context(), opts)
		},
	}
	addServeFlags(cmd, opts, DefaultListen)
	cmd.Flags().DurationVar(&opts.IdleStop, "idle-stop", serving.DefaultIdleStop, "stop an instance's external servers after this long without a session or request (0: never)")
	cmd.Flags().DurationVar(&opts.SessionTimeout, "session-timeout", 0, "close a session that made no request for this long (0: never; a client that vanished without ending its session otherwise keeps its instance running)")
	cmd.Flags().BoolVar(&noUI, "no-ui", false, "do not serve the web page (/ and /ui/ answer 404)")
	cmd.Flags().StringVar(&opts.BaseURL, "base-url", "", "the public URL of this server, for the login URL, notifications' links and the cookie's Secure flag (env AGENTCTL_BASE_URL, config base_url; default http://LISTEN)")
	addSettingFlag(cmd.Flags(), keyLogLevel)
	return cmd
}

// addServeFlags adds the flags `serve` and `mcp serve --http` share.
func addServeFlags(cmd *cobra.Command, opts *ServeOptions, listen string) {
	fs := cmd.Flags()
	if listen != "" {
		fs.StringVar(&opts.Listen, "listen", listen, "the address to listen on, host:port")
	}
	fs.BoolVar(&opts.AllowRemote, "allow-remote", false, "allow listening on an address other than loopback")
	fs.StringSliceVar(&opts.AllowHosts, "allow-host", nil, "another name clients may give in the Host header (with --allow-remote)")
	fs.StringVar(&opts.MaxBody, "max-body", "4MiB", "the largest request body accepted (413 beyond)")
	fs.DurationVar(&opts.Grace, "grace", serving.DefaultGrace, "on SIGTERM, how long calls in flight may take to finish")
}

func (opts *ServeOptions) fill(f *Factory) error {
	if opts.BaseURL == "" {
		opts.BaseURL = f.Config.String(keyBaseURL)
	}
	var err error
	if opts.LogLevel, err = f.Config.LogLevel(); err != nil {
		return err
	}
	if opts.KBRefreshInterval, err = f.Config.KBRefreshInterval(); err != nil {
		return err
	}
	opts.FirstListWait, err = f.Config.FirstListWait()
	return err
}

func serveRun(ctx context.Context, opts *ServeOptions) error {
	maxBody, err := parseSize(opts.MaxBody)
	if err != nil {
		return usageErrorf("--max-body %q: %v; use a size such as 4MiB, 512KiB or 1000000", opts.MaxBody, err)
	}
	flag := cmp.Or(opts.ListenFlag, "--listen")
	if err := checkListen(flag, opts.Listen, opts.AllowRemote); err != nil {
		return err
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--grace", opts.Grace}, {"--session-timeout", opts.SessionTimeout}} {
		if d.v < 0 {
			return usageErrorf("%s %s is negative; give a duration such as 30s (0: %s)", d.name, d.v, map[string]string{"--grace": "no grace", "--session-timeout": "never"}[d.name])
		}
	}
	var base *url.URL
	if opts.BaseURL != "" {
		// Checked with or without the web page: notifications link to it.
		if base, err = parseBaseURL(opts.BaseURL); err != nil {
			return err
		}
	}
	logger := slog.New(slog.NewTextHandler(opts.IO.ErrOut, &slog.HandlerOptions{Level: opts.LogLevel}))
	// A daemon may start before the first instance is made: it creates
	// the store, and serves instances as they are created.
	st, err := opts.Store(ctx, true)
	if err != nil {
		return err
	}
	defer st.Close()
	// The [[notify]] deliveries of every instance: the daemon is the
	// long-running process that retries them.
	defer startNotifyDelivery(ctx, st)()
	only := ""
	if opts.Only != "" {
		rec, err := st.Get(ctx, opts.Only)
		if err != nil {
			return err
		}
		only = rec.ID
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w; is another agentctl serve running there? Use %s to pick another address", opts.Listen, err, flag)
	}
	defer tuneGC(opts.IO.getenv)()
	addr := ln.Addr().String()
	if !isLoopback(addr) {
		fmt.Fprintf(opts.IO.ErrOut, "warning: listening on %s, beyond this machine: anyone who can reach it and holds an instance's token can use that instance\n", addr)
	}
	allowed := opts.AllowHosts
	var ui *webui.Options
	var loginToken string
	if opts.WebUI {
		if base != nil {
			allowed = append(slices.Clone(allowed), base.Host)
		}
		ui = &webui.Options{BaseURL: pageBase(base, addr), Version: version, Logger: logger}
		// The first operator token, when the store has none in force.
		if loginToken, err = st.EnsureOperatorToken(ctx); err != nil {
			ln.Close()
			return err
		}
	}
	d := serving.New(serving.Options{
		Store: st, Checker: opts.TokenChecker(st, logger),
		Listen: addr, AllowedHosts: allowed, Only: only, UI: ui,
		MaxBodyBytes: maxBody, IdleStop: idleStop(opts.IdleStop), Grace: opts.Grace, SessionTimeout: opts.SessionTimeout,
		Endpoint: serving.EndpointOptions{KBIndexDir: kbIndexDir(st.Dir()), KBRefreshInterval: opts.KBRefreshInterval,
			FirstListWait: opts.FirstListWait, Version: version},
		Logger: logger,
	})
	if only != "" {
		fmt.Fprintf(opts.IO.ErrOut, "serving instance %s at http://%s/instances/%s/mcp\n", only, addr, only)
	} else {
		fmt.Fprintf(opts.IO.ErrOut, "serving every instance at http://%s/instances/ID/mcp\n", addr)
	}
	if opts.WebUI {
		page := pageBase(base, addr)
		if loginToken != "" {
			fmt.Fprintf(opts.IO.ErrOut, "web page: log in at %s\n  (this URL is shown once: the store keeps only the token's hash; 'agentctl ui' makes another)\n", loginURL(page, loginToken))
		} else {
			fmt.Fprintf(opts.IO.ErrOut, "web page at %s/ (log in with the URL 'agentctl ui' prints)\n", page)
		}
	}
	stopped := make(chan struct{})
	defer close(stopped)
	go forceStopOnSecondSignal(ctx, stopped, opts.IO)
	return d.Serve(ctx, ln)
}

// parseBaseURL reads the base_url setting: http or https, a host, and no
// query; a path is warned of by the caller, the page's links being
// absolute. Its scheme's default port is dropped (https://HOST:443 is
// https://HOST).
func parseBaseURL(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, usageErrorf("base URL %q: write it as http(s)://HOST[:PORT], the address browsers reach agentctl serve at (--base-url, AGENTCTL_BASE_URL or base_url)", s)
	}
	if p := strings.TrimRight(u.Path, "/"); p != "" {
		return nil, usageErrorf("base URL %q has a path: the web page is served at the root of its address; proxy a host (or a port) of its own to it", s)
	}
	u.Path = ""
	// https://HOST:443 is https://HOST: the URLs printed say it so, and
	// the Host a browser or a TLS proxy sends (without the port) is
	// accepted.
	if p := u.Port(); u.Scheme == "http" && p == "80" || u.Scheme == "https" && p == "443" {
		u.Host = strings.TrimSuffix(u.Host, ":"+p)
	}
	return u, nil
}

// pageBase is the web page's URL without a path: the base URL, else the
// listen address (a loopback one when it is every address).
func pageBase(base *url.URL, addr string) string {
	if base != nil {
		return base.String()
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}

// loginURL is the URL that logs a browser in with token.
func loginURL(page, token string) string {
	return page + "/login?" + url.Values{"token": {token}}.Encode()
}

// forceStopOnSecondSignal: once the first SIGINT or SIGTERM has started a
// graceful stop (ctx done), a second one ends the process at once, as
// people expect of a second Ctrl-C, without waiting out --grace.
// Questions still waiting are left open in the store then.
func forceStopOnSecondSignal(ctx context.Context, stopped <-chan struct{}, io *IOStreams) {
	select {
	case <-ctx.Done():
	case <-stopped:
		return
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	select {
	case s := <-sigs:
		io.Narrate("agentctl serve: a second %v: stopping now, without waiting for calls in flight", s)
		os.Exit(128 + int(s.(syscall.Signal)))
	case <-stopped:
	}
}

// checkListen refuses a listen address beyond loopback without
// --allow-remote.
func checkListen(flag, addr string, allowRemote bool) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return usageErrorf("%s %q is not host:port: %v", flag, addr, err)
	}
	if !isLoopback(addr) && !allowRemote {
		return usageErrorf("%s %s is not a loopback address: other machines could reach it; add --allow-remote if that is what you want", flag, addr)
	}
	return nil
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// idleStop is --idle-stop as the daemon takes it: 0 (or less) is never,
// which the daemon writes as a negative duration (its 0 is the default).
func idleStop(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// parseSize reads a byte size: a number with an optional unit (B, KB,
// KiB, MB, MiB, GB, GiB).
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.TrimSpace(s[i:])
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("not a positive size")
	}
	mult := map[string]float64{"": 1, "b": 1, "kb": 1e3, "kib": 1 << 10, "mb": 1e6, "mib": 1 << 20, "gb": 1e9, "gib": 1 << 30}[strings.ToLower(unit)]
	if mult == 0 {
		return 0, fmt.Errorf("unknown unit %q", unit)
	}
	if n*mult < 1 {
		return 0, fmt.Errorf("less than a byte")
	}
	return int64(n * mult), nil
}
