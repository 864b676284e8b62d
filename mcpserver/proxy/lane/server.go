package lane

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/agentctl/agentctl/mcpserver/internal/wire"
	"github.com/agentctl/agentctl/mcpserver/proxy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The lane's side of its servers' connections: it is the pool's
// [proxy.Tap], which each stdio server's connection tells when it is up
// and down, and offers each of the server's lines first.

// Up notes a server's connection, through which the lane sends the calls
// of the server's tools.
func (l *Lane) Up(link *proxy.Link) {
	l.mu.Lock()
	l.links[link.Server()] = link
	l.mu.Unlock()
}

// link returns the connection to the server named server, if it has one.
func (l *Lane) link(server string) *proxy.Link {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.links[server]
}

// Line takes an answer or progress of a lane call in the common shape
// ([wire.Message.Plain]; a result; no deep nesting), read once: the answer
// goes to the client with only the id put back. Every other line goes on
// to go-sdk's decoder (jsonrpc.DecodeMessage, what the SDK path reads every
// line with), so that the lane takes, fails or hands on exactly what the
// SDK path would (see [Lane.Answer]).
func (l *Lane) Line(_ *proxy.Link, m *wire.Message) bool {
	if l.inflight.Load() == 0 || !m.Plain || m.Depth > wire.MaxDepth {
		return false
	}
	switch {
	case m.Method == nil && m.Result != nil && (m.Error == nil || string(m.Error) == "null"):
		if id, ok := wire.PlainString(m.ID); ok && bytes.HasPrefix(id, []byte(idPrefix)) {
			if seq, ok := upSeq(id); ok {
				if c := l.take(seq); c != nil {
					l.reply(c, m.Result, nil, nil)
					l.done(c)
				}
			}
			return true // a late answer to a cancelled call is dropped
		}
	case string(m.Name) == "notifications/progress":
		return l.progressOf(m.Params)
	}
	return false
}

// Answer takes the server's answer to a lane call, as go-sdk read it, or
// fails the call when its answer could not be read (unreadable says why,
// in the SDK path's words); false for an answer to the SDK's own call.
func (l *Lane) Answer(link *proxy.Link, resp *jsonrpc.Response, unreadable string) bool {
	id, ok := resp.ID.Raw().(string)
	if !ok || !strings.HasPrefix(id, idPrefix) {
		return false
	}
	var c *call
	if seq, ok := upSeq(id); ok {
		c = l.take(seq)
	}
	if c != nil {
		defer l.done(c)
	}
	switch {
	case c == nil: // a late answer to a cancelled call is dropped
	case unreadable != "":
		l.replyError(c, proxy.AnswerUnreadable(link.Server(), unreadable))
	case resp.Error != nil:
		// go-sdk's error, as the SDK path passes it on: its code, message
		// and data.
		var we *jsonrpc.Error
		if !errors.As(resp.Error, &we) {
			we = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: resp.Error.Error()}
		}
		rpcErr, err := json.Marshal(we)
		if err != nil {
			l.replyError(c, proxy.AnswerUnreadable(link.Server(), "a line that is not a JSON-RPC message"))
			return true
		}
		l.reply(c, nil, rpcErr, nil)
	default:
		l.reply(c, resp.Result, nil, nil)
	}
	return true
}

// progressOf forwards a server's progress of a lane call to the client, as
// the SDK path does (proxy.DecodeProgress: go-sdk v1.8.0's reading of the
// params, with _meta kept as written; then agentctl's server session
// encodes them with the client's token): members go-sdk does not define
// dropped, progress and total read as float64s, an empty message and a
// total of 0 left out, and params it cannot read dropped whole. false when
// the progress is not of a lane call.
func (l *Lane) progressOf(params []byte) bool {
	p, ok := proxy.DecodeProgress(params)
	if !ok {
		return false // go-sdk's, which drops it
	}
	tok, _ := p.ProgressToken.(string)
	if !strings.HasPrefix(tok, tokenPrefix) {
		return false
	}
	clientTok, ok := l.progress.Lookup(tok)
	if !ok {
		return true // progress of a call that is over
	}
	p.ProgressToken = clientTok
	b, err := json.Marshal(p)
	if err != nil {
		return true
	}
	msg := append(make([]byte, 0, len(b)+64), `{"jsonrpc":"2.0","method":"notifications/progress","params":`...)
	msg = append(append(msg, b...), "}\n"...)
	l.write(msg)
	return true
}

// reply answers the client's call: the server's result as the SDK path
// passes it on (see sdkResult), or its error (as go-sdk encodes it), or,
// when the server failed (failure != nil), a tool error naming it.
func (l *Lane) reply(c *call, result, rpcErr []byte, failure error) {
	if failure != nil {
		l.replyError(c, proxy.FailedDuringCall(c.link.Server(), failure))
		return
	}
	if len(rpcErr) == 0 {
		shaped, err := sdkResult(result)
		if err != nil {
			// go-sdk cannot read it: the call fails with go-sdk's words
			// and the server is kept, as on the SDK path.
			l.replyError(c, proxy.NotACallResult(c.link.Server(), err))
			return
		}
		result = shaped
	}
	msg := append(l.buf(), `{"jsonrpc":"2.0","id":`...)
	msg = append(msg, c.clientID()...)
	if len(rpcErr) > 0 {
		msg = append(msg, `,"error":`...)
		msg = append(msg, rpcErr...)
	} else {
		msg = append(msg, `,"result":`...)
		msg = append(msg, callResult(result, c.proto, l.serverInfo)...)
	}
	msg = append(msg, "}\n"...)
	l.write(msg)
	l.putBuf(msg)
}

// replyError answers the client's call with a tool error (isError).
func (l *Lane) replyError(c *call, text string) {
	b, err := json.Marshal(proxy.ToolError(text))
	if err != nil {
		return
	}
	l.reply(c, b, nil, nil)
}

// write sends msg to the client, unless the lane is closed.
func (l *Lane) write(msg []byte) {
	if !l.closed.Load() {
		_, _ = l.client.Write(msg)
	}
}

// Down forgets a server's connection that went away, and fails the calls
// still waiting on it ([proxy.Tap]).
func (l *Lane) Down(link *proxy.Link, cause error) {
	l.mu.Lock()
	if l.links[link.Server()] == link {
		delete(l.links, link.Server())
	}
	var failed []*call
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
		l.done(c)
	}
}
