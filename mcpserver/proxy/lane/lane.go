package lane

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentctl/agentctl/mcpserver/guard"
	"github.com/agentctl/agentctl/mcpserver/internal/jsonscan"
	"github.com/agentctl/agentctl/mcpserver/proxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Ids and progress tokens the lane sends upstream. They cannot collide with
// the SDK's own ids (numbers) or the SDK path's tokens ("agentctl-N").
const (
	idPrefix    = "agentctl-call-"
	tokenPrefix = "agentctl-progress-"
)

// Endpoint is what the lane needs from the endpoint it serves.
type Endpoint interface {
	// Route resolves a tools/call name as the SDK path would to a tool of
	// an external server that is up; false for anything else (a built-in,
	// an unknown name), which the lane leaves to the SDK.
	Route(name string) (Route, bool)
	// ToolsList returns tools/list's result as a client that initialized
	// is sent it, encoded, with a generation that changes whenever the
	// result may; false when the SDK must answer (external servers still
	// on their first attempt, more tools than a page).
	ToolsList() (gen uint64, result []byte, ok bool)
}

// Route is where a tools/call goes.
type Route struct {
	// Server is the external server's name (its mount's); Tool the tool's
	// own name there.
	Server, Tool string
	// Canonical is the tool's name in the endpoint's registry, for logs.
	Canonical string
}

// Session is the SDK's session with the client (a fake in tests).
type Session interface {
	InitializeParams() *mcp.InitializeParams
}

// Options configure a [Lane].
type Options struct {
	Endpoint Endpoint
	// Client is the client's output: one whole message per Write, among
	// the SDK's own (the input guard).
	Client io.Writer
	// Implementation is agentctl's, as 2026-07-28 results name it.
	Implementation *mcp.Implementation
	// Logger receives the lane's debug logs; nil discards them.
	Logger *slog.Logger
	// CallTimeout is how long a call to the server named server may take
	// (its mount's call_timeout, mount.Mount.CallTimeoutOrDefault): then
	// the call fails with a tool error naming the server and is cancelled
	// upstream. nil, or 0 for a server, sets no bound.
	CallTimeout func(server string) time.Duration
	// Report, if set, is told of a line of a server's output the lane
	// skipped (problem says what it was and what it cost), as the SDK
	// path reports it (proxy.Server.ReportOutput); else the lane logs it.
	Report func(server, problem string)
}

// Lane forwards tools/call of external tools between one client connection
// and the external servers' connections, and answers tools/list.
type Lane struct {
	ep          Endpoint
	client      io.Writer
	log         *slog.Logger
	callTimeout func(server string) time.Duration
	report      func(server, problem string)
	// serverInfo is agentctl's implementation, as 2026-07-28 results name it.
	serverInfo json.RawMessage
	// session is the SDK's session with the client, once connected: the
	// lane takes requests only in a session the SDK has initialized
	// (initialize, or a first 2026-07-28 request, which the SDK handles),
	// and answers as the SDK would for its protocol version.
	session atomic.Pointer[sessionRef]
	// closed: the endpoint has returned; nothing more is written.
	closed   atomic.Bool
	next     atomic.Int64
	inflight atomic.Int64
	// forwarded counts the calls the lane has sent upstream; listed, the
	// tools/list it has answered.
	forwarded, listed atomic.Int64

	// progress maps the lane's progress tokens to their calls.
	progress *proxy.ProgressRoutes[*call]
	// listing is tools/list's result for 2026-07-28 requests.
	listing statelessListing

	mu       sync.Mutex
	calls    map[string]*call       // by upstream id
	byClient map[string][]*call     // by the client's request id (a client may reuse one)
	links    map[string]*serverLink // by server name: each stdio server's current connection
}

// call is one forwarded call.
type call struct {
	clientID    json.RawMessage
	clientKey   string          // the client's id by value (idKey)
	clientToken json.RawMessage // nil: the client asked for no progress
	upID, upTok string
	link        *serverLink
	proto       protocol
	timer       *time.Timer // the call's timeout, if it has one (under Lane.mu)
}

type sessionRef struct{ ss Session }

// New returns the lane of one client connection.
func New(opts Options) *Lane {
	info, _ := json.Marshal(opts.Implementation)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Lane{ep: opts.Endpoint, client: opts.Client, log: log, serverInfo: info, callTimeout: opts.CallTimeout, report: opts.Report,
		calls: map[string]*call{}, byClient: map[string][]*call{}, links: map[string]*serverLink{},
		progress: proxy.NewProgressRoutes[*call](tokenPrefix)}
}

// SetSession tells the lane the SDK's session with the client; until then
// it takes nothing.
func (l *Lane) SetSession(s Session) { l.session.Store(&sessionRef{s}) }

