package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/mcpserver/guard"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// commandTransport runs a stdio server for the SDK path (the fast lane
// off). It is go-sdk v1.8.0's [mcp.CommandTransport] (mcp/cmd.go) but for
// how the server's output is read: a line at a time here (with
// [guard.Lines]), so that one bad line costs at most the call it answers,
// where go-sdk's stream decoder ends the connection and fails every call
// in flight, or waits for the server's next output to finish a truncated
// line (see [stdioConn.Read]), and for how it is written: with a deadline,
// so that a server that stops reading its input fails a call and is
// restarted, where go-sdk's write blocks for ever (see [stdioConn.Write]).
type commandTransport struct {
	server *Server
	cmd    *exec.Cmd
}

// Connect starts the server, as [mcp.CommandTransport.Connect] does, but
// with the server's input a pipe of its own (an *os.File), whose writes
// can have a deadline (see [stdioConn.Write]).
func (t *commandTransport) Connect(context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
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
	c := &stdioConn{server: t.server, cmd: t.cmd, stdin: stdin, stdout: stdout, calls: map[jsonrpc.ID]*callRecord{},
		writeTimeout: t.server.writeTimeout()}
	c.lines = guard.NewLines(stdout, t.server.pool.opts.MaxLine)
	c.lines.Skipped = c.skipped.feed
	return c, nil
}

// stdioConn is the SDK's connection to a stdio server.
type stdioConn struct {
	server *Server
	cmd    *exec.Cmd
	stdin  *os.File
	stdout io.Closer
	lines  *guard.Lines
	// skipped reads the id of a line over the bound as it is skipped.
	skipped idScanner
	// lineNo counts the server's lines, for reports.
	lineNo int

	// writeTimeout bounds each write ([Server.writeTimeout]); notReading,
	// once set, is why the connection's writes fail: one did not end in
	// time, so the server is being stopped. Both under writeMu.
	writeTimeout time.Duration
	writeMu      sync.Mutex
	notReading   error
	// stopped is why Read ends once the connection was closed for not
	// reading: what the session's end reports.
	stopped atomic.Pointer[stoppedError]

	mu sync.Mutex
	// calls are the tools/calls of [Server.Handler] awaiting an answer, by
	// the id go-sdk gave them.
	calls map[jsonrpc.ID]*callRecord

	closeOnce sync.Once
	closeErr  error
}

func (c *stdioConn) SessionID() string { return "" }

// Write sends msg to the server, a line, within writeTimeout (see
// [stdioConn.stuck]; ctx is not heeded: a write cut short would leave
// part of a line in the pipe). A tools/call of [Server.Handler]
// (its ctx carries a [callRecord]) is noted, so that its answer can be
// recorded as the server wrote it.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() && req.Method == "tools/call" {
		if rec, ok := ctx.Value(callRecordKey{}).(*callRecord); ok {
			c.mu.Lock()
			c.calls[req.ID] = rec
			c.mu.Unlock()
			rec.setForget(func() {
				c.mu.Lock()
				delete(c.calls, req.ID)
				c.mu.Unlock()
			})
		}
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.notReading != nil {
		return c.notReading
	}
	// Where the system cannot set a deadline on a pipe, the write is not
	// bounded, as go-sdk's is not.
	_ = c.stdin.SetWriteDeadline(time.Now().Add(c.writeTimeout))
	_, err = c.stdin.Write(append(b, '\n'))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return c.stuck()
	}
	return err
}

// stuck ends a connection whose server did not take a message within
// writeTimeout: it is not reading its input. Part of the message may be in
// the pipe, so nothing more can follow it: the connection is closed in the
// background (the server stopped as [stdioConn.Close] stops it), its
// session ends with a [stoppedError] and the server's run loop starts it
// again, as after a crash. The write and every later one fail with a
// [notReadingError]. The caller holds writeMu.
func (c *stdioConn) stuck() error {
	nr := &notReadingError{waited: c.writeTimeout}
	c.notReading = nr
	c.stopped.Store(&stoppedError{nr})
	c.server.log.Warn("MCP server is not reading its input; stopping it, to start it again", "waited", c.writeTimeout)
	go c.Close()
	return nr
}

// notReadingError fails a write that a stdio server did not take in time
// ([stdioConn.stuck]). Its text is the fast lane's for a server whose
// queue is full. It wraps go-sdk's "rejected by transport" code (go-sdk
// v1.8.0 internal/jsonrpc2/conn.go, func write): go-sdk then fails the
// call alone and leaves the connection to its transport, which is closing
// it, so that the calls that follow get this error too rather than
// go-sdk's "server is closing".
type notReadingError struct{ waited time.Duration }

func (e *notReadingError) Error() string {
	return fmt.Sprintf("it is not reading its input (a message waited %s for it)", e.waited)
}

