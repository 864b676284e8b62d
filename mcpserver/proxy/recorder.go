package proxy

import (
	"context"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Recorder is the SDK path's connection to a stdio server whose output
// another reader frames and checks a line at a time (the fast lane's:
// package lane hands the SDK's session only lines go-sdk can read). It
// treats the calls of [Server.Handler] as the SDK path's own connection
// to a stdio server does, so that a call the lane leaves to the SDK is
// answered as one with the lane off: each call's answer is recorded (its
// structuredContent and _meta kept as written, see [SetAside]; a server's
// error told from go-sdk's; one the reader could not read failing with
// [AnswerUnreadable], see [Recorder.Unreadable]), and a server's progress of
// such a call goes to the client from the reader, in the order the server
// wrote it.
type Recorder struct {
	conn mcp.Connection

	mu     sync.Mutex
	calls  map[jsonrpc.ID]*callRecord
	routes *ProgressRoutes[progressTarget]
	// unreadable are the error answers the reader hands the session in
	// place of answers it could not read (see Broken), by their message:
	// why each could not be read.
	unreadable map[string]string
	seq        int
}

// RecordCalls returns conn as a [Recorder].
func RecordCalls(conn mcp.Connection) *Recorder {
	return &Recorder{conn: conn, calls: map[jsonrpc.ID]*callRecord{}, unreadable: map[string]string{}}
}

func (r *Recorder) SessionID() string { return r.conn.SessionID() }

func (r *Recorder) Close() error { return r.conn.Close() }

// Write sends msg to the server; a tools/call of [Server.Handler] (its ctx
// carries a [callRecord]) is noted, to record its answer.
func (r *Recorder) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() && req.Method == "tools/call" {
		if rec, ok := ctx.Value(callRecordKey{}).(*callRecord); ok {
			r.mu.Lock()
			r.calls[req.ID] = rec
			if rec.routes != nil {
				r.routes = rec.routes
			}
			r.mu.Unlock()
			rec.setForget(func() {
				r.mu.Lock()
				delete(r.calls, req.ID)
				r.mu.Unlock()
			})
		}
	}
	return r.conn.Write(ctx, msg)
}

// Read returns the server's next message, with the answers of recorded
// calls recorded; progress of a call of [Server.Handler] is forwarded here
// and not returned.
func (r *Recorder) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := r.conn.Read(ctx)
		if err != nil {
			return nil, err
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			r.mu.Lock()
			rec := r.calls[m.ID]
			delete(r.calls, m.ID)
			why, unreadable := "", false
			if we, ok := m.Error.(*jsonrpc.Error); ok {
				if why, unreadable = r.unreadable[we.Message]; unreadable {
					delete(r.unreadable, we.Message)
				}
			}
			r.mu.Unlock()
			switch {
			case rec == nil:
			case unreadable:
				rec.broken(why)
			default:
				rec.answeredWith(m)
			}
		case *jsonrpc.Request:
			r.mu.Lock()
			routes := r.routes
			r.mu.Unlock()
			if routes != nil && forwardProgress(routes, m) {
				continue
			}
		}
		return msg, nil
	}
}

// Unreadable returns the line the reader hands the SDK's session in place
// of the server's answer to the call with id (upstream) that it could not
// read, and why (a line that is not JSON, one over the size limit): an
// error answer, which, read in its turn among the server's other lines,
// fails the call with [AnswerUnreadable] as on the SDK path, rather than
// as the server's own error. (An answer to that id read before it, if the
// server wrote two, answers the call; this one is then dropped.)
func (r *Recorder) Unreadable(id jsonrpc.ID, why string) []byte {
	r.mu.Lock()
	r.seq++
	tag := fmt.Sprintf("agentctl: answer %d could not be read", r.seq)
	r.unreadable[tag] = why
	r.mu.Unlock()
	b, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: tag}})
	return append(b, '\n')
}

// forwardProgress sends a server's progress of a call of [Server.Handler]
// to its client (routes: where each of agentctl's tokens goes), from the
// connection's reader, in the order the server wrote it: handed to go-sdk's
// client session instead, it would go to a goroutine of its own, and the
// call's answer, read after it, could end the call (and its route) first,
// and the progress be lost. false when req is no progress of such a call.
func forwardProgress(routes *ProgressRoutes[progressTarget], req *jsonrpc.Request) bool {
	if req.IsCall() || req.Method != "notifications/progress" {
		return false
	}
	p, ok := DecodeProgress(req.Params)
	if !ok {
		return false
	}
	tok, _ := p.ProgressToken.(string)
	to, ok := routes.Lookup(tok)
	if !ok {
		return false
	}
	p.ProgressToken = to.token
	_ = to.session.NotifyProgress(context.Background(), p)
	return true
}