// Close stops the lane: nothing more is taken or written.
func (l *Lane) Close() { l.closed.Store(true) }

// Stats counts what the lane has done.
type Stats struct {
	// Forwarded is the calls sent upstream; Listed, the tools/list
	// answered; InFlight, the calls still waiting for their server.
	Forwarded, Listed, InFlight int64
}

// Stats returns the lane's counts so far.
func (l *Lane) Stats() Stats {
	return Stats{Forwarded: l.forwarded.Load(), Listed: l.listed.Load(), InFlight: l.inflight.Load()}
}

var (
	toolsCallMethod = []byte(`"tools/call"`)
	toolsListMethod = []byte(`"tools/list"`)
	cancelledMethod = []byte(`"notifications/cancelled"`)
	laneMarker      = []byte(`"agentctl-`)
)

// FromClient takes the client's line if it is the lane's to answer or
// forward; false leaves it to the SDK. The line is one the input guard
// offers: a JSON value it has checked, so the lane does not check it again.
func (l *Lane) FromClient(line []byte) bool {
	// A cheap look first: most lines are none of the lane's.
	if l.closed.Load() || !(bytes.Contains(line, toolsCallMethod) || bytes.Contains(line, toolsListMethod) ||
		l.inflight.Load() > 0 && bytes.Contains(line, cancelledMethod)) {
		return false
	}
	m, ok := readMessage(line, true)
	if !ok {
		return false
	}
	switch m.method {
	case "tools/call":
		return l.call(m)
	case "tools/list":
		return l.list(m)
	case "notifications/cancelled":
		if m.id != nil {
			// With an id it is a request, which the SDK answers (an
			// Invalid Request error); go-sdk cancels what it names all
			// the same, so the lane does too.
			l.cancel(m)
			return false
		}
		return l.cancel(m)
	}
	return false
}

// call forwards a tools/call of an external tool whose server is up; false
// leaves the request to the SDK.
func (l *Lane) call(m message) bool {
	if !isID(m.id) {
		return false
	}
	var (
		name, args, meta []byte
		ok               bool
	)
	known := jsonscan.EachMember(m.params, func(k, v []byte) bool {
		switch {
		case jsonscan.KeyIs(k, "name"):
			name, ok = jsonscan.PlainString(v)
			return ok
		case jsonscan.KeyIs(k, "arguments"):
			args = v
		case jsonscan.KeyIs(k, "_meta"):
			meta = v
		default:
			return false // a field the lane does not know (MRTR, tasks): the SDK's
		}
		return true
	})
	if !known || name == nil {
		return false
	}
	if args = proxy.Arguments(args); args[0] != '{' {
		return false // the SDK says what is wrong with it
	}
	tok, proto, ok := l.protocolOf(meta)
	if !ok {
		return false
	}
	if string(meta) == "null" {
		meta = nil
	}

	r, ok := l.ep.Route(string(name))
	if !ok {
		return false
	}
	link := l.link(r.Server)
	if link == nil {
		return false
	}

	key, ok := idKey(m.id)
	if !ok {
		return false
	}
	n := l.next.Add(1)
	c := &call{clientID: bytes.Clone(m.id), clientKey: key, link: link, proto: proto}
	c.upID = idPrefix + strconv.FormatInt(n, 10)
	msg := make([]byte, 0, len(args)+len(meta)+len(r.Tool)+128)
	msg = append(msg, `{"jsonrpc":"2.0","id":"`...)
	msg = append(msg, c.upID...)
	msg = append(msg, `","method":"tools/call","params":{"name":`...)
	msg = jsonscan.AppendString(msg, r.Tool)
	msg = append(msg, `,"arguments":`...)
	msg = append(msg, args...)
	if meta != nil {
		// The members proxy.ForwardsMeta passes; the progress token becomes
		// the lane's. No _meta at all when nothing goes out (the client's
		// _meta is {} or holds only protocol keys), as on the SDK path
		// (proxy.ForwardedMeta is nil then).
		start := len(msg)
		msg = append(msg, `,"_meta":{`...)
		first := true
		sep := func() {
			if !first {
				msg = append(msg, ',')
			}
			first = false
		}
		jsonscan.EachMember(meta, func(k, v []byte) bool {
			if !forwardsMeta(k) {
				return true
			}
			sep()
			msg = append(append(append(msg, k...), ':'), v...)
			return true
		})
		if tok != nil {
			c.clientToken = bytes.Clone(tok)
			c.upTok = l.progress.Add(c)
			sep()
			msg = append(msg, `"progressToken":`...)
			msg = jsonscan.AppendString(msg, c.upTok)
		}
		if first {
			msg = msg[:start]
		} else {
			msg = append(msg, '}')
		}
	}
	msg = append(msg, "}}\n"...)

	var limit time.Duration
	if l.callTimeout != nil {
		limit = l.callTimeout(r.Server)
	}
	l.add(c, limit)
	l.forwarded.Add(1)
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug("tools/call", "tool", r.Canonical, "lane", "fast")
	}
	if err := link.send(msg); err != nil {
		// Answer here only if it is still ours to answer (a server going
		// away fails its calls from its reader too).
		if l.take(c.upID) != nil {
			l.replyError(c, fmt.Sprintf("MCP server %q did not get the call: %v", link.server, err))
		}
	}
	return true
}

