package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/mcpserver/guard"
	"github.com/agentctl/agentctl/mcpserver/internal/jsonscan"
	"github.com/agentctl/agentctl/mcpserver/proxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fast lane.
//
// A tools/call of an external stdio server's tool does not need the SDK at
// all: the request's bytes can go upstream with only the tool's name, id and
// progress token rewritten, and the answer's bytes can come back with only
// the id put back. go-sdk decodes every message with a fresh streaming
// decoder and validates it (about 0.4 ms of CPU per message on one core),
// which is what a hop through agentctl used to cost.
//
// So on stdio the endpoint reads its client's lines itself. A line the lane
// fully understands (a tools/call of an external tool whose server is up,
// or a tools/list without a cursor, from a client that initialized or
// speaks 2026-07-28) is answered or forwarded raw; every other line goes
// to the SDK unchanged, which keeps its own behaviour for them (errors,
// waiting for the first round, batches, unknown fields). Each external
// stdio server's lines are read the same way: answers and progress of the
// lane's calls go straight back to the client; everything else goes to the
// SDK client session.
//
// What the client sees is the same either way (compared by value in
// TestLaneAnswersAsTheSDKDoes; a server's result passes byte for byte), and
// the proxy scenarios run through both paths.

// Ids and progress tokens the lane sends upstream. They cannot collide with
// the SDK's own ids (numbers) or the SDK path's tokens ("agentctl-N").
const (
	laneIDPrefix    = "agentctl-call-"
	laneTokenPrefix = "agentctl-progress-"
)

// lane forwards tools/call of external tools between one client connection
// and the external servers' connections, and answers tools/list.
type lane struct {
	e      *Endpoint
	client io.Writer // the client's output: one whole message per Write
	// serverInfo is agentctl's implementation, as 2026-07-28 results name it.
	serverInfo json.RawMessage
	// session is the SDK's session with the client, once connected: the
	// lane takes requests only in a session the SDK has initialized
	// (initialize, or a first 2026-07-28 request, which the SDK handles),
	// and answers as the SDK would for its protocol version.
	session atomic.Pointer[sessionRef]
	// closed: ServeStdio has returned; nothing more is written.
	closed   atomic.Bool
	next     atomic.Int64
	inflight atomic.Int64
	// forwarded counts the calls the lane has sent upstream; listed, the
	// tools/list it has answered.
	forwarded, listed atomic.Int64

	// progress maps the lane's progress tokens to their calls.
	progress *proxy.ProgressRoutes[*laneCall]

	mu       sync.Mutex
	calls    map[string]*laneCall // by upstream id
	byClient map[string]*laneCall // by the client's request id
}

// laneCall is one forwarded call.
type laneCall struct {
	clientID    json.RawMessage
	clientToken json.RawMessage // nil: the client asked for no progress
	upID, upTok string
	link        *laneLink
	proto       protocol
}

func newLane(e *Endpoint, client io.Writer) *lane {
	info, _ := json.Marshal(implementation(e.cfg))
	return &lane{e: e, client: client, serverInfo: info, calls: map[string]*laneCall{}, byClient: map[string]*laneCall{},
		progress: proxy.NewProgressRoutes[*laneCall](laneTokenPrefix)}
}

var (
	toolsCallMethod = []byte(`"tools/call"`)
	toolsListMethod = []byte(`"tools/list"`)
	cancelledMethod = []byte(`"notifications/cancelled"`)
	laneMarker      = []byte(`"agentctl-`)
)

// fromClient takes the client's line if it is the lane's to forward.
func (l *lane) fromClient(line []byte) bool {
	// A cheap look first: most lines are none of the lane's.
	if l.closed.Load() || !(bytes.Contains(line, toolsCallMethod) || bytes.Contains(line, toolsListMethod) ||
		l.inflight.Load() > 0 && bytes.Contains(line, cancelledMethod)) {
		return false
	}
	m, ok := readMessage(line)
	if !ok {
		return false
	}
	switch m.method {
	case "tools/call":
		return l.call(m)
	case "tools/list":
		return l.list(m)
	case "notifications/cancelled":
		return l.cancel(m)
	}
	return false
}

