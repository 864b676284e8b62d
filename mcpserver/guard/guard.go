package guard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

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
	// appendIDKey), when each came.
	pending map[string]uint64
	seq     uint64
	// idle, while Serve drains, is closed once nothing is pending.
	idle chan struct{}
}

// New returns a guard that writes to the client's output out.
func New(out io.Writer, opts Options) *Guard {
	if opts.Drain <= 0 {
		opts.Drain = DefaultDrain
	}
	g := &Guard{opts: opts, out: out, pending: map[string]uint64{}}
	g.sdkR, g.sdkW = io.Pipe()
	return g
}

// ErrClosed is a write after [Guard.Close].
var ErrClosed = errors.New("the connection is closed")

// Write writes one whole message to the client; concurrent writers'
// messages never interleave. An answer settles its request. Write fails
// once the guard is closed: nothing reaches the client's output after the
// endpoint has returned.
func (g *Guard) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return 0, ErrClosed
	}
	n, err := g.out.Write(p)
	if len(g.pending) > 0 {
		// Answered, even if the client can no longer read it: there is
		// nothing more to wait for.
		eachMessage(p, g.answered)
	}
	return n, err
}

// Transport is the SDK's side of the connection: it reads the lines no
// taker took, and writes through [Guard.Write]. Closing it closes neither
// the client's input nor its output.
func (g *Guard) Transport() mcp.Transport {
	return &mcp.IOTransport{Reader: g.sdkR, Writer: nopClose{g}}
}

// Serve reads the client's input until it ends: each line goes to take
// first (nil takes nothing), and to the SDK if take refuses it. Then it
// waits for the answers to the requests read (see the package
// documentation), or until ctx is done, and ends the SDK's input. It
// returns why the input ended: nil at its end, or a line over the bound.
func (g *Guard) Serve(ctx context.Context, in io.Reader, take func(line []byte) bool) error {
	err, sdkGone := pump(NewLines(in, g.opts.MaxLine), g.sdkW, take, g.read)
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

// read notes the client's requests in a line, and their cancellations.
func (g *Guard) read(line []byte) {
	eachMessage(line, g.readOne)
}

func (g *Guard) readOne(msg []byte) {
	var buf [32]byte
	key, k := readRequest(buf[:0], msg)
	if k == otherMessage {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case k == cancellation:
		g.settleLocked(key) // it gets no answer (the lane sends none)
	case !g.closed:
		g.seq++
		g.pending[string(key)] = g.seq
	}
}

// answered settles the requests a message of the endpoint's answers.
func (g *Guard) answered(msg []byte) {
	var buf [32]byte
	if key, ok := readAnswer(buf[:0], msg); ok {
		g.settleLocked(key)
	}
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
	if g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// nopClose is the client's output as the SDK holds it: closing the
// session must not close stdout under the lane.
type nopClose struct{ io.Writer }

func (nopClose) Close() error { return nil }
