package guard

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentctl/agentctl/mcpserver/internal/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultDrain bounds how long a Guard waits, once the client's input has
// ended, for the answers to the requests it has read.
const DefaultDrain = 10 * time.Second

// Options configure a [Guard].
type Options struct {
	// MaxLine bounds one message of the client's (0: [MaxLine], go-sdk's).
	MaxLine int
	// Drain bounds how long [Guard.Serve] waits, once the input has ended,
	// for the answers to the requests it has read (0: [DefaultDrain]).
	// Those still unanswered then get a JSON-RPC error.
	Drain time.Duration
}

// Guard stands between a stdio client and the endpoint. See the package
// documentation.
type Guard struct {
	opts Options
	out  io.Writer
	// sdkR and sdkW carry the lines nobody took to the SDK.
	sdkR *io.PipeReader
	sdkW *io.PipeWriter

	// inputEnded: Serve has read the client's input to its end.
	inputEnded atomic.Bool

	mu     sync.Mutex // one message at a time to out; the fields below
	closed bool
	// pending are the requests read and not yet answered: by id (see
	// [AppendIDKey]), when each came.
	pending map[string]uint64
	seq     uint64
	// cancelled are the requests the client cancelled while they were
	// pending, whose answers are not yet written: the answer is dropped
	// (see [Guard.Write]).
	cancelled map[string]struct{}
	// idle, while Serve drains, is closed once nothing is pending.
	idle chan struct{}
	// initKey is the key of the client's initialize request while it is
	// unanswered; batches, whether the protocol version its answer gave
	// has batches (those before 2025-06-18).
	initKey string
	batches bool
}

// New returns a guard that writes to the client's output out.
func New(out io.Writer, opts Options) *Guard {
	if opts.Drain <= 0 {
		opts.Drain = DefaultDrain
	}
	g := &Guard{opts: opts, out: out, pending: map[string]uint64{}, cancelled: map[string]struct{}{}}
	g.sdkR, g.sdkW = io.Pipe()
	return g
}

// ErrClosed is a write after [Guard.Close].
var ErrClosed = errors.New("the connection is closed")

// Write writes one whole message to the client; concurrent writers'
// messages never interleave. An answer settles its request; the answer to a
// request the client cancelled is not written at all (the MCP specification:
// the receiver of a cancellation should not answer the cancelled request),
// whoever wrote it. Write fails once the guard is closed: nothing reaches
// the client's output after the endpoint has returned.
func (g *Guard) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return 0, ErrClosed
	}
	msg := p
	if len(g.pending)+len(g.cancelled) > 0 {
		// Answered, even if the client can no longer read it: there is
		// nothing more to wait for.
		if msg = g.answeredLocked(p); msg == nil {
			return len(p), nil
		}
	}
	msg = withoutCodeZero(msg)
	n, err := g.out.Write(msg)
	if err == nil {
		n = len(p)
	}
	return n, err
}

// withoutCodeZero gives an error answer with code 0, which JSON-RPC does
// not define, the code of an Invalid Request (-32600). go-sdk v1.8.0 sends
// such errors for a request that is wrong at that point of the session
// (mcp/shared.go, internal/jsonrpc2/wire.go: "duplicate \"initialize\"
// received", "method ... is invalid during session initialization").
// Anything else passes unchanged. It reads only the envelope: the top-level
// members up to "result" or "error", never a result's value.
func withoutCodeZero(msg []byte) []byte {
	o := jsonscan.NewObject(msg)
	for o.Next() {
		switch {
		case jsonscan.KeyIs(o.Key(), "result"):
			return msg
		case jsonscan.KeyIs(o.Key(), "error"):
			e := jsonscan.NewObject(o.Value())
			for e.Next() {
				if !jsonscan.KeyIs(e.Key(), "code") {
					continue
				}
				code := e.Value()
				if string(code) != "0" {
					return msg
				}
				at := cap(msg) - cap(code) // code is a sub-slice of msg
				out := make([]byte, 0, len(msg)+6)
				out = append(out, msg[:at]...)
				out = append(out, "-32600"...)
				return append(out, msg[at+len(code):]...)
			}
			return msg
		}
	}
	return msg
}

// Transport is the SDK's side of the connection: it reads the lines no
// taker took, and writes through [Guard.Write]. Closing it closes neither
// the client's input nor its output.
func (g *Guard) Transport() mcp.Transport {
	return &mcp.IOTransport{Reader: g.sdkR, Writer: nopClose{g}}
}

