package guard

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentctl/agentctl/mcpserver/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultDrain bounds how long a Guard waits, once the client's input has
// ended, for the answers to the requests it has read.
const DefaultDrain = 10 * time.Second

// Options configure a [Guard].
type Options struct {
	// MaxLine bounds one message of the client's (0: [wire.MaxLine], go-sdk's).
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
	// sdkR and sdkW carry the lines nobody took to the SDK; toSDK is the
	// reused buffer of the line being handed over, msg the line read (only
	// Serve's goroutine uses them).
	sdkR  *io.PipeReader
	sdkW  *io.PipeWriter
	toSDK []byte
	msg   wire.Message

	// inputEnded: Serve has read the client's input to its end.
	inputEnded atomic.Bool

	// wmu: one message at a time to out, taken before mu. The taker's
	// answers are written holding only wmu, so that reading the client's
	// next request (which takes mu) never waits for the write of the
	// answer before it, whose thread the system may set aside as the
	// write wakes the client.
	wmu    sync.Mutex
	mu     sync.Mutex // the fields below
	closed bool
	// seq numbers the requests read; a request handed to the SDK goes
	// under its number (see ids.go).
	seq uint64
	// sdk are the requests handed to the SDK and not yet answered, by the
	// guard's id; tokens counts those whose progress token is the guard's.
	sdk    map[uint64]sdkRequest
	tokens int
	// lane are the requests the taker (the fast lane) took and has not
	// answered, by key ([wire.AppendIDKey]); offer is the request being offered
	// to it (it may answer before it says it takes it).
	lane  map[string]laneRequest
	offer offered
	// cancelled counts the taker's requests the client cancelled while
	// they were pending, whose answers are not yet written, by key: such
	// an answer is dropped (see [Guard.Write]).
	cancelled map[string]int
	// waiting counts the requests the end of the input waits for; idle,
	// while Serve drains, is closed once it is 0.
	waiting int
	idle    chan struct{}
	// batches: the protocol version the answer to initialize gave has
	// batches (those before 2025-06-18).
	batches bool
	// wbuf is the reused buffer of an answer whose id is put back.
	wbuf []byte
}

// laneRequest is what the guard keeps of the taker's requests with one key.
type laneRequest struct {
	seq uint64 // the first's
	n   int    // how many are unanswered
	id  string // the first's id as written
}

// offered is the request being offered to the taker.
type offered struct {
	active, answered bool
	seq              uint64
	key, id          []byte // reused buffers
}

// New returns a guard that writes to the client's output out.
func New(out io.Writer, opts Options) *Guard {
	if opts.Drain <= 0 {
		opts.Drain = DefaultDrain
	}
	g := &Guard{opts: opts, out: out, sdk: map[uint64]sdkRequest{}, lane: map[string]laneRequest{}, cancelled: map[string]int{}}
	g.sdkR, g.sdkW = io.Pipe()
	return g
}

// ErrClosed is a write after [Guard.Close].
var ErrClosed = errors.New("the connection is closed")

// Write writes one whole message of the taker's (the fast lane's) to the
// client; concurrent writers' messages never interleave. An answer settles
// its request; the answer to a request the client cancelled is not written
// at all (the MCP specification: the receiver of a cancellation should not
// answer the cancelled request). Write fails once the guard is closed:
// nothing reaches the client's output after the endpoint has returned. The
// SDK's messages go through [Guard.Transport], which puts the client's ids
// back.
func (g *Guard) Write(p []byte) (int, error) {
	g.wmu.Lock()
	defer g.wmu.Unlock()
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return 0, ErrClosed
	}
	var m wire.Message
	m.Envelope(p)
	if g.waiting+len(g.cancelled) > 0 && m.Answer && m.Method == nil {
		// Answered, even if the client can no longer read it: there is
		// nothing more to wait for.
		var buf [32]byte
		if key, ok := wire.AppendIDKey(buf[:0], m.ID); ok && g.laneAnsweredLocked(key) {
			g.mu.Unlock()
			return len(p), nil
		}
	}
	g.mu.Unlock()
	n, err := g.out.Write(withoutCodeZero(&m))
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
// Anything else passes unchanged. It reads only the envelope m (of
// [wire.Message.Envelope]), never a result's value.
func withoutCodeZero(m *wire.Message) []byte {
	e := wire.NewObject(m.Error)
	for e.Next() {
		if !wire.KeyIs(e.Key(), "code") {
			continue
		}
		if code := e.Value(); string(code) == "0" {
			return replaceAt(make([]byte, 0, len(m.Line)+6), m.Line, code, strconv.Itoa(jsonrpc.CodeInvalidRequest))
		}
		break
	}
	return m.Line
}

// Transport is the SDK's side of the connection: it reads the lines no
// taker took, with the guard's ids, and writes through the guard, which
// puts the client's ids and progress tokens back (see ids.go) and settles
// answers as [Guard.Write] does. Closing it closes neither the client's
// input nor its output.
func (g *Guard) Transport() mcp.Transport {
	return &mcp.IOTransport{Reader: g.sdkR, Writer: sdkSide{g}}
}

