// Package httpserve serves one MCP endpoint's [mcp.Server] over streamable
// HTTP, for clients of both protocol eras on one URL, behind the checks a
// local HTTP server needs (DNS rebinding, cross-origin requests, body size,
// timeouts, bearer tokens).
//
// A client that sends `Mcp-Protocol-Version: 2026-07-28` (or a later
// version) on a request speaks the stateless protocol (SEP-2575): its
// request goes to a stateless [mcp.StreamableHTTPHandler]. Any other request
// (an initialize of 2025-11-25 or earlier, a request of such a session, the
// session's GET stream and DELETE) goes to a stateful one. Both serve the
// same [mcp.Server], so a tool registered or removed reaches both: sessions
// of the older era get notifications/tools/list_changed on their session
// stream, and stateless clients get it on their subscriptions/listen stream
// (the go-sdk client opens one when the server says its tool list changes;
// a stateless client without such a stream only sees the change on its
// next tools/list).
//
// The shortest use:
//
//	h := httpserve.NewHandler(ep.Server(), httpserve.Options{})
//	srv := httpserve.NewServer(httpserve.Guard(h, httpserve.GuardOptions{Listen: addr}), httpserve.ServerOptions{})
//	srv.Serve(listener)
package httpserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StatelessVersion is the first protocol version served statelessly.
const StatelessVersion = "2026-07-28"

// DefaultMaxBodyBytes is the default cap of a request's body (4 MiB).
const DefaultMaxBodyBytes = 4 << 20

// DefaultRequestTimeout bounds one request's handling unless told
// otherwise: longer than ask_user_question's default wait for an answer
// (10 minutes), so that the question expires first and says so.
const DefaultRequestTimeout = 11 * time.Minute

// DefaultBodyTimeout is the default of [Options.BodyTimeout].
const DefaultBodyTimeout = 30 * time.Second

// CodeClosing is the JSON-RPC error code of a request the server stopped
// working on because it is closing (a signal, the instance deleted): the
// code `mcp serve` on stdio answers such requests with.
const CodeClosing = -32004

// Options configure a [Handler].
type Options struct {
	// MaxBodyBytes caps a request's body; a larger one gets 413. 0 means
	// [DefaultMaxBodyBytes].
	MaxBodyBytes int64
	// RequestTimeout bounds the handling of one request (a tools/call, a
	// tools/list, ...) in either era; a request still running then is
	// answered with an error. 0 means [DefaultRequestTimeout]. The
	// subscriptions/listen stream and the session's GET stream are not
	// requests in this sense.
	RequestTimeout time.Duration
	// BodyTimeout bounds reading a request's body (a client that sends
	// its body slowly, or never ends it); 0 means [DefaultBodyTimeout].
	BodyTimeout time.Duration
	// SessionTimeout closes a stateful session that made no request for
	// this long (0: never).
	SessionTimeout time.Duration
	// Logger receives the SDK's transport logs; nil discards them.
	Logger *slog.Logger
}

// Handler serves one [mcp.Server] over streamable HTTP to both protocol
// eras. It counts the requests in flight, so that its owner can tell when
// it is idle and let calls finish before it closes.
type Handler struct {
	server    *mcp.Server
	stateful  *mcp.StreamableHTTPHandler
	stateless *mcp.StreamableHTTPHandler
	timeout   time.Duration
	// bodyTimeout bounds reading a request's body.
	bodyTimeout time.Duration

	// closing is done once [Handler.Interrupt] was called; calls in flight
	// then end with its cause.
	closing context.Context
	close   context.CancelCauseFunc

	inHTTP atomic.Int64 // HTTP requests in flight (GET streams too)
	posts  atomic.Int64 // POST requests in flight
	calls  atomic.Int64 // MCP requests in flight (not subscriptions/listen)
	last   atomic.Int64 // unix nanoseconds of the last request's start or end
	idle   chan struct{}
	idleMu sync.Mutex
}

// NewHandler returns the handler of server. It installs a receiving
// middleware on server (the per-request timeout and [Handler.Interrupt]),
// so give each server to one Handler.
func NewHandler(server *mcp.Server, o Options) *Handler {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	h := &Handler{server: server, timeout: o.RequestTimeout, bodyTimeout: o.BodyTimeout, idle: make(chan struct{})}
	h.closing, h.close = context.WithCancelCause(context.Background())
	h.touch()
	get := func(*http.Request) *mcp.Server { return server }
	// Host and origin checks are Guard's, for every URL of the server; the
	// SDK's own DNS-rebinding check only covers a loopback listener.
	h.stateful = mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		MaxRequestBodyBytes: o.MaxBodyBytes, SessionTimeout: o.SessionTimeout, Logger: o.Logger,
	})
	h.stateless = mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		Stateless: true, MaxRequestBodyBytes: o.MaxBodyBytes, Logger: o.Logger,
		// The POST is the whole request: a client that hangs up cancels it.
		PropagateRequestCancellation: true,
	})
	server.AddReceivingMiddleware(h.bound)
	return h
}

