// Package guard is the input guard of agentctl's stdio endpoint: the only
// code of agentctl's own in front of the MCP SDK's server session, with or
// without the fast lane.
//
// A [Guard] frames the client's input into lines and bounds their size; it
// offers each line to a taker (the fast lane) and hands the rest to the
// SDK through [Guard.Transport]. Everything the endpoint writes to the
// client goes through the Guard too, one message per Write.
//
// The shortest use:
//
//	g := guard.New(os.Stdout, guard.Options{})
//	go g.Serve(ctx, os.Stdin, nil)
//	err := server.Run(ctx, g.Transport())
//	g.Close()
package guard

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a [Guard].
type Options struct {
	// MaxLine bounds one message of the client's (0: [MaxLine], go-sdk's).
	MaxLine int
}

// Guard stands between a stdio client and the endpoint. See the package
// documentation.
type Guard struct {
	opts Options
	out  io.Writer
	// sdkR and sdkW carry the lines nobody took to the SDK.
	sdkR *io.PipeReader
	sdkW *io.PipeWriter

	mu     sync.Mutex // one message at a time to out
	closed bool
}

// New returns a guard that writes to the client's output out.
func New(out io.Writer, opts Options) *Guard {
	g := &Guard{opts: opts, out: out}
	g.sdkR, g.sdkW = io.Pipe()
	return g
}

// ErrClosed is a write after [Guard.Close].
var ErrClosed = errors.New("the connection is closed")

// Write writes one whole message to the client; concurrent writers'
// messages never interleave. It fails once the guard is closed: nothing
// reaches the client's output after the endpoint has returned.
func (g *Guard) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return 0, ErrClosed
	}
	return g.out.Write(p)
}

// Transport is the SDK's side of the connection: it reads the lines no
// taker took, and writes through [Guard.Write]. Closing it closes neither
// the client's input nor its output.
func (g *Guard) Transport() mcp.Transport {
	return &mcp.IOTransport{Reader: g.sdkR, Writer: nopClose{g}}
}

// Serve reads the client's input until it ends: each line goes to take
// first (nil takes nothing), and to the SDK if take refuses it. Then it
// ends the SDK's input. It returns why the input ended: nil at its end, or
// a line over the bound.
func (g *Guard) Serve(_ context.Context, in io.Reader, take func(line []byte) bool) error {
	return Pump(in, g.opts.MaxLine, g.sdkW, take)
}

// Close makes further writes fail and ends the SDK's input if Serve has
// not.
func (g *Guard) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.sdkW.CloseWithError(io.EOF)
}

// nopClose is the client's output as the SDK holds it: closing the
// session must not close stdout under the lane.
type nopClose struct{ io.Writer }

func (nopClose) Close() error { return nil }
