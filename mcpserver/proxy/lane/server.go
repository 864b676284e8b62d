package lane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/mcpserver/internal/jsonscan"
	"github.com/agentctl/agentctl/mcpserver/proxy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport runs a stdio server's command, as go-sdk's
// [mcp.CommandTransport] does, and reads the server's output through the
// lane: answers to the lane's calls go to the client directly, the rest to
// the SDK client session. cmd is ready to start (its environment, stderr
// and process attributes set); server is the server's name, which
// [Endpoint.Route] gives for its tools.
func (l *Lane) Transport(cmd *exec.Cmd, server string) mcp.Transport {
	return &commandTransport{lane: l, cmd: cmd, server: server, terminate: proxy.StopGrace}
}

// link returns the connection to the server named server, if it has one.
func (l *Lane) link(server string) *serverLink {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.links[server]
}

// commandTransport starts an external stdio server; see [Lane.Transport].
type commandTransport struct {
	lane      *Lane
	cmd       *exec.Cmd
	server    string
	terminate time.Duration
}

// Connect starts the server. It mirrors go-sdk v1.8.0's
// CommandTransport.Connect (mcp/cmd.go), except that the server's output is
// read line by line here and its input is an *os.File the lane can write to
// without blocking.
func (t *commandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
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
	l := t.lane
	link := newServerLink(t.server, stdin)
	ps := &processStdin{stdin: stdin, cmd: t.cmd, link: link, terminate: t.terminate}
	l.mu.Lock()
	l.links[t.server] = link
	l.mu.Unlock()
	pr, pw := io.Pipe()
	conn, err := (&mcp.IOTransport{Reader: pr, Writer: ps}).Connect(ctx)
	if err != nil {
		ps.Close()
		return nil, err
	}
	// The calls the lane leaves to the SDK are answered as with the lane
	// off (proxy.Recorder).
	link.sdk = proxy.RecordCalls(conn)
	go func() {
		err := l.readServer(link, stdout, pw, 0)
		pw.CloseWithError(err)
		link.close()
		l.linkDown(link, orEOF(err))
	}()
	return link.sdk, nil
}

func orEOF(err error) error {
	if err == nil {
		return io.EOF
	}
	return err
}

// processStdin is the server's input as the SDK holds it: its writes go
// through the link, in order with the lane's.
type processStdin struct {
	stdin     io.Closer
	cmd       *exec.Cmd
	link      *serverLink
	terminate time.Duration
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

// stop ends the server as the MCP specification says a client should:
// close its input, wait, then SIGTERM, then SIGKILL. It mirrors go-sdk
// v1.8.0's pipeRWC.Close (mcp/cmd.go), which the lane cannot use because
// it owns the server's pipes; TestStopAsTheSDKDoes compares the two.
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

// fromServer handles a server's line (JSON in valid UTF-8; readServer
// checked it): it takes an answer or progress of a lane call, and a line
// go-sdk cannot read as a JSON-RPC message (which would end the SDK's
// session: it is skipped as on the SDK path, see badLine); false hands the
// line to the SDK's session.
//
// An answer of the lane's in the common shape (JSON-RPC's members, written
// plainly; a result; no deep nesting) is read here by one scan. Any other
// line is read by go-sdk's own decoder (jsonrpc.DecodeMessage, what the
// SDK path reads every line with), so that the lane takes, fails or hands
// on exactly what the SDK path would.
func (l *Lane) fromServer(link *serverLink, line []byte, sdk io.Writer) bool {
	// A line of the lane's names one of its ids or tokens, plainly or
	// with escapes ("\u0061gentctl-call-1" is an answer of the lane's too).
	mine := l.inflight.Load() > 0 && (bytes.Contains(line, laneMarker) || bytes.IndexByte(line, '\\') >= 0)
	if mine {
		m, ok := readMessage(line, true)
		switch {
		case !ok || !shallow(line):
		case !m.hasMethod && m.id != nil && m.result != nil && m.rpcErr == nil:
			if id, ok := jsonscan.PlainString(m.id); ok && bytes.HasPrefix(id, []byte(idPrefix)) {
				if c := l.take(string(id)); c != nil {
					l.reply(c, m.result, nil, nil)
				}
				return true // a late answer to a cancelled call is dropped
			}
		case m.method == "notifications/progress":
			if l.progressOf(m.params) {
				return true
			}
		}
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		l.badLine(link, line, sdk, errNotJSONRPC)
		return true
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || !mine {
		return false
	}
	id, ok := resp.ID.Raw().(string)
	if !ok || !strings.HasPrefix(id, idPrefix) {
		return false
	}
	if c := l.take(id); c != nil {
		var rpcErr []byte
		if resp.Error != nil {
			// go-sdk's error, as the SDK path passes it on: its code,
			// message and data.
			var we *jsonrpc.Error
			if !errors.As(resp.Error, &we) {
				we = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: resp.Error.Error()}
			}
			if rpcErr, err = json.Marshal(we); err != nil {
				l.replyError(c, proxy.AnswerUnreadable(link.server, errNotJSONRPC.Error()))
				return true
			}
		}
		l.reply(c, resp.Result, rpcErr, nil)
	}
	return true
}

// maxDepth is how deep go-sdk v1.8.0 reads JSON (internal/json's
// defaultMaxDepth): a line nested deeper is no message to it.
const maxDepth = 1000

// shallow reports whether line certainly nests no deeper than maxDepth:
// it has no more brackets than that.
func shallow(line []byte) bool {
	return bytes.Count(line, []byte("{"))+bytes.Count(line, []byte("[")) <= maxDepth
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
	c, ok := l.progress.Lookup(tok)
	if !ok {
		return true // progress of a call that is over
	}
	p.ProgressToken = json.RawMessage(c.clientToken)
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
		l.replyError(c, proxy.FailedDuringCall(c.link.server, failure))
		return
	}
	if string(rpcErr) == "null" {
		rpcErr = nil // some servers write "error": null beside a result
	}
	if len(rpcErr) == 0 {
		shaped, err := sdkResult(result)
		if err != nil {
			// go-sdk cannot read it: the call fails with go-sdk's words
			// and the server is kept, as on the SDK path.
			l.replyError(c, proxy.NotACallResult(c.link.server, err))
			return
		}
		result = shaped
	}
	msg := make([]byte, 0, len(result)+len(rpcErr)+len(c.clientID)+80)
	msg = append(msg, `{"jsonrpc":"2.0","id":`...)
	msg = append(msg, c.clientID...)
	if len(rpcErr) > 0 {
		msg = append(msg, `,"error":`...)
		msg = append(msg, rpcErr...)
	} else {
		msg = append(msg, `,"result":`...)
		msg = append(msg, callResult(result, c.proto, l.serverInfo)...)
	}
	msg = append(msg, "}\n"...)
	l.write(msg)
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

// linkDown forgets a server's connection that went away, and fails the
// calls still waiting on it.
func (l *Lane) linkDown(link *serverLink, cause error) {
	l.mu.Lock()
	if l.links[link.server] == link {
		delete(l.links, link.server)
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
	}
}