// Serve reads the client's input until it ends. A line that is not JSON
// is answered here with a JSON-RPC parse error (-32700), one that is JSON
// but no message go-sdk can read with an Invalid Request error (-32600; see
// the package documentation), and reading goes on; every other line goes to take first (nil takes nothing), and to the
// SDK if take refuses it. Then Serve waits for the answers to the requests
// read (see the package documentation), or until ctx is done, and ends the
// SDK's input. It returns why the input ended: nil at its end, or a line
// over the bound.
func (g *Guard) Serve(ctx context.Context, in io.Reader, take func(line []byte) bool) error {
	err, sdkGone := pump(NewLines(in, g.opts.MaxLine), g.sdkW, func(line []byte) bool { return g.route(line, take) },
		func(tl *TooLongError) {
			g.reply(nil, codeInvalidRequest, fmt.Sprintf("Invalid Request: %v bytes; it was skipped, send a smaller message", tl))
		})
	if sdkGone {
		return err
	}
	g.inputEnded.Store(true)
	if !g.drain(ctx) {
		g.finish(fmt.Sprintf("no answer within %s after the client's input ended", g.opts.Drain))
	}
	g.sdkW.CloseWithError(err)
	return err
}

// InputEnded reports whether Serve has read the client's input to its end
// (or to a line over the bound): from then on, the SDK's input ends too.
func (g *Guard) InputEnded() bool { return g.inputEnded.Load() }

// route reads one line of the client's and says whether it goes to the
// SDK: not a line that is not JSON (answered here), nor one take takes.
// The requests in it, and their cancellations, are noted first: an answer
// may follow at once.
func (g *Guard) route(line []byte, take func([]byte) bool) bool {
	if tooDeep(line) {
		g.reply(nil, codeInvalidRequest, fmt.Sprintf("Invalid Request: nested deeper than %d levels", maxDepth))
		return false
	}
	if !json.Valid(line) {
		g.parseError(line)
		return false
	}
	var buf [32]byte
	key, k := buf[:0], otherMessage
	if isBatch(line) {
		if why := g.checkBatch(line); why != "" {
			g.reply(nil, codeInvalidRequest, "Invalid Request: "+why)
			return false
		}
		eachMessage(line, g.readOne) // never taken: the lane leaves arrays to the SDK
	} else {
		if id, why := checkMessage(line); why != "" {
			g.reply(id, codeInvalidRequest, "Invalid Request: "+why)
			return false
		}
		key, k = readRequest(buf[:0], line)
		g.note(key, k)
		if k == request && isInitialize(line) {
			g.mu.Lock()
			g.initKey = string(key)
			g.mu.Unlock()
		}
	}
	if take == nil || !take(line) {
		return true
	}
	if k == cancellation {
		// The taker (the lane) cancelled a request of its own, which it
		// then never answers: there is no answer to drop.
		g.mu.Lock()
		delete(g.cancelled, string(key))
		g.mu.Unlock()
	}
	return false
}

// checkBatch says why a batch is refused ("" if it goes to the SDK): the
// session's protocol version has no batches (none before the session is
// initialized either), or go-sdk would end the connection on it.
func (g *Guard) checkBatch(line []byte) string {
	g.mu.Lock()
	batches := g.batches
	g.mu.Unlock()
	if !batches {
		return "batches are not supported (MCP 2025-06-18 and later)"
	}
	return checkBatch(line, func(key []byte) bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		_, ok := g.pending[string(key)]
		return ok
	})
}