// IsStateless reports whether a request speaks the stateless protocol
// (its Mcp-Protocol-Version is [StatelessVersion] or later).
func IsStateless(r *http.Request) bool {
	v := r.Header.Get("Mcp-Protocol-Version")
	return v != "" && v >= StatelessVersion
}

// ServeHTTP dispatches the request on its era.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.inHTTP.Add(1)
	h.touch()
	defer func() {
		h.touch()
		h.inHTTP.Add(-1)
	}()
	if r.Method == http.MethodPost {
		h.posts.Add(1)
		defer h.done(&h.posts)
		if r.Body != nil {
			r.Body = readBefore(w, r.Body, time.Now().Add(h.bodyTimeout))
		}
	}
	if IsStateless(r) {
		h.stateless.ServeHTTP(w, r)
		return
	}
	h.stateful.ServeHTTP(w, r)
}

func (h *Handler) touch() { h.last.Store(time.Now().UnixNano()) }

// Idle reports how long the handler has been idle: no HTTP request in
// flight and no stateful session open; 0 if it is not idle.
func (h *Handler) Idle() time.Duration {
	if h.inHTTP.Load() > 0 || h.Sessions() > 0 {
		return 0
	}
	return time.Since(time.Unix(0, h.last.Load()))
}

// Sessions returns the number of sessions open on the server (stateful
// ones, and stateless ones while their request runs).
func (h *Handler) Sessions() int {
	n := 0
	for range h.server.Sessions() {
		n++
	}
	return n
}

// Calls returns the number of MCP requests being handled.
func (h *Handler) Calls() int { return int(h.calls.Load()) }

// WaitCalls waits until no MCP request is being handled, or ctx is done.
func (h *Handler) WaitCalls(ctx context.Context) error { return h.wait(ctx, &h.calls) }

// WaitPosts waits until no POST request is in flight (their answers
// written), or ctx is done.
func (h *Handler) WaitPosts(ctx context.Context) error { return h.wait(ctx, &h.posts) }

func (h *Handler) wait(ctx context.Context, n *atomic.Int64) error {
	for n.Load() > 0 {
		h.idleMu.Lock()
		ch := h.idle
		h.idleMu.Unlock()
		if n.Load() == 0 {
			break
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// done decrements n and wakes the waiters when it reaches 0.
func (h *Handler) done(n *atomic.Int64) {
	if n.Add(-1) == 0 {
		h.idleMu.Lock()
		close(h.idle)
		h.idle = make(chan struct{})
		h.idleMu.Unlock()
	}
}

// Interrupt ends the requests in flight, and any that come later, with a
// JSON-RPC error (code [CodeClosing]) whose message is "server is closing:
// " and cause: their handlers' contexts are cancelled, so an
// ask_user_question closes its question (cancelled) rather than leaving it
// open. Call it once the grace given to calls in flight is over.
func (h *Handler) Interrupt(cause error) { h.close(cause) }

// CloseSessions closes every session of the server: their streams end.
func (h *Handler) CloseSessions() {
	for ss := range h.server.Sessions() {
		_ = ss.Close()
	}
}

// bound is the receiving middleware that bounds each request by the
// request timeout and by [Handler.Interrupt].
func (h *Handler) bound(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "subscriptions/listen" || method == "initialize" || method == "notifications/initialized" {
			return next(ctx, method, req)
		}
		if err := context.Cause(h.closing); err != nil {
			return nil, closingError(err)
		}
		h.calls.Add(1)
		defer h.done(&h.calls)
		ctx, cancel := context.WithTimeoutCause(ctx, h.timeout, errRequestTimeout{h.timeout})
		defer cancel()
		stop := context.AfterFunc(h.closing, cancel)
		defer stop()
		res, err := next(ctx, method, req)
		// A tool whose context ended answers with a tool error (the SDK
		// makes a handler's error one): say why it ended instead, as a
		// protocol error, as `mcp serve` does on stdio.
		if cr, ok := res.(*mcp.CallToolResult); err != nil || res == nil || (ok && cr != nil && cr.IsError) {
			if cause := context.Cause(h.closing); cause != nil {
				return nil, closingError(cause)
			}
			var rt errRequestTimeout
			if errors.As(context.Cause(ctx), &rt) {
				return nil, &jsonrpc.Error{Code: CodeClosing, Message: rt.Error()}
			}
		}
		return res, err
	}
}

func closingError(cause error) error {
	return &jsonrpc.Error{Code: CodeClosing, Message: "server is closing: " + cause.Error()}
}

type errRequestTimeout struct{ d time.Duration }

func (e errRequestTimeout) Error() string {
	return fmt.Sprintf("the request took longer than %s and was stopped (the server's request timeout)", e.d)
}

// readBefore makes reading body fail after deadline, and lifts the
// deadline once the body has been read: the connection's read deadline
// must not outlive the body, or net/http's background read would cancel a
// long call (an ask_user_question) when it passes.
func readBefore(w http.ResponseWriter, body io.ReadCloser, deadline time.Time) io.ReadCloser {
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(deadline) != nil {
		return body
	}
	return &deadlineBody{ReadCloser: body, rc: rc}
}

type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

func (b *deadlineBody) Close() error {
	if !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return b.ReadCloser.Close()
}
