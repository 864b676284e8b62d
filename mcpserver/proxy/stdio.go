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
	"unicode/utf8"

	"github.com/agentctl/agentctl/mcpserver/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// commandTransport runs a stdio server, on both paths: go-sdk v1.8.0's
// [mcp.CommandTransport] (mcp/cmd.go) but for how the server's output is
// read: a line at a time here (with [wire.Lines]), so that one bad line
// costs at most the call it answers, where go-sdk's stream decoder ends the
// connection and fails every call in flight, or waits for the server's
// next output to finish a truncated line (see [stdioConn.Read]); and each
// line is offered to the pool's [Tap] (the fast lane) first, if it has one.
// Its input is a [Link], shared with the tap, whose writes are bounded, so
// that a server that stops reading its input fails a call and is
// restarted, where go-sdk's write blocks for ever (see [stdioConn.Write]).
type commandTransport struct {
	server *Server
	cmd    *exec.Cmd
}

// Connect starts the server, as [mcp.CommandTransport.Connect] does, but
// with the server's input a pipe of its own (an *os.File), which the link
// writes without blocking.
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
	s := t.server
	c := &stdioConn{server: s, cmd: t.cmd, stdin: stdin, stdout: stdout, calls: map[jsonrpc.ID]*callRecord{},
		writeTimeout: s.writeTimeout(), link: NewLink(s.mount.Name, stdin, 0), tap: s.pool.currentTap()}
	c.link.CallTimeout = s.mount.CallTimeoutOrDefault()
	c.lines = wire.NewLines(stdout, s.pool.opts.MaxLine)
	c.lines.Skipped = c.skipped.Feed
	if c.tap != nil {
		c.tap.Up(c.link)
	}
	return c, nil
}

// Tap sees a stdio server's connection before the SDK path does: the fast
// lane (package lane), which sends calls of its own through the server's
// [Link] and takes their answers and progress. Its methods are called from
// the connection's reader, in the order of the server's lines.
type Tap interface {
	// Up: the server's connection is up, written through link.
	Up(link *Link)
	// Line offers a line of the server's that is JSON (in valid UTF-8),
	// read into m, before go-sdk decodes it; true: the tap took it.
	Line(link *Link, m *wire.Message) bool
	// Answer offers the server's answer as go-sdk read it, or, when
	// unreadable says why, the id of an answer that could not be read;
	// true: it answers a call of the tap's, which took it.
	Answer(link *Link, resp *jsonrpc.Response, unreadable string) bool
	// Down: the connection ended, and why.
	Down(link *Link, cause error)
}

// stdioConn is the SDK's connection to a stdio server.
type stdioConn struct {
	server *Server
	cmd    *exec.Cmd
	stdin  *os.File
	stdout io.Closer
	lines  *wire.Lines
	link   *Link
	tap    Tap // nil: none
	// skipped reads the id of a line over the bound as it is skipped; msg
	// is the line read for the tap; lineNo counts the server's lines, for
	// reports (only the reader uses them).
	skipped wire.IDReader
	msg     wire.Message
	lineNo  int

	// writeTimeout bounds each write ([Server.writeTimeout]); notReading,
	// once set, is why the connection's writes fail: one did not end in
	// time, so the server is being stopped.
	writeTimeout time.Duration
	notReading   atomic.Pointer[notReadingError]
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

// Write sends msg to the server, a line, through the link, in order with
// the tap's, within writeTimeout (see [stdioConn.stuck]; ctx is not
// heeded: a write cut short would leave part of a line in the pipe). A
// tools/call of [Server.Handler] (its ctx carries a [callRecord]) is noted,
// so that its answer can be recorded as the server wrote it.
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
	if nr := c.notReading.Load(); nr != nil {
		return nr
	}
	if err = c.link.write(append(b, '\n'), true, c.writeTimeout); errors.Is(err, errWaited) {
		return c.stuck()
	}
	return err
}