// reply writes an error of the guard's own to the client, id null if id is
// nil. It is no answer to a pending request of the same id (a client may
// send a broken request with an id in use), so it settles nothing.
func (g *Guard) reply(id []byte, code int, msg string) {
	if id == nil {
		id = []byte("null")
	}
	line := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`+"\n", id, code, jsonString(msg))
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		_, _ = g.out.Write(line)
	}
}

// codeParseError is JSON-RPC 2.0's code for a message that is not JSON.
const codeParseError = -32700

// parseError answers a line that is not JSON, as JSON-RPC 2.0 says: with
// id null, since no id can be read from it. go-sdk would read its input as
// one stream of JSON values, so that the broken line ran into the next
// one, and end the connection.
func (g *Guard) parseError(line []byte) {
	msg := "Parse error"
	// The syntax error, without decoding anything: Unmarshal checks the
	// whole input first.
	var syntax *json.SyntaxError
	err := json.Unmarshal(line, &struct{}{})
	switch {
	case errors.As(err, &syntax) && syntax.Offset < int64(len(bytes.TrimRight(line, "\r\n"))):
		msg = fmt.Sprintf("Parse error: %v (at byte %d of the line)", err, syntax.Offset)
	case err != nil: // the line ends before its value does
		msg += ": " + err.Error()
	}
	g.reply(nil, codeParseError, msg)
}

// readOne notes one message of the client's.
func (g *Guard) readOne(msg []byte) {
	var buf [32]byte
	g.note(readRequest(buf[:0], msg))
}

// note notes a request, or the cancellation of a pending one.
func (g *Guard) note(key []byte, k kind) {
	if k == otherMessage {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case k == cancellation:
		if _, ok := g.pending[string(key)]; ok {
			g.settleLocked(key) // nothing to wait for
			g.cancelled[string(key)] = struct{}{}
		}
	case !g.closed:
		g.seq++
		g.pending[string(key)] = g.seq
	}
}

// answeredLocked settles the requests an endpoint's message p answers, and
// returns what of p goes to the client: nil for the answer to a request
// the client cancelled, a batch of answers without those.
func (g *Guard) answeredLocked(p []byte) []byte {
	var buf [32]byte
	if !isBatch(p) {
		key, ok := readAnswer(buf[:0], p)
		if ok && g.initKey != "" && string(key) == g.initKey {
			g.initKey = ""
			v := negotiatedVersion(p)
			g.batches = v != "" && v < "2025-06-18"
		}
		if ok && g.answerLocked(key) {
			return nil
		}
		return p
	}
	// go-sdk answers a batch with one (versions before 2025-06-18).
	var batch []json.RawMessage
	if json.Unmarshal(p, &batch) != nil {
		return p
	}
	kept := batch[:0]
	for _, m := range batch {
		if key, ok := readAnswer(buf[:0], m); ok && g.answerLocked(key) {
			continue
		}
		kept = append(kept, m)
	}
	if len(kept) == len(batch) {
		return p
	}
	if len(kept) == 0 {
		return nil
	}
	out, err := json.Marshal(kept)
	if err != nil {
		return p
	}
	return append(out, '\n')
}

// answerLocked settles the request whose key is key; true if the client
// cancelled it, so that its answer is dropped. (A client that used the id
// again after cancelling it, which MCP forbids, may lose the second
// request's answer instead of the first's.)
func (g *Guard) answerLocked(key []byte) bool {
	if _, ok := g.cancelled[string(key)]; ok {
		delete(g.cancelled, string(key))
		return true
	}
	g.settleLocked(key)
	return false
}

func (g *Guard) settleLocked(key []byte) {
	delete(g.pending, string(key))
	if len(g.pending) == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// drain waits until nothing is pending (true), the bound passes or ctx is
// done (false).
func (g *Guard) drain(ctx context.Context) bool {
	g.mu.Lock()
	if g.closed || len(g.pending) == 0 {
		g.mu.Unlock()
		return true
	}
	idle := make(chan struct{})
	g.idle = idle
	g.mu.Unlock()
	t := time.NewTimer(g.opts.Drain)
	defer t.Stop()
	select {
	case <-idle:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// Close answers every request still unanswered with an error, makes further
// writes fail, and ends the SDK's input if Serve has not.
func (g *Guard) Close() {
	g.finish("agentctl stopped before answering")
	g.sdkW.CloseWithError(io.EOF)
}

// codeServerClosing is go-sdk's code for a call that a closing server will
// not answer (go-sdk v1.8.0 internal/jsonrpc2/wire.go, ErrServerClosing).
const codeServerClosing = -32004

// finish answers every pending request with an error saying why, in the
// order they came (with the id as go-sdk writes it in its answers), and
// closes the guard.
func (g *Guard) finish(why string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return
	}
	g.closed = true
	left := slices.SortedFunc(maps.Keys(g.pending), func(a, b string) int { return cmp.Compare(g.pending[a], g.pending[b]) })
	msg := jsonString("server is closing: " + why)
	for _, key := range left {
		line := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`+"\n", appendID(nil, key), codeServerClosing, msg)
		if _, err := g.out.Write(line); err != nil {
			break
		}
	}
	clear(g.pending)
	clear(g.cancelled)
	if g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// nopClose is the client's output as the SDK holds it: closing the
// session must not close stdout under the lane.
type nopClose struct{ io.Writer }

func (nopClose) Close() error { return nil }