// sessionRef holds the SDK's session (a fake in tests).
type sessionRef struct {
	ss interface {
		InitializeParams() *mcp.InitializeParams
	}
}

// protocol is what the lane knows of the client's protocol for one request.
type protocol struct {
	// stateless: the request carries the 2026-07-28 _meta: its result names
	// the server in _meta.
	stateless bool
	// multiRoundTrip: the session speaks 2026-07-28, whose tools/call
	// results say "resultType".
	multiRoundTrip bool
}

// protocolOf checks that the SDK would take a request with this _meta in
// this session, and says how to answer it; ok is false to leave the
// request to the SDK (which also explains what is wrong).
func (l *lane) protocolOf(meta []byte) (tok []byte, p protocol, ok bool) {
	ref := l.session.Load()
	if ref == nil {
		return nil, p, false
	}
	params := ref.ss.InitializeParams()
	if params == nil {
		return nil, p, false // the SDK initializes the session, or refuses
	}
	tok, p.stateless, ok = readMeta(meta)
	p.multiRoundTrip = params.ProtocolVersion >= statelessVersion
	return tok, p, ok
}

// message is the part of a JSON-RPC message the lane reads: slices of the
// line it came in.
type message struct {
	id, params, result, rpcErr []byte
	method                     string
}

// readMessage reads a JSON-RPC 2.0 message's members; ok is false for
// anything the lane leaves to the SDK (invalid JSON, a batch, a member it
// does not know, a method written with escapes).
func readMessage(line []byte) (m message, ok bool) {
	if !json.Valid(line) {
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
			m.method = string(s)
		case jsonscan.KeyIs(k, "params"):
			m.params = v
		case jsonscan.KeyIs(k, "result"):
			m.result = v
		case jsonscan.KeyIs(k, "error"):
			m.rpcErr = v
		default:
			return false
		}
		return true
	})
	return m, ok && version
}