func (e *notReadingError) Unwrap() error { return errRejected }

// errRejected is go-sdk's ErrRejected (internal/jsonrpc2/wire.go, code
// -32005, compared by code), which its internal package keeps from us.
var errRejected = &jsonrpc.Error{Code: -32005, Message: "rejected by transport"}

// stoppedError ends the session of a server stopped for not reading its
// input: the server's status, and what the calls in flight then fail
// with. It does not wrap the [notReadingError]: those calls reached the
// server.
type stoppedError struct{ cause *notReadingError }

func (e *stoppedError) Error() string { return "agentctl stopped it: " + e.cause.Error() }

// Read returns the server's next message. A line that is not a JSON-RPC
// message, or that is over the size limit, is reported (see
// [Server.reportOutput]) and skipped, and reading goes on; if it answers
// a tools/call of [Server.Handler] whose id can be read from it, that call
// alone fails (see [callRecord]). Only the end of the output (or a read
// error) ends the connection.
func (c *stdioConn) Read(context.Context) (jsonrpc.Message, error) {
	for {
		c.skipped = idScanner{}
		line, err := c.lines.Next()
		c.lineNo++
		if tl := (*guard.TooLongError)(nil); errors.As(err, &tl) {
			if m := c.failAnswer(&c.skipped, fmt.Sprintf("an answer of %d bytes, over the limit of %d (ask the tool for less)", tl.Size, tl.Max), nil); m != nil {
				return m, nil
			}
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if m := c.message(line); m != nil {
				return m, nil
			}
		}
		if err != nil {
			if stopped := c.stopped.Load(); stopped != nil {
				return nil, stopped
			}
			return nil, err
		}
	}
}

// message is the message a line of the server's holds; nil when it holds
// none go-sdk could use, and nothing is to be answered in its place.
func (c *stdioConn) message(line []byte) jsonrpc.Message {
	msg, err := decodeLine(line) // exact.go
	if err != nil {
		var ids idScanner
		ids.feed(line)
		why := "a line that is not JSON"
		if jsonValid(line) {
			why = "a line that is not a JSON-RPC message"
		}
		return c.failAnswer(&ids, why, err)
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		if c.forwardProgress(msg) { // exact.go
			return nil
		}
		return msg
	}
	c.mu.Lock()
	rec := c.calls[resp.ID]
	delete(c.calls, resp.ID)
	c.mu.Unlock()
	if rec != nil {
		rec.answeredWith(resp)
	}
	return resp
}

// failAnswer reports a line of the server's that was skipped (what it
// was: why, and what go-sdk said of it: detail, if anything) and, when ids
// read the id of a call of [Server.Handler] from it, returns the answer
// that fails that call in its place. The call's tool error says why, the
// same on both paths; the report also has the detail.
func (c *stdioConn) failAnswer(ids *idScanner, why string, detail error) jsonrpc.Message {
	id, ok := ids.ID()
	var rec *callRecord
	if ok {
		c.mu.Lock()
		rec = c.calls[id]
		delete(c.calls, id)
		c.mu.Unlock()
	}
	which := "no call's answer could be matched to it"
	if rec != nil {
		which = fmt.Sprintf("the call it answered (agentctl's id %v upstream) failed", id.Raw())
	}
	what := why
	if detail != nil {
		// One line, and not the server's whole line, which go-sdk may quote.
		d := strings.Join(strings.Fields(detail.Error()), " ")
		if len(d) > maxDetail {
			d = d[:maxDetail] + "..."
		}
		what = fmt.Sprintf("%s (%s)", why, d)
	}
	c.server.reportOutput(fmt.Sprintf("line %d of its output was %s; it was skipped and %s, and the server is kept", c.lineNo, what, which))
	if rec == nil {
		return nil
	}
	rec.broken(why)
	return &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: why}}
}

// maxDetail bounds what a report repeats of go-sdk's error about a line.
const maxDetail = 200

// Close stops the server as the MCP specification says a client should:
// close its input, wait, then SIGTERM, then SIGKILL. It mirrors go-sdk
// v1.8.0's pipeRWC.Close (mcp/cmd.go) with [StopGrace] for each wait.
// Closing the server's output at the end ends a Read still waiting on it:
// a process the server started may hold it open (and its stderr, so that
// the process is never waited for) until [killGroup].
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = c.stop()
		c.stdout.Close()
	})
	return c.closeErr
}

func (c *stdioConn) stop() error {
	if err := c.stdin.Close(); err != nil {
		return fmt.Errorf("closing stdin: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	wait := func() (error, bool) {
		select {
		case err := <-done:
			return err, true
		case <-time.After(StopGrace):
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if c.cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := c.cmd.Process.Kill(); err != nil {
		return err
	}
	if err, ok := wait(); ok {
		return err
	}
	return errors.New("unresponsive subprocess")
}
