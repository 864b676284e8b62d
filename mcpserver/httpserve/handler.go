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
//	srv := httpserve.NewServer(httpserve.Protect(h, httpserve.ProtectOptions{Listen: addr}), httpserve.ServerOptions{})
//	srv.Serve(listener)
package httpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentctl/agentctl/mcpserver/internal/wire"
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
const CodeClosing = wire.CodeServerClosing

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
	// [Protect] arms this deadline first, for every route
	// ([ProtectOptions.BodyTimeout]); this one is for a Handler served
	// without it.
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
	maxBody   int64
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
	// idle is closed when a count reaches 0 while someone waits
	// (waiters > 0); made by the first waiter, so that a request does
	// not make a channel each time its count goes back to 0.
	idle    chan struct{}
	idleMu  sync.Mutex
	waiters atomic.Int64

	// creds are the tokens the sessions and requests came with (see
	// [Handler.Revoke]).
	creds credentials
}

// NewHandler returns the handler of server. It installs a receiving
// middleware on server (the per-request timeout and [Handler.Interrupt]),
// so give each server to one Handler. It checks neither Host nor Origin:
// serve it behind [Protect].
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
	h := &Handler{server: server, timeout: o.RequestTimeout, maxBody: o.MaxBodyBytes, bodyTimeout: o.BodyTimeout}
	h.closing, h.close = context.WithCancelCause(context.Background())
	h.touch()
	get := func(*http.Request) *mcp.Server { return server }
	// Host and origin checks are Protect's, one rule for every URL of the
	// server; the SDK's own DNS-rebinding check (a loopback listener only,
	// and "localhost" in lower case only) would disagree with it.
	h.stateful = mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		MaxRequestBodyBytes: o.MaxBodyBytes, SessionTimeout: o.SessionTimeout, Logger: o.Logger,
		DisableLocalhostProtection: true,
	})
	h.stateless = mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		Stateless: true, MaxRequestBodyBytes: o.MaxBodyBytes, Logger: o.Logger,
		DisableLocalhostProtection: true,
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
	}
	// Protect arms it first; this is for a Handler served without Protect.
	armBodyDeadline(w, r, h.bodyTimeout)
	r, token, untrack := h.creds.track(r)
	defer untrack()
	if IsStateless(r) {
		h.stateless.ServeHTTP(w, r)
		return
	}
	if sid := r.Header.Get(sessionIDHeader); sid != "" && token != "" {
		h.creds.bindSession(sid, token)
	}
	if r.Method == http.MethodPost && r.Header.Get(sessionIDHeader) == "" && h.refuseWithoutSession(w, r) {
		return
	}
	h.stateful.ServeHTTP(w, r)
}

const sessionIDHeader = "Mcp-Session-Id"

// refuseWithoutSession answers a POST of the session era (protocol
// 2025-11-25 and earlier) that has no Mcp-Session-Id and is not an
// initialize with HTTP 400 and a JSON-RPC error (-32600, invalid request),
// as the streamable HTTP transport says a server that keeps sessions
// should; go-sdk would make the request a new, uninitialized session and
// answer 200 with an error of code 0. It returns false, with r's body
// still to read, for every other request: an initialize, a body that is
// not JSON-RPC (go-sdk says why), a request carrying the stateless era's
// _meta protocol version or a server/discover (go-sdk answers those with
// the versions it supports).
func (h *Handler) refuseWithoutSession(w http.ResponseWriter, r *http.Request) bool {
	if r.Body == nil || r.Body == http.NoBody {
		return false
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return false // go-sdk answers 415
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "Bad Request: the request body could not be read: "+err.Error(), http.StatusBadRequest)
		}
		return true
	}
	_ = r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	var raws []json.RawMessage
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) > 0 && b[0] == '[' {
		if json.Unmarshal(b, &raws) != nil {
			return false
		}
	} else {
		raws = []json.RawMessage{body}
	}
	var id jsonrpc.ID
	for _, raw := range raws {
		msg, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			return false
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			continue
		}
		if req.Method == "initialize" || req.Method == "server/discover" || hasMetaProtocolVersion(req.Params) {
			return false
		}
		if !id.IsValid() && req.IsCall() {
			id = req.ID
		}
	}
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
		Code: jsonrpc.CodeInvalidRequest,
		Message: "Bad Request: no Mcp-Session-Id header: protocol 2025-11-25 and earlier is served in sessions; " +
			"send initialize first, then the Mcp-Session-Id it answers with on every request " +
			"(or send Mcp-Protocol-Version: " + StatelessVersion + " to be served without a session)",
	}})
	if err != nil {
		http.Error(w, "Bad Request: no Mcp-Session-Id header (initialize first)", http.StatusBadRequest)
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(data)
	return true
}