// forwardsMeta is [proxy.ForwardsMeta] of a key as jsonscan gives it.
func forwardsMeta(key []byte) bool {
	if k, ok := jsonscan.PlainString(key); ok {
		return proxy.ForwardsMeta(string(k))
	}
	k, ok := jsonscan.String(key)
	return !ok || proxy.ForwardsMeta(k)
}

// list answers tools/list from the endpoint's encoding, kept until the
// tools change: the SDK encodes every definition again on every list, some
// 5 ms for a few hundred tools. false leaves the request to the SDK: a
// cursor, a client not yet initialized, or the endpoint's refusal (see
// [Endpoint.ToolsList]).
func (l *Lane) list(m message) bool {
	if !isID(m.id) {
		return false
	}
	var meta []byte
	if m.params != nil && string(m.params) != "null" && !jsonscan.EachMember(m.params, func(k, v []byte) bool {
		if jsonscan.KeyIs(k, "_meta") {
			meta = v
			return true
		}
		return false // a cursor: the SDK pages
	}) {
		return false
	}
	_, proto, ok := l.protocolOf(meta)
	if !ok {
		return false
	}
	gen, result, ok := l.ep.ToolsList()
	if !ok {
		return false
	}
	if proto.stateless {
		result = l.listing.get(gen, result, l.serverInfo)
	}
	msg := make([]byte, 0, len(result)+len(m.id)+40)
	msg = append(msg, `{"jsonrpc":"2.0","id":`...)
	msg = append(msg, m.id...)
	msg = append(msg, `,"result":`...)
	msg = append(msg, result...)
	msg = append(msg, "}\n"...)
	l.listed.Add(1)
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug("tools/list", "lane", "fast")
	}
	l.write(msg)
	return true
}

// statelessListing is tools/list's result for 2026-07-28 requests, kept
// for one generation of the endpoint's.
type statelessListing struct {
	mu     sync.Mutex
	gen    uint64
	result []byte
}

func (s *statelessListing) get(gen uint64, plain, info []byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.result == nil || s.gen != gen {
		s.gen, s.result = gen, statelessResult(plain, info)
	}
	return s.result
}

// add notes a call in flight, failed after limit unless answered (0: no
// limit).
func (l *Lane) add(c *call, limit time.Duration) {
	l.mu.Lock()
	if limit > 0 {
		c.timer = time.AfterFunc(limit, func() { l.expire(c, limit) })
	}
	l.calls[c.upID] = c
	l.byClient[c.clientKey] = append(l.byClient[c.clientKey], c)
	l.mu.Unlock()
	l.inflight.Add(1)
}

// take removes the call with upstream id upID; nil if it is no longer
// pending (answered, cancelled or failed).
func (l *Lane) take(upID string) *call {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.calls[upID]
	if c == nil {
		return nil
	}
	l.removeLocked(c)
	return c
}

func (l *Lane) removeLocked(c *call) {
	if c.timer != nil {
		c.timer.Stop()
	}
	delete(l.calls, c.upID)
	if c.upTok != "" {
		l.progress.Remove(c.upTok)
	}
	if same := slices.DeleteFunc(l.byClient[c.clientKey], func(o *call) bool { return o == c }); len(same) == 0 {
		delete(l.byClient, c.clientKey)
	} else {
		l.byClient[c.clientKey] = same
	}
	l.inflight.Add(-1)
}

// cancel forwards the client's cancellation of lane calls, named by its
// id's value as go-sdk names it (so 6.0 and 6.5 both cancel 6, as on the
// SDK path): every call in flight with that id, as the input guard cancels
// every request with it; false leaves the cancellation to the SDK: no lane
// call has that id, or the requestId is no id.
func (l *Lane) cancel(m message) bool {
	var requestID, reason []byte
	jsonscan.EachMember(m.params, func(k, v []byte) bool {
		switch k = plainKey(k); {
		case jsonscan.KeyIs(k, "requestId"):
			requestID = v
		case jsonscan.KeyIs(k, "reason"):
			reason = v
		}
		return true
	})
	key, ok := idKey(requestID)
	if !ok {
		return false
	}
	l.mu.Lock()
	cs := slices.Clone(l.byClient[key])
	for _, c := range cs {
		l.removeLocked(c)
	}
	l.mu.Unlock()
	if len(cs) == 0 {
		return false
	}
	for _, c := range cs {
		c.cancelUpstream(reason)
	}
	return true
}