// stuck ends a connection whose server did not take a message within
// writeTimeout: it is not reading its input. Part of the message may be in
// the pipe, so nothing more can follow it: the link is closed, the
// connection too in the background (the server stopped as
// [stdioConn.Close] stops it), its session ends with a [stoppedError] and
// the server's run loop starts it again, as after a crash. The write and
// every later one fail with a [notReadingError].
func (c *stdioConn) stuck() error {
	nr := &notReadingError{waited: c.writeTimeout}
	if !c.notReading.CompareAndSwap(nil, nr) {
		return c.notReading.Load() // another write found it first
	}
	c.stopped.Store(&stoppedError{nr})
	c.link.close()
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

// errRejected is go-sdk's ErrRejected (compared by code).
var errRejected = &jsonrpc.Error{Code: wire.CodeRejected, Message: "rejected by transport"}

// stoppedError ends the session of a server stopped for not reading its
// input: the server's status, and what the calls in flight then fail
// with. It does not wrap the [notReadingError]: those calls reached the
// server.
type stoppedError struct{ cause *notReadingError }

func (e *stoppedError) Error() string { return "agentctl stopped it: " + e.cause.Error() }

// Read returns the server's next message. A line that is not a JSON-RPC
// message, or that is over the size limit, is reported (see
// [Server.reportOutput]) and skipped, and reading goes on; if it answers
// a call whose id can be read from it (the tap's, or [Server.Handler]'s),
// that call alone fails (see [callRecord]). Only the end of the output (or
// a read error) ends the connection, and the tap hears of it.
func (c *stdioConn) Read(context.Context) (jsonrpc.Message, error) {
	for {
		c.skipped = wire.IDReader{}
		line, err := c.lines.Next()
		c.lineNo++
		if tl, ok := errors.AsType[*wire.TooLongError](err); ok {
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
				err = stopped
			}
			c.link.close()
			if c.tap != nil {
				c.tap.Down(c.link, err)
			}
			return nil, err
		}
	}
}

// message is the message a line of the server's holds; nil when it holds
// none for go-sdk (the tap took it, or it is skipped), and nothing is to be
// answered in its place. The line is read as go-sdk reads it
// (jsonrpc.DecodeMessage), its bytes that are not UTF-8 replaced by U+FFFD
// first (go-sdk reads them so in strings, but quotes them as they are in
// its errors); a line that is not JSON as a whole is none (go-sdk reads the
// first value and ignores what follows it, {...}0: [errMoreAfter]).
func (c *stdioConn) message(line []byte) jsonrpc.Message {
	if !utf8.Valid(line) {
		line = ValidUTF8(line)
	}
	valid := wire.Valid(line)
	if valid && c.tap != nil {
		if c.msg.Parse(line); c.tap.Line(c.link, &c.msg) {
			return nil
		}
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err == nil && !valid {
		err = errMoreAfter
	}
	if err != nil {
		var ids wire.IDReader
		ids.Feed(line)
		why := "a line that is not JSON"
		if valid {
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
	if c.tap != nil && c.tap.Answer(c.link, resp, "") {
		return nil
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
// read an id from it, fails the call it answered: the tap's, or else the
// answer returned goes to go-sdk in its place (and fails a call of
// [Server.Handler] with why, the same on both paths; the report also has
// the detail).
func (c *stdioConn) failAnswer(ids *wire.IDReader, why string, detail error) jsonrpc.Message {
	id, ok := ids.ID()
	var rec *callRecord
	tapped := false
	if ok {
		c.mu.Lock()
		rec = c.calls[id]
		delete(c.calls, id)
		c.mu.Unlock()
		tapped = rec == nil && c.tap != nil && c.tap.Answer(c.link, &jsonrpc.Response{ID: id}, why)
	}
	which := "no call's answer could be matched to it"
	if rec != nil || tapped {
		which = fmt.Sprintf("the call it answered (agentctl's id %v upstream) failed", id.Raw())
	}
	what := why
	if detail != nil {
		// One line, and not the server's whole line, which go-sdk may quote.
		// Whole characters only (go-sdk's quote of the line may end in the
		// middle of one, as may the cut here): the report is shown as text.
		d := strings.ToValidUTF8(strings.Join(strings.Fields(detail.Error()), " "), "")
		if len(d) > maxDetail {
			d = strings.ToValidUTF8(d[:maxDetail], "") + "..."
		}
		what = fmt.Sprintf("%s (%s)", why, d)
	}
	c.server.reportOutput(fmt.Sprintf("line %d of its output was %s; it was skipped and %s, and the server is kept", c.lineNo, what, which))
	if !ok || tapped {
		return nil
	}
	if rec != nil {
		rec.broken(why)
	}
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
	c.link.close()
	// A write blocked on a server that stopped reading fails now.
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
