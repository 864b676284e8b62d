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
	go func() {
		err := l.readServer(link, stdout, pw, 0)
		pw.CloseWithError(err)
		link.close()
		l.linkDown(link, orEOF(err))
	}()
	return (&mcp.IOTransport{Reader: pr, Writer: ps}).Connect(ctx)
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

// fromServer takes an external server's line if it answers or reports
// progress of a lane call.
func (l *Lane) fromServer(line []byte) bool {
	// A line of the lane's names one of its ids or tokens, plainly or
	// with escapes ("\u0061gentctl-call-1" is an answer of the lane's too).
	if l.inflight.Load() == 0 || !bytes.Contains(line, laneMarker) && bytes.IndexByte(line, '\\') < 0 {
		return false
	}
	m, ok := readMessage(line, true) // readServer checked it
	if !ok {
		return l.oddAnswer(line)
	}
	if m.method == "" && m.id != nil {
		id, plain := jsonscan.PlainString(m.id)
		if !plain {
			s, ok := jsonscan.String(m.id)
			if !ok {
				return false
			}
			id = []byte(s)
		}
		if !bytes.HasPrefix(id, []byte(idPrefix)) {
			return false
		}
		if c := l.take(string(id)); c != nil {
			l.reply(c, m.result, m.rpcErr, nil)
		}
		return true // a late answer to a cancelled call is dropped
	}
	if m.method != "notifications/progress" {
		return false
	}
	var tok []byte
	jsonscan.EachMember(m.params, func(k, v []byte) bool {
		if jsonscan.KeyIs(k, "progressToken") {
			tok, _ = jsonscan.PlainString(v)
			return false
		}
		return true
	})
	if !bytes.HasPrefix(tok, []byte(tokenPrefix)) {
		return false
	}
	c, ok := l.progress.Lookup(string(tok))
	if !ok {
		return true // progress of a call that is over
	}
	msg := append(make([]byte, 0, len(m.params)+64), `{"jsonrpc":"2.0","method":"notifications/progress","params":{`...)
	first := true
	jsonscan.EachMember(m.params, func(k, v []byte) bool {
		switch {
		case jsonscan.KeyIs(k, "progressToken"):
			v = c.clientToken
		case !jsonscan.KeyIs(k, "progress") && !jsonscan.KeyIs(k, "total") && !jsonscan.KeyIs(k, "message") && !jsonscan.KeyIs(k, "_meta"):
			return true // go-sdk's ProgressNotificationParams has no such member: the SDK path drops it
		}
		if !first {
			msg = append(msg, ',')
		}
		first = false
		msg = append(append(append(msg, k...), ':'), v...)
		return true
	})
	msg = append(msg, "}}\n"...)
	l.write(msg)
	return true
}

// oddAnswer takes an answer to a lane call that readMessage does not read
// (a member it does not know, an escaped id): the SDK would drop it as an
// answer to an id it never sent, and the call would wait forever.
func (l *Lane) oddAnswer(line []byte) bool {
	var a struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(line, &a) != nil || a.Method != "" {
		return false
	}
	var id string
	if json.Unmarshal(a.ID, &id) != nil || !strings.HasPrefix(id, idPrefix) {
		return false
	}
	if c := l.take(id); c != nil {
		l.reply(c, a.Result, a.Error, nil)
	}
	return true
}

// reply answers the client's call: the server's result or error unchanged,
// or, when the server failed (failure != nil), a tool error naming it.
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
	} else {
		rpcErr = sdkError(rpcErr)
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
