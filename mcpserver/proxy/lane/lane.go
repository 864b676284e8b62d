package lane

import (
	"bytes"
	"cmp"
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

	"github.com/agentctl/agentctl/mcpserver/internal/wire"
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
}

// Lane forwards tools/call of external tools between one client connection
// and the external servers' connections, and answers tools/list.
type Lane struct {
	ep     Endpoint
	client io.Writer
	log    *slog.Logger
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

	// progress maps the lane's progress tokens to the clients' tokens, as
	// written.
	progress *proxy.ProgressRoutes[json.RawMessage]
	// listing is tools/list's result for 2026-07-28 requests.
	listing statelessListing

	mu sync.Mutex
	// expiry fails the calls whose timeout ran out: one timer, set for the
	// earliest deadline of the calls in flight (expiryAt, zero once it has
	// fired), so that a call costs no timer of its own (each would wake the
	// runtime's network poller).
	expiry   *time.Timer
	expiryAt time.Time
	calls    map[int64]*call        // by number (call.seq)
	links    map[string]*proxy.Link // by server name: each stdio server's current connection

	spare spare
}

// spare keeps answered calls and message buffers for reuse: a call costs
// no allocation once the lane has run a while, since on this path each
// allocation soon means touching memory the process has not touched yet
// (BENCHMARKS.md). Lists, not sync.Pool: what a call costs stays the same
// under the race detector, which empties pools at random.
type spare struct {
	mu    sync.Mutex
	calls []*call
	bufs  [][]byte
}

// What spare keeps at most: call records, more than the calls usually in
// flight at once; buffers, which are held only while a message is built
// and written, more than the goroutines that write at once, each no
// larger than maxSpareBuf (a large answer's is left to the collector).
const (
	maxSpareCalls = 64
	maxSpareBufs  = 8
	maxSpareBuf   = 16 << 10
)

// call is one forwarded call. Whoever removes it from the lane's calls
// (take, cancel, expire, Down) owns it, answers it and then gives it back
// ([Lane.done]).
type call struct {
	// ids is the client's id by value (wire.Message.Key: a client may use
	// one id for several calls), then as written; keyLen is the first's
	// length.
	ids    []byte
	keyLen int
	seq    int64  // the call's number: upstream, its id is idPrefix and seq
	upTok  string // its progress token upstream ("": the client asked for no progress)
	link   *proxy.Link
	proto  protocol
	// limit is the call's timeout (0: none), which runs out at deadline.
	limit    time.Duration
	deadline time.Time
}

func (c *call) clientKey() []byte { return c.ids[:c.keyLen] }
func (c *call) clientID() []byte  { return c.ids[c.keyLen:] }

// newCall returns a call record, a spare one if there is one.
func (l *Lane) newCall() *call {
	l.spare.mu.Lock()
	defer l.spare.mu.Unlock()
	if n := len(l.spare.calls); n > 0 {
		c := l.spare.calls[n-1]
		l.spare.calls = l.spare.calls[:n-1]
		return c
	}
	return new(call)
}

// done takes back c, answered and no longer in the lane's calls.
func (l *Lane) done(c *call) {
	ids := c.ids[:0]
	if cap(ids) > 256 {
		ids = nil
	}
	*c = call{ids: ids}
	l.spare.mu.Lock()
	if len(l.spare.calls) < maxSpareCalls {
		l.spare.calls = append(l.spare.calls, c)
	}
	l.spare.mu.Unlock()
}

// buf returns an empty buffer to build a message in, a spare one if there
// is one. Neither the client's output (the guard) nor a link keeps what
// it is given ([proxy.Link.Send]), so the buffer goes back (putBuf) once
// the message is written.
func (l *Lane) buf() []byte {
	l.spare.mu.Lock()
	defer l.spare.mu.Unlock()
	if n := len(l.spare.bufs); n > 0 {
		b := l.spare.bufs[n-1]
		l.spare.bufs = l.spare.bufs[:n-1]
		return b[:0]
	}
	return make([]byte, 0, 512)
}

func (l *Lane) putBuf(b []byte) {
	if cap(b) > maxSpareBuf {
		return
	}
	l.spare.mu.Lock()
	if len(l.spare.bufs) < maxSpareBufs {
		l.spare.bufs = append(l.spare.bufs, b)
	}
	l.spare.mu.Unlock()
}