// Serve reads the client's input until it ends. A line that is not JSON
// is answered here with a JSON-RPC parse error (-32700), one that is JSON
// but no message go-sdk can read with an Invalid Request error (-32600; see
// the package documentation), and reading goes on; every other line goes,
// read once, to take first (nil takes nothing), and to the SDK if take
// refuses it, with the guard's ids (see ids.go). Then Serve waits for the answers to
// the requests read (see the package documentation), or until ctx is done,
// and ends the SDK's input. It returns why the input ended: nil at its end, or a line
// over the bound.
func (g *Guard) Serve(ctx context.Context, in io.Reader, take Taker) error {
	// The id of a line over the bound is read as it is skipped, so that
	// the request it was fails by its id: a client waits for that id (a
	// concept_write of 20 MiB waited until the client's own timeout).
	lines := wire.NewLines(in, g.opts.MaxLine)
	var ids wire.IDReader
	lines.Skipped = func(p []byte) { ids.Feed(p) }
	err, sdkGone := pump(lines, g.sdkW, func(line []byte) []byte { return g.route(line, take) },
		func(tl *wire.TooLongError) {
			var id []byte
			if v, ok := ids.ID(); ok {
				id, _ = json.Marshal(v.Raw())
			}
			ids = wire.IDReader{}
			g.reply(id, jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: %v bytes; it was skipped, send a smaller message", tl))
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

// Taker is offered each message of the client's that the guard does not
// answer itself, read once (the fast lane's FromClient); true: it took it.
type Taker func(m *wire.Message) bool

// InputEnded reports whether Serve has read the client's input to its end
// (or to a line over the bound): from then on, the SDK's input ends too.
func (g *Guard) InputEnded() bool { return g.inputEnded.Load() }

// route reads one line of the client's and returns what of it goes to the
// SDK (nil: nothing): not a line that is not JSON (answered here), nor one
// take takes; a request with the guard's id, a cancellation once for each
// request handed to the SDK that it names (none if it names none). The
// requests, and their cancellations, are noted before take sees them: an
// answer may follow at once.
func (g *Guard) route(line []byte, take Taker) []byte {
	if wire.TooDeep(line) {
		g.reply(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: nested deeper than %d levels", wire.MaxDepth))
		return nil
	}
	if !wire.ValidShallow(line) { // TooDeep said false just above
		g.parseError(line)
		return nil
	}
	if isBatch(line) {
		if why := g.checkBatch(line); why != "" {
			g.reply(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: "+why)
			return nil
		}
		return g.batchToSDK(line) // never taken: the lane leaves arrays to the SDK
	}
	m := &g.msg
	m.Parse(line)
	if id, why := m.Check(); why != "" {
		g.reply(id, jsonrpc.CodeInvalidRequest, "Invalid Request: "+why)
		return nil
	}
	if cap(g.toSDK) > 1<<20 {
		g.toSDK = nil // a large request's copy is not kept
	}
	switch m.Kind {
	case wire.MisplacedID:
		// go-sdk answers this, in these words, but acts on it too (it
		// cancels the request named), and so would the lane: an invalid
		// request is answered and nothing else, on both paths.
		g.reply(m.ID, jsonrpc.CodeInvalidRequest, `invalid request: unexpected id for "notifications/cancelled"`)
		return nil
	case wire.Request:
		if take != nil && g.offerToTaker(m, take) {
			return nil
		}
		g.toSDK = g.requestToSDK(g.toSDK[:0], m)
		return g.toSDK
	case wire.Cancellation:
		g.cancelTakers(m.Key)
		if take != nil && take(m) {
			// The taker (the lane) cancelled requests of its own, which it
			// then never answers: there is no answer to drop.
			g.mu.Lock()
			delete(g.cancelled, string(m.Key))
			g.mu.Unlock()
		}
		g.toSDK = g.cancelToSDK(g.toSDK[:0], m)
		if len(g.toSDK) == 0 {
			return nil // a cancellation the SDK has nothing to do with
		}
		return g.toSDK
	}
	if take != nil && take(m) {
		return nil
	}
	return line
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
		_, ok := g.lane[string(key)]
		return ok || len(g.sdkWithKeyLocked(key)) > 0
	})
}

// reply writes an error of the guard's own to the client, id null if id is
// nil. It is no answer to a pending request of the same id (a client may
// send a broken request with an id in use), so it settles nothing.
func (g *Guard) reply(id []byte, code int, msg string) {
	if id == nil {
		id = []byte("null")
	}
	line := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`+"\n", id, code, wire.AppendString(nil, msg))
	g.wmu.Lock()
	defer g.wmu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		_, _ = g.out.Write(line)
	}
}

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
	g.reply(nil, jsonrpc.CodeParseError, msg)
}

// drain waits until nothing is pending (true), the bound passes or ctx is
// done (false).
func (g *Guard) drain(ctx context.Context) bool {
	g.mu.Lock()
	if g.closed || g.waiting <= 0 {
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

// finish answers every pending request with an error saying why, in the
// order they came, each with the client's id as written, and closes the
// guard.
func (g *Guard) finish(why string) {
	g.wmu.Lock() // after the write under way: its request is answered
	defer g.wmu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return
	}
	g.closed = true
	type unanswered struct {
		seq uint64
		id  string
	}
	var left []unanswered
	for seq, r := range g.sdk {
		if r.wait && !r.cancelled {
			left = append(left, unanswered{seq, r.id})
		}
	}
	for _, e := range g.lane {
		for range e.n {
			left = append(left, unanswered{e.seq, e.id})
		}
	}
	if o := &g.offer; o.active && !o.answered {
		left = append(left, unanswered{o.seq, string(o.id)})
	}
	slices.SortStableFunc(left, func(a, b unanswered) int { return cmp.Compare(a.seq, b.seq) })
	msg := wire.AppendString(nil, "server is closing: "+why)
	for _, u := range left {
		line := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`+"\n", u.id, wire.CodeServerClosing, msg)
		if _, err := g.out.Write(line); err != nil {
			break
		}
	}
	clear(g.sdk)
	clear(g.lane)
	clear(g.cancelled)
	g.waiting, g.tokens = 0, 0
	if g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}