// cancelUpstream tells the call's server that it is cancelled, with the
// reason (a JSON string) if not nil.
func (c *call) cancelUpstream(reason []byte) {
	msg := append([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`), jsonscan.AppendString(nil, c.upID)...)
	if reason != nil {
		msg = append(append(msg, `,"reason":`...), reason...)
	}
	msg = append(msg, "}}\n"...)
	_ = c.link.send(msg) // a server that is gone or stuck has nothing to cancel
}

// expire fails a call its server did not answer within limit, and cancels
// it upstream.
func (l *Lane) expire(c *call, limit time.Duration) {
	if l.take(c.upID) == nil {
		return // answered, cancelled or failed meanwhile
	}
	c.cancelUpstream(jsonscan.AppendString(nil, fmt.Sprintf("agentctl's call timeout (%s) ran out", limit)))
	l.log.Warn("MCP server did not answer a call in time; cancelled it", "mcp_server", c.link.server, "call_timeout", limit)
	l.replyError(c, proxy.CallTimedOut(c.link.server, limit)) // the SDK path's words
}

// message is the part of a JSON-RPC message the lane reads: slices of the
// line it came in.
type message struct {
	id, params, result, rpcErr []byte
	method                     string
	// hasMethod: the message has a "method" member (go-sdk takes one of
	// "" for a request too).
	hasMethod bool
}

// readMessage reads a JSON-RPC 2.0 message's members; ok is false for
// anything the lane leaves to the SDK (invalid JSON, a batch, a member it
// does not know, a method written with escapes). checked says the line is
// already known to be valid JSON (the guard's lines are).
func readMessage(line []byte, checked bool) (m message, ok bool) {
	if !checked && !json.Valid(line) {
		return m, false
	}
	version := false
	ok = jsonscan.EachMember(line, func(k, v []byte) bool {
		switch {
		case jsonscan.KeyIs(k, "jsonrpc"):
			version = string(v) == `"2.0"`
		case jsonscan.KeyIs(k, "id"):
			m.id = v
		case jsonscan.KeyIs(k, "method"):
			s, plain := jsonscan.PlainString(v)
			if !plain {
				return false
			}
			m.method, m.hasMethod = string(s), true
		case jsonscan.KeyIs(k, "params"):
			m.params = v
		case jsonscan.KeyIs(k, "result"):
			m.result = v
		case jsonscan.KeyIs(k, "error"):
			if string(v) != "null" { // some servers write "error": null beside a result
				m.rpcErr = v
			}
		default:
			return false
		}
		return true
	})
	return m, ok && version
}

// isID reports whether raw is a request id the lane can echo exactly as
// the SDK answers it: a string, or a number that is an [exactInteger].
// go-sdk reads numeric ids through a float64 and answers with its integer
// part (9007199254740993 is answered as 9007199254740992, 1.5 as 1, 1e3
// as 1000): any other number is the SDK's to answer.
func isID(raw json.RawMessage) bool {
	return len(raw) > 0 && (raw[0] == '"' || exactInteger(raw))
}

// maxExact is the largest magnitude up to which a float64 holds every
// integer: 2^53.
const maxExact = 1 << 53

// exactInteger reports whether the JSON number raw is an integer written
// without fraction or exponent, of at most 2^53 in magnitude: a number
// that go-sdk, which decodes numbers into float64s, writes back the same.
func exactInteger(raw []byte) bool {
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 16 {
		return false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int64(c-'0')
	}
	return n <= maxExact
}

// idKey is a request id as the lane indexes its calls: by value, as go-sdk
// tells ids apart ([guard.AppendIDKey]), so that a cancellation names a
// call however it writes the id ("c\u0033" is "c3", 6.0 is 6), as on the
// SDK path. false for what is no id.
func idKey(raw []byte) (string, bool) {
	var buf [32]byte
	key, ok := guard.AppendIDKey(buf[:0], raw)
	return string(key), ok
}

// plainKey is a member's key as jsonscan gives it, its escapes decoded
// ("request\u0049d" is "requestId" to go-sdk), so that [jsonscan.KeyIs]
// compares what go-sdk compares; a key that does not decode stays as it is.
func plainKey(k []byte) []byte {
	if bytes.IndexByte(k, '\\') < 0 {
		return k
	}
	key, ok := jsonscan.String(k)
	if !ok {
		return k
	}
	return jsonscan.AppendString(nil, key)
}