// call forwards a tools/call of an external tool whose server is up; false
// leaves the request to the SDK.
func (l *lane) call(m message) bool {
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

	u, base := l.e.routeExternal(string(name))
	if u == nil {
		return false
	}
	link := u.currentLink()
	if link == nil {
		return false
	}

	n := l.next.Add(1)
	c := &laneCall{clientID: bytes.Clone(m.id), link: link, proto: proto}
	c.upID = laneIDPrefix + strconv.FormatInt(n, 10)
	msg := make([]byte, 0, len(args)+len(meta)+len(base)+128)
	msg = append(msg, `{"jsonrpc":"2.0","id":"`...)
	msg = append(msg, c.upID...)
	msg = append(msg, `","method":"tools/call","params":{"name":`...)
	msg = jsonscan.AppendString(msg, base)
	msg = append(msg, `,"arguments":`...)
	msg = append(msg, args...)
	if meta != nil {
		// The keys proxy.ForwardsMeta passes; the progress token becomes
		// the lane's.
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
		msg = append(msg, '}')
	}
	msg = append(msg, "}}\n"...)

	l.add(c)
	l.forwarded.Add(1)
	if l.e.log.Enabled(context.Background(), slog.LevelDebug) {
		l.e.log.Debug("tools/call", "tool", u.mount.ToolName(base), "lane", "fast")
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

// readMeta reads a request's _meta: the progress token, and whether it is a
// 2026-07-28 request (which needs no initialize). ok is false when the
// lane should leave the request to the SDK: an older version named per
// request, or protocol keys without a version (the SDK explains).
func readMeta(meta []byte) (tok []byte, stateless, ok bool) {
	if meta == nil || string(meta) == "null" {
		return nil, false, true
	}
	var version, caps, info []byte
	protocolKeys := false
	if !jsonscan.EachMember(meta, func(k, v []byte) bool {
		switch {
		case jsonscan.KeyIs(k, "progressToken"):
			if string(v) != "null" { // null asks for no progress
				tok = v
			}
		case jsonscan.KeyIs(k, "io.modelcontextprotocol/protocolVersion"):
			version = v
		case jsonscan.KeyIs(k, "io.modelcontextprotocol/clientCapabilities"):
			caps = v
		case jsonscan.KeyIs(k, "io.modelcontextprotocol/clientInfo"):
			info = v
		case bytes.HasPrefix(k, []byte(`"io.modelcontextprotocol/`)):
			protocolKeys = true
		}
		return true
	}) {
		return nil, false, false
	}
	if version == nil {
		// Protocol keys without a version: the SDK's to judge.
		return tok, false, !protocolKeys && caps == nil && info == nil
	}
	// Exactly the version agentctl serves statelessly, with the capabilities
	// and client details the SDK can read; anything else the SDK refuses
	// in its own words.
	if string(version) != `"`+statelessVersion+`"` || !decodes[mcp.ClientCapabilities](caps) ||
		(info != nil && !decodes[mcp.Implementation](info)) {
		return nil, false, false
	}
	return tok, true, true
}

// decodes reports whether raw is a JSON object that decodes into a T.
func decodes[T any](raw []byte) bool {
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
	var v T
	return json.Unmarshal(raw, &v) == nil
}

// list answers tools/list from an encoding kept until the tools change:
// the SDK encodes every definition again on every list, some 5 ms for a few
// hundred tools. false leaves the request to the SDK: a cursor, a client
// not yet initialized, or external servers still on their first attempt
// (the SDK path waits for them).
func (l *lane) list(m message) bool {
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
	if !ok || !l.e.firstRoundDone() {
		return false
	}
	result := l.e.listing.get(l.e, proto.stateless, l.serverInfo)
	if result == nil {
		return false
	}
	msg := make([]byte, 0, len(result)+len(m.id)+40)
	msg = append(msg, `{"jsonrpc":"2.0","id":`...)
	msg = append(msg, m.id...)
	msg = append(msg, `,"result":`...)
	msg = append(msg, result...)
	msg = append(msg, "}\n"...)
	l.listed.Add(1)
	_, _ = l.client.Write(msg)
	return true
}

// listing is tools/list's result, encoded once per generation of the
// registry, as the client is to see it.
type listing struct {
	mu        sync.Mutex
	gen       uint64
	valid     bool
	plain     []byte // for clients that initialized
	stateless []byte // for 2026-07-28 requests
}

// get returns the encoded result; nil when the SDK must answer (more tools
// than fit one page).
func (c *listing) get(e *Endpoint, stateless bool, info []byte) []byte {
	e.nsMu.RLock() // one consistent namespace: never half of a reconcile
	defer e.nsMu.RUnlock()
	gen, tools := e.registry.Listed()
	if len(tools) > mcp.DefaultPageSize {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid || c.gen != gen {
		res := &mcp.ListToolsResult{Tools: tools}
		res.CacheScope = "public" // go-sdk's default: the field is required on the wire
		if e.cfg.Naming.Namespacing == agents.NamespacingSuffix {
			res = e.presentList(res)
		}
		b, err := json.Marshal(res)
		if err != nil {
			return nil
		}
		c.gen, c.valid, c.plain, c.stateless = gen, true, b, nil
	}
	if !stateless {
		return c.plain
	}
	if c.stateless == nil {
		// As go-sdk answers a 2026-07-28 list: complete, naming its server.
		c.stateless = append([]byte(`{"resultType":"complete",`), withServerInfo(c.plain, info)[1:]...)
	}
	return c.stateless
}

// firstRoundDone reports whether every external server has had its first
// connection attempt.
func (e *Endpoint) firstRoundDone() bool {
	if len(e.upstreams) == 0 {
		return true
	}
	select {
	case <-e.firstRound:
		return true
	default:
		return false
	}
}

// statelessVersion is the first protocol version without initialize: each
// request carries the client's version and capabilities in _meta.
const statelessVersion = "2026-07-28"

// isID reports whether raw is a request id: a string or a number.
func isID(raw json.RawMessage) bool {
	return len(raw) > 0 && (raw[0] == '"' || raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'))
}

// idKey is a request id as the lane indexes it: as the client wrote it
// (a cancellation names the request the way its request did).
func idKey(raw []byte) string { return string(raw) }

func (l *lane) add(c *laneCall) {
	l.mu.Lock()
	l.calls[c.upID] = c
	l.byClient[idKey(c.clientID)] = c
	l.mu.Unlock()
	l.inflight.Add(1)
}

// take removes the call with upstream id upID; nil if it is no longer
// pending (answered, cancelled or failed).
func (l *lane) take(upID string) *laneCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.calls[upID]
	if c == nil {
		return nil
	}
	l.removeLocked(c)
	return c
}

func (l *lane) removeLocked(c *laneCall) {
	delete(l.calls, c.upID)
	if c.upTok != "" {
		l.progress.Remove(c.upTok)
	}
	if l.byClient[idKey(c.clientID)] == c {
		delete(l.byClient, idKey(c.clientID))
	}
	l.inflight.Add(-1)
}

// cancel forwards the client's cancellation of a lane call.
func (l *lane) cancel(m message) bool {
	var requestID, reason []byte
	jsonscan.EachMember(m.params, func(k, v []byte) bool {
		switch {
		case jsonscan.KeyIs(k, "requestId"):
			requestID = v
		case jsonscan.KeyIs(k, "reason"):
			reason = v
		}
		return true
	})
	if requestID == nil {
		return false
	}
	l.mu.Lock()
	c := l.byClient[idKey(requestID)]
	if c != nil {
		l.removeLocked(c)
	}
	l.mu.Unlock()
	if c == nil {
		return false
	}
	msg := append([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`), jsonscan.AppendString(nil, c.upID)...)
	if reason != nil {
		msg = append(append(msg, `,"reason":`...), reason...)
	}
	msg = append(msg, "}}\n"...)
	_ = c.link.send(msg) // a server that is gone or stuck has nothing to cancel
	return true
}

// fromServer takes an external server's line if it answers or reports
// progress of a lane call.
func (l *lane) fromServer(line []byte) bool {
	if l.inflight.Load() == 0 || !bytes.Contains(line, laneMarker) {
		return false
	}
	m, ok := readMessage(line)
	if !ok {
		return l.oddAnswer(line)
	}
	if m.method == "" && m.id != nil {
		id, plain := jsonscan.PlainString(m.id)
		if !plain || !bytes.HasPrefix(id, []byte(laneIDPrefix)) {
			return false
		}
		if c := l.take(string(id)); c != nil {
			l.reply(c, m.result, m.rpcErr, nil)
		}
		return true // a late answer to a cancelled call is dropped
	}
	if m.method != "notifications/progress" {
		return false
	}
	var tok []byte
	jsonscan.EachMember(m.params, func(k, v []byte) bool {
		if jsonscan.KeyIs(k, "progressToken") {
			tok, _ = jsonscan.PlainString(v)
			return false
		}
		return true
	})
	if !bytes.HasPrefix(tok, []byte(laneTokenPrefix)) {
		return false
	}
	c, ok := l.progress.Lookup(string(tok))
	if !ok {
		return true // progress of a call that is over
	}
	msg := append(make([]byte, 0, len(m.params)+64), `{"jsonrpc":"2.0","method":"notifications/progress","params":{`...)
	first := true
	jsonscan.EachMember(m.params, func(k, v []byte) bool {
		if !first {
			msg = append(msg, ',')
		}
		first = false
		if jsonscan.KeyIs(k, "progressToken") {
			v = c.clientToken
		}
		msg = append(append(append(msg, k...), ':'), v...)
		return true
	})
	msg = append(msg, "}}\n"...)
	_, _ = l.client.Write(msg)
	return true
}

// withMember adds key: value to the object result unless it has key.
func withMember(result []byte, key, value string) []byte {
	if len(result) < 2 || result[0] != '{' {
		return result
	}
	has := false
	if bytes.Contains(result, []byte(key)) {
		jsonscan.EachMember(result, func(k, _ []byte) bool {
			has = string(k) == key
			return !has
		})
	}
	if has {
		return result
	}
	out := make([]byte, 0, len(result)+len(key)+len(value)+2)
	out = append(append(append(append(out, '{'), key...), ':'), value...)
	if rest := bytes.TrimSpace(result[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, result[1:]...)
}

// oddAnswer takes an answer to a lane call that readMessage does not read
// (a member it does not know, an escaped id): the SDK would drop it as an
// answer to an id it never sent, and the call would wait forever.
func (l *lane) oddAnswer(line []byte) bool {
	var a struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(line, &a) != nil || a.Method != "" {
		return false
	}
	var id string
	if json.Unmarshal(a.ID, &id) != nil || !strings.HasPrefix(id, laneIDPrefix) {
		return false
	}
	if c := l.take(id); c != nil {
		l.reply(c, a.Result, a.Error, nil)
	}
	return true
}

// reply answers the client's call: the server's result or error unchanged,
// or, when the server failed (failure != nil), a tool error naming it.
func (l *lane) reply(c *laneCall, result, rpcErr []byte, failure error) {
	if failure != nil {
		l.replyError(c, proxy.FailedDuringCall(c.link.server, failure))
		return
	}
	if string(rpcErr) == "null" {
		rpcErr = nil // some servers write "error": null beside a result
	}
	msg := make([]byte, 0, len(result)+len(rpcErr)+len(c.clientID)+80)
	msg = append(msg, `{"jsonrpc":"2.0","id":`...)
	msg = append(msg, c.clientID...)
	if len(rpcErr) > 0 {
		msg = append(msg, `,"error":`...)
		msg = append(msg, rpcErr...)
	} else {
		if len(result) == 0 || string(result) == "null" {
			result = []byte("{}")
		}
		msg = append(msg, `,"result":`...)
		if c.proto.stateless {
			result = withServerInfo(result, l.serverInfo)
		}
		if c.proto.multiRoundTrip {
			// go-sdk's answer in a 2026-07-28 session: complete, not input
			// required (agentctl asks servers for 2025-11-25, which has no
			// input requests).
			result = withMember(result, `"resultType"`, `"complete"`)
		}
		msg = append(msg, result...)
	}
	msg = append(msg, "}\n"...)
	_, _ = l.client.Write(msg)
}

// withServerInfo names agentctl in a result's _meta, as go-sdk does for a
// 2026-07-28 client (SEP-2575: each result identifies its server), unless
// the result already names a server.
func withServerInfo(result json.RawMessage, info json.RawMessage) json.RawMessage {
	if len(result) < 2 || result[0] != '{' {
		return result
	}
	if !bytes.Contains(result, []byte(`"_meta"`)) {
		out := make([]byte, 0, len(result)+len(info)+50)
		out = append(out, `{"_meta":{"io.modelcontextprotocol/serverInfo":`...)
		out = append(out, info...)
		out = append(out, '}')
		if rest := bytes.TrimSpace(result[1:]); len(rest) > 0 && rest[0] != '}' {
			out = append(out, ',')
		}
		return append(out, result[1:]...)
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(result, &top) != nil {
		return result
	}
	var meta map[string]json.RawMessage
	if m, ok := top["_meta"]; ok && string(m) != "null" {
		if json.Unmarshal(m, &meta) != nil {
			return result
		}
	}
	if _, ok := meta[mcp.MetaKeyServerInfo]; ok {
		return result
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	meta[mcp.MetaKeyServerInfo] = info
	var err error
	if top["_meta"], err = json.Marshal(meta); err != nil {
		return result
	}
	out, err := json.Marshal(top)
	if err != nil {
		return result
	}
	return out
}

// replyError answers the client's call with a tool error (isError): the
// model reads it, where a protocol error would only reach the client.
func (l *lane) replyError(c *laneCall, text string) {
	b, err := json.Marshal(proxy.ToolError(text))
	if err != nil {
		return
	}
	l.reply(c, b, nil, nil)
}

// linkDown fails the calls still waiting on a server that went away.
func (l *lane) linkDown(link *laneLink, cause error) {
	l.mu.Lock()
	var failed []*laneCall
	for _, c := range l.calls {
		if c.link == link {
			failed = append(failed, c)
		}
	}
	for _, c := range failed {
		l.removeLocked(c)
	}
	l.mu.Unlock()
	for _, c := range failed {
		l.reply(c, nil, nil, cause)
	}
}

// routeExternal resolves the client's name to an external tool: its
// server and the tool's own name there. nil when the name is anything else
// (or unknown: the SDK path explains it).
func (e *Endpoint) routeExternal(name string) (*upstream, string) {
	e.nsMu.RLock()
	defer e.nsMu.RUnlock()
	r := RouteToolCall(e.registry, e.cfg.Naming.Namespacing, e.cfg.ServerName, name)
	if r.Err != nil {
		return nil, ""
	}
	st := e.external[r.Canonical]
	if st == nil {
		return nil, ""
	}
	return st.u, st.tool.Name
}

// laneLink is the lane's side of one connection to an external stdio server.
//
// Every message to the server, the lane's and the SDK's, goes through
// write, in order. A message is written at once when the server's input
// has room (the common case: no hand-off to another goroutine); when it has
// not, the message waits in a queue that a flusher writes out. So a server
// that stops reading never stalls the client's other messages
// (cancellations, built-ins) behind it: once the queue holds more than
// maxQueued bytes, further lane calls are refused with a tool error.
type laneLink struct {
	server string
	out    io.Writer
	raw    syscall.RawConn // out's descriptor, for writes that must not block
	// queueOnly: out may block and cannot be tried without blocking, so
	// every message goes through the queue.
	queueOnly bool
	max       int // bytes the queue may hold for lane calls

	mu       sync.Mutex
	queue    []queued
	queued   int // bytes in queue
	flushing bool
	err      error // once set, the link is closed
}

type queued struct {
	msg  []byte
	done chan error // nil: nobody waits
}

// maxQueued bounds what the lane queues for a server that does not read.
const maxQueued = 4 << 20

var (
	errNotReading = errors.New("it is not reading its input")
	errLinkClosed = errors.New("its connection is closed")
)

// newLaneLink returns the link that writes to out: an *os.File (a pipe to
// the server) is written without blocking where the system allows it, else
// through the queue; any other writer (in tests) must not block.
func newLaneLink(server string, out io.Writer) *laneLink {
	k := &laneLink{server: server, out: out, max: maxQueued}
	if f, ok := out.(*os.File); ok {
		k.queueOnly = true
		if rc, err := f.SyscallConn(); err == nil && canTryWrite {
			k.raw, k.queueOnly = rc, false
		}
	}
	return k
}

// send queues the lane's message: refused when the link is closed or the
// server has not read what is already queued.
func (k *laneLink) send(msg []byte) error { return k.write(msg, false) }

// write writes msg after everything before it; with wait, it returns once
// msg is written (the SDK's writes), else at once.
func (k *laneLink) write(msg []byte, wait bool) error {
	k.mu.Lock()
	if k.err != nil {
		err := k.err
		k.mu.Unlock()
		return err
	}
	if !k.flushing {
		n, err := k.tryWrite(msg)
		if err != nil {
			k.err = err
			k.mu.Unlock()
			return err
		}
		if n == len(msg) {
			k.mu.Unlock()
			return nil
		}
		msg = msg[n:] // the rest must follow, whatever the queue holds
	} else if !wait && k.queued >= k.max {
		k.mu.Unlock()
		return errNotReading
	}
	q := queued{msg: msg}
	if wait {
		q.done = make(chan error, 1)
	}
	k.queue = append(k.queue, q)
	k.queued += len(msg)
	if !k.flushing {
		k.flushing = true
		go k.flush()
	}
	k.mu.Unlock()
	if wait {
		return <-q.done
	}
	return nil
}

// tryWrite writes what the server's input takes without blocking.
func (k *laneLink) tryWrite(msg []byte) (int, error) {
	switch {
	case k.queueOnly:
		return 0, nil
	case k.raw == nil:
		return k.out.Write(msg)
	}
	var (
		n    int
		werr error
	)
	if err := k.raw.Write(func(fd uintptr) bool {
		n, werr = writeNonblock(fd, msg)
		return true
	}); err != nil {
		return 0, err
	}
	return n, werr
}

// flush writes the queue out, blocking as long as the server needs.
func (k *laneLink) flush() {
	for {
		k.mu.Lock()
		if len(k.queue) == 0 || k.err != nil {
			rest, err := k.queue, k.err
			k.queue, k.queued, k.flushing = nil, 0, false
			k.mu.Unlock()
			for _, q := range rest {
				if q.done != nil {
					q.done <- err
				}
			}
			return
		}
		q := k.queue[0]
		k.queue = k.queue[1:]
		k.queued -= len(q.msg)
		k.mu.Unlock()
		_, err := k.out.Write(q.msg)
		if q.done != nil {
			q.done <- err
		}
		if err != nil {
			k.mu.Lock()
			if k.err == nil {
				k.err = err
			}
			k.mu.Unlock()
		}
	}
}

// close refuses further writes; queued messages are dropped (the server is
// going away).
func (k *laneLink) close() {
	k.mu.Lock()
	if k.err == nil {
		k.err = errLinkClosed
	}
	k.mu.Unlock()
}

// currentLink returns the server's connection when it is up and the lane
// can use it.
func (u *upstream) currentLink() *laneLink {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.state != UpstreamUp {
		return nil
	}
	return u.link
}

// commandTransport starts an external stdio server, as go-sdk's
// CommandTransport does, and reads its output through the lane: answers to
// the lane's calls go to the client directly, the rest to the SDK session.
type commandTransport struct {
	cmd       *exec.Cmd
	terminate time.Duration
	lane      func() *lane // the endpoint's lane, when a client is on stdio
	// onLink receives the link once the process runs.
	onLink func(*laneLink)
	server string
}

func (t *commandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	// The server's input as an *os.File, so the lane can write to it
	// without blocking.
	stdinR, stdin, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	t.cmd.Stdin = stdinR
	err = t.cmd.Start()
	stdinR.Close()
	if err != nil {
		stdin.Close()
		return nil, err
	}
	link := newLaneLink(t.server, stdin)
	if t.onLink != nil {
		t.onLink(link)
	}
	pr, pw := io.Pipe()
	go func() {
		err := guard.Pump(stdout, 0, pw, func(line []byte) bool {
			if l := t.lane(); l != nil {
				return l.fromServer(line)
			}
			return false
		})
		link.close()
		if l := t.lane(); l != nil {
			l.linkDown(link, orEOF(err))
		}
	}()
	return (&mcp.IOTransport{Reader: pr, Writer: &processStdin{stdin: stdin, cmd: t.cmd, terminate: t.terminate, link: link}}).Connect(ctx)
}

// processStdin is the server's input as the SDK holds it. Closing it ends
// the server as the MCP spec says a client should: close its input, wait,
// then SIGTERM, then SIGKILL.
type processStdin struct {
	stdin     io.Closer
	cmd       *exec.Cmd
	terminate time.Duration
	link      *laneLink
	once      sync.Once
	err       error
}

func (p *processStdin) Write(b []byte) (int, error) {
	if err := p.link.write(b, true); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (p *processStdin) Close() error {
	p.once.Do(func() { p.err = p.stop() })
	return p.err
}

func (p *processStdin) stop() error {
	p.link.close()
	// A write blocked on a server that stopped reading fails now.
	if err := p.stdin.Close(); err != nil {
		return fmt.Errorf("closing stdin: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	wait := func() (error, bool) {
		select {
		case err := <-done:
			return err, true
		case <-time.After(p.terminate):
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if p.cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := p.cmd.Process.Kill(); err != nil {
		return err
	}
	if err, ok := wait(); ok {
		return err
	}
	return errors.New("unresponsive subprocess")
}
