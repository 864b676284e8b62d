package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
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
// line. See [stdioConn.Read].
type commandTransport struct {
	server *Server
	cmd    *exec.Cmd
}

// Connect starts the server, as [mcp.CommandTransport.Connect] does.
func (t *commandTransport) Connect(context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	c := &stdioConn{server: t.server, cmd: t.cmd, stdin: stdin, stdout: stdout, calls: map[jsonrpc.ID]*callRecord{}}
	c.lines = guard.NewLines(stdout, t.server.pool.opts.MaxLine)
	c.lines.Skipped = c.skipped.feed
	return c, nil
}

// stdioConn is the SDK's connection to a stdio server.
type stdioConn struct {
	server *Server
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.Closer
	lines  *guard.Lines
	// skipped reads the id of a line over the bound as it is skipped.
	skipped idScanner
	// lineNo counts the server's lines, for reports.
	lineNo int

	writeMu sync.Mutex

	mu sync.Mutex
	// calls are the tools/calls of [Server.Handler] awaiting an answer, by
	// the id go-sdk gave them.
	calls map[jsonrpc.ID]*callRecord

	closeOnce sync.Once
	closeErr  error
}

func (c *stdioConn) SessionID() string { return "" }

// Write sends msg to the server, a line. A tools/call of [Server.Handler]
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
	_, err = c.stdin.Write(append(b, '\n'))
	return err
}

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
			return nil, err
		}
	}
}

// message is the message a line of the server's holds; nil when it holds
// none go-sdk could use, and nothing is to be answered in its place.
func (c *stdioConn) message(line []byte) jsonrpc.Message {
	msg, err := jsonrpc.DecodeMessage(line)
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