// hasMetaProtocolVersion reports whether a request's params carry the
// stateless era's _meta protocol version.
func hasMetaProtocolVersion(params json.RawMessage) bool {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	_, ok := p.Meta["io.modelcontextprotocol/protocolVersion"]
	return ok
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

// WaitCalls waits until no MCP request is being handled, or ctx is done.
func (h *Handler) WaitCalls(ctx context.Context) error { return h.wait(ctx, &h.calls) }

// WaitPosts waits until no POST request is in flight (their answers
// written), or ctx is done.
func (h *Handler) WaitPosts(ctx context.Context) error { return h.wait(ctx, &h.posts) }

func (h *Handler) wait(ctx context.Context, n *atomic.Int64) error {
	// Counted before n is read: a count reaching 0 from now on closes
	// the channel (see done).
	h.waiters.Add(1)
	defer h.waiters.Add(-1)
	for n.Load() > 0 {
		h.idleMu.Lock()
		if h.idle == nil {
			h.idle = make(chan struct{})
		}
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
	if n.Add(-1) == 0 && h.waiters.Load() > 0 {
		h.idleMu.Lock()
		if h.idle != nil {
			close(h.idle)
			h.idle = nil
		}
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
		sess, ended := h.sessionEnded(method, req)
		if ended != nil {
			return nil, ended
		}
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
		if sess != nil {
			stopEnded := context.AfterFunc(sess.ended, cancel)
			defer stopEnded()
		}
		res, err := next(ctx, method, req)
		// A tool whose context ended answers with a tool error (the SDK
		// makes a handler's error one): say why it ended instead, as a
		// protocol error, as `mcp serve` does on stdio.
		if cr, ok := res.(*mcp.CallToolResult); err != nil || res == nil || (ok && cr != nil && cr.IsError) {
			if cause := context.Cause(h.closing); cause != nil {
				return nil, closingError(cause)
			}
			if sess != nil {
				if cause := context.Cause(sess.ended); cause != nil {
					return nil, sessionEndedError(cause)
				}
			}
			var revoked tokenRevoked
			if errors.As(context.Cause(ctx), &revoked) {
				return nil, &jsonrpc.Error{Code: CodeClosing, Message: "the request was ended: " + revoked.Error()}
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

// armBodyDeadline makes reading r's body fail once d has passed (and
// net/http close the connection). When Protect armed it already and the
// body is still unread, the deadline is moved to d from now: the time the
// request waited for its route (an endpoint being built) is not taken
// from the body (unless that was under 1% of d: then it stays where it
// is, never later than d from now). A request without a body (a GET
// stream) is left alone.
func armBodyDeadline(w http.ResponseWriter, r *http.Request, d time.Duration) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return
	}
	now := time.Now()
	if b, ok := r.Body.(*deadlineBody); ok {
		b.mu.Lock()
		// Armed with the same timeout less than 1% of it ago (the route
		// was at hand): moving the deadline by so little is not worth a
		// call into the poller on every request; the body keeps over 99%
		// of its time, and never more than d.
		if !b.done && !b.started && (d != b.d || now.Sub(b.armed) >= d/100) {
			if b.rc.SetReadDeadline(now.Add(d)) == nil {
				b.armed, b.d = now, d
			}
		}
		b.mu.Unlock()
		return
	}
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(now.Add(d)) != nil {
		return
	}
	r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, armed: now, d: d}
}

// deadlineBody lifts the connection's read deadline once the body has
// been read to its end: the deadline must not outlive the body, or
// net/http's background read (which watches for the client hanging up)
// would cancel a long call (an ask_user_question) or event stream when it
// passes (net/http clears it too when it starts that read; this does not
// depend on it). It keeps the deadline when the body fails (the deadline passed,
// the cap was hit) or is closed before its end: what net/http then reads
// of the rest of the body, to reuse the connection, is bounded by it too,
// and the connection is closed when it passes.
type deadlineBody struct {
	io.ReadCloser
	rc *http.ResponseController
	mu sync.Mutex
	// done: the deadline was lifted (or must stay: the body failed).
	done bool
	// started: the body is being read.
	started bool
	// armed is when the deadline was set, d past it.
	armed time.Time
	d     time.Duration
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	b.started = true
	b.mu.Unlock()
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.mu.Lock()
		if !b.done {
			b.done = true
			if errors.Is(err, io.EOF) {
				_ = b.rc.SetReadDeadline(time.Time{})
			}
		}
		b.mu.Unlock()
	}
	return n, err
}