// appendUpID appends the upstream id of call number seq, unquoted.
func appendUpID(dst []byte, seq int64) []byte {
	return strconv.AppendInt(append(dst, idPrefix...), seq, 10)
}

// upSeq is the number of the call whose upstream id is id: idPrefix and
// the number as appendUpID writes it (no sign, no leading zero); false for
// any other id, which names no lane call.
func upSeq[T ~string | ~[]byte](id T) (int64, bool) {
	if len(id) <= len(idPrefix) || len(id) > len(idPrefix)+18 || string(id[:len(idPrefix)]) != idPrefix || id[len(idPrefix)] == '0' {
		return 0, false
	}
	var n int64
	for i := len(idPrefix); i < len(id); i++ {
		if id[i] < '0' || id[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(id[i]-'0')
	}
	return n, true
}

type sessionRef struct{ ss Session }

// New returns the lane of one client connection.
func New(opts Options) *Lane {
	info, _ := json.Marshal(opts.Implementation)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Lane{ep: opts.Endpoint, client: opts.Client, log: log, serverInfo: info,
		calls: map[int64]*call{}, links: map[string]*proxy.Link{},
		progress: proxy.NewProgressRoutes[json.RawMessage](tokenPrefix)}
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

// FromClient takes the client's message if it is the lane's to answer or
// forward; false leaves it to the SDK. The message is one the input guard
// offers, read once: a request, a cancellation or a notification go-sdk
// reads. The lane reads only what it reads plainly ([wire.Message.Plain]).
func (l *Lane) FromClient(m *wire.Message) bool {
	if l.closed.Load() || !m.Plain {
		return false
	}
	switch string(m.Name) {
	case "tools/call":
		return m.Kind == wire.Request && l.call(m)
	case "tools/list":
		return m.Kind == wire.Request && l.list(m)
	case "notifications/cancelled":
		return m.Kind == wire.Cancellation && l.inflight.Load() > 0 && l.cancel(m)
	}
	return false
}

// call forwards a tools/call of an external tool whose server is up; false
// leaves the request to the SDK.
func (l *Lane) call(m *wire.Message) bool {
	if !wire.Exact(m.ID) {
		return false
	}
	var (
		name, args, meta []byte
		ok               bool
	)
	known := wire.EachMember(m.Params, func(k, v []byte) bool {
		switch {
		case wire.KeyIs(k, "name"):
			name, ok = wire.PlainString(v)
			return ok
		case wire.KeyIs(k, "arguments"):
			args = v
		case wire.KeyIs(k, "_meta"):
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

	c := l.newCall()
	c.ids = append(append(c.ids[:0], m.Key...), m.ID...)
	c.keyLen, c.seq, c.link, c.proto = len(m.Key), l.next.Add(1), link, proto
	msg := append(l.buf(), `{"jsonrpc":"2.0","id":"`...)
	msg = appendUpID(msg, c.seq)
	msg = append(msg, `","method":"tools/call","params":{"name":`...)
	msg = wire.AppendString(msg, r.Tool)
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
		wire.EachMember(meta, func(k, v []byte) bool {
			if !forwardsMeta(k) {
				return true
			}
			sep()
			msg = append(append(append(msg, k...), ':'), v...)
			return true
		})
		if tok != nil {
			c.upTok = l.progress.Add(bytes.Clone(tok))
			sep()
			msg = append(msg, `"progressToken":`...)
			msg = wire.AppendString(msg, c.upTok)
		}
		if first {
			msg = msg[:start]
		} else {
			msg = append(msg, '}')
		}
	}
	msg = append(msg, "}}\n"...)
	defer l.putBuf(msg)

	// From here c is the lane's: an answer (or the server's end) may take
	// it at once, from another goroutine.
	seq := c.seq
	l.add(c, link.CallTimeout)
	l.forwarded.Add(1)
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug("tools/call", "tool", r.Canonical, "lane", "fast")
	}
	if err := link.Send(msg); err != nil {
		// Answer here only if it is still ours to answer (a server going
		// away fails its calls from its reader too).
		if c := l.take(seq); c != nil {
			l.replyError(c, proxy.DidNotGetCall(link.Server(), err))
			l.done(c)
		}
	}
	return true
}

// forwardsMeta is [proxy.ForwardsMeta] of a key as [wire.Object] gives it.
func forwardsMeta(key []byte) bool { return proxy.ForwardsMeta(string(wire.Key(key))) }

// list answers tools/list from the endpoint's encoding, kept until the
// tools change: the SDK encodes every definition again on every list, some
// 5 ms for a few hundred tools. false leaves the request to the SDK: a
// cursor, a client not yet initialized, or the endpoint's refusal (see
// [Endpoint.ToolsList]).
func (l *Lane) list(m *wire.Message) bool {
	if !wire.Exact(m.ID) {
		return false
	}
	var meta []byte
	if m.Params != nil && string(m.Params) != "null" && !wire.EachMember(m.Params, func(k, v []byte) bool {
		if wire.KeyIs(k, "_meta") {
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
	msg := make([]byte, 0, len(result)+len(m.ID)+40)
	msg = append(msg, `{"jsonrpc":"2.0","id":`...)
	msg = append(msg, m.ID...)
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
		c.limit, c.deadline = limit, time.Now().Add(limit)
		l.armLocked(c.deadline)
	}
	l.calls[c.seq] = c
	l.mu.Unlock()
	l.inflight.Add(1)
}

// take removes call number seq; nil if it is no longer pending (answered,
// cancelled or failed).
func (l *Lane) take(seq int64) *call {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.calls[seq]
	if c == nil {
		return nil
	}
	l.removeLocked(c)
	return c
}

func (l *Lane) removeLocked(c *call) {
	delete(l.calls, c.seq)
	if c.upTok != "" {
		l.progress.Remove(c.upTok)
	}
	l.inflight.Add(-1)
}

// cancel forwards the client's cancellation of lane calls, named by its
// id's value as go-sdk names it (so 6.0 and 6.5 both cancel 6, as on the
// SDK path): every call in flight with that id, as the input guard cancels
// every request with it; false leaves the cancellation to the SDK: no lane
// call has that id.
func (l *Lane) cancel(m *wire.Message) bool {
	var cs []*call
	l.mu.Lock()
	for _, c := range l.calls {
		if bytes.Equal(c.clientKey(), m.Key) {
			cs = append(cs, c)
			l.removeLocked(c)
		}
	}
	l.mu.Unlock()
	slices.SortFunc(cs, func(a, b *call) int { return cmp.Compare(a.seq, b.seq) })
	if len(cs) == 0 {
		return false
	}
	for _, c := range cs {
		c.cancelUpstream(m.Reason)
		l.done(c)
	}
	return true
}

// cancelUpstream tells the call's server that it is cancelled, with the
// reason (a JSON string) if not nil.
func (c *call) cancelUpstream(reason []byte) {
	msg := append([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"`), appendUpID(nil, c.seq)...)
	msg = append(msg, '"')
	if reason != nil {
		msg = append(append(msg, `,"reason":`...), reason...)
	}
	msg = append(msg, "}}\n"...)
	_ = c.link.Send(msg) // a server that is gone or stuck has nothing to cancel
}

// armLocked makes the expiry timer fire by at.
func (l *Lane) armLocked(at time.Time) {
	switch {
	case l.expiry == nil:
		l.expiry = time.AfterFunc(time.Until(at), l.expire)
	case l.expiryAt.IsZero() || at.Before(l.expiryAt):
		l.expiry.Reset(time.Until(at))
	default:
		return // it fires sooner
	}
	l.expiryAt = at
}

// expire fails the calls their servers did not answer within their
// timeout, cancels them upstream, and sets the timer for the next.
func (l *Lane) expire() {
	now := time.Now()
	var late []*call
	var next time.Time
	l.mu.Lock()
	for _, c := range l.calls {
		switch {
		case c.limit == 0:
		case !c.deadline.After(now):
			late = append(late, c)
		case next.IsZero() || c.deadline.Before(next):
			next = c.deadline
		}
	}
	for _, c := range late {
		l.removeLocked(c)
	}
	if l.expiryAt = (time.Time{}); !next.IsZero() {
		l.armLocked(next)
	}
	l.mu.Unlock()
	slices.SortFunc(late, func(a, b *call) int { return a.deadline.Compare(b.deadline) })
	for _, c := range late {
		c.cancelUpstream(wire.AppendString(nil, fmt.Sprintf("agentctl's call timeout (%s) ran out", c.limit)))
		l.log.Warn("MCP server did not answer a call in time; cancelled it", "mcp_server", c.link.Server(), "call_timeout", c.limit)
		l.replyError(c, proxy.CallTimedOut(c.link.Server(), c.limit)) // the SDK path's words
		l.done(c)
	}
}
