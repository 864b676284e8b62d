package proxy

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// CallTimedOut is the text of the tool error that answers a call its
// server did not answer within its mount's call timeout (see
// [github.com/agentctl/agentctl/mcpserver/mount.Mount.CallTimeoutOrDefault]),
// the same on both paths. The call is cancelled upstream; the server is
// kept.
func CallTimedOut(server string, d time.Duration) string {
	return fmt.Sprintf("MCP server %q did not answer within %s, so agentctl cancelled the call (the server keeps running); "+
		"if its tools need longer, raise the mount's call_timeout ([[mcp_servers]] in the config file, or \"call_timeout\" in --mcp-json)", server, d)
}

// AnswerUnreadable is the text of the tool error that answers a call
// whose answer the server wrote but agentctl could not read (why: a line
// that is not JSON, or one over the size limit), the same on both paths.
// That call alone fails; the server is kept.
func AnswerUnreadable(server, why string) string {
	return fmt.Sprintf("MCP server %q sent %s; agentctl skipped it, so this call failed (the server keeps running)", server, why)
}

// NotACallResult is the text of the tool error that answers a call whose
// server answered with a result go-sdk cannot read as a tools/call result
// (result: null is one it can; "a string" is not), decodeErr saying why,
// the same on both paths. That call alone fails; the server is kept.
func NotACallResult(server string, decodeErr error) string {
	return AnswerUnreadable(server, fmt.Sprintf("a result that is not a tools/call result (%v)", callFailure(decodeErr)))
}

// callRecordKey is the context key of a [callRecord].
type callRecordKey struct{}

// callRecord is what a stdio server wrote in answer to one tools/call of
// [Server.Handler], as [stdioConn] read it: [Server.Handler] puts it in the
// call's context, [stdioConn.Write] finds it there and files it under the
// call's id, and [stdioConn.Read] fills it in before go-sdk sees the answer.
// Through it the handler tells the server's own errors (whatever their
// code) from go-sdk's transport errors, which share codes, and gets the
// structuredContent and _meta as the server wrote them, which go-sdk would
// decode into float64s.
type callRecord struct {
	mu sync.Mutex
	// forget takes the record off its connection (the call is over).
	forget func()

	answered bool           // an answer arrived (result or error)
	rpcErr   *jsonrpc.Error // the server's error answer
	aside    *Aside         // what SetAside took out of the result, as written
	why      string         // the answer could not be read: why
}

// answer is a snapshot of a callRecord.
type answer struct {
	answered bool
	rpcErr   *jsonrpc.Error
	aside    *Aside
	why      string
}

func (r *callRecord) snapshot() answer {
	r.mu.Lock()
	defer r.mu.Unlock()
	return answer{r.answered, r.rpcErr, r.aside, r.why}
}

// setForget sets how to take the record off its connection.
func (r *callRecord) setForget(f func()) {
	r.mu.Lock()
	r.forget = f
	r.mu.Unlock()
}

// done takes the record off its connection.
func (r *callRecord) done() {
	r.mu.Lock()
	forget := r.forget
	r.mu.Unlock()
	if forget != nil {
		forget()
	}
}

// answeredWith records resp, the server's answer, and takes out of the
// result what go-sdk would decode inexactly ([SetAside]: structuredContent
// and every _meta, whose numbers it reads through a float64, which rounds
// 12345678901234567890 and refuses 1e400); [Server.Handler] puts it back.
func (r *callRecord) answeredWith(resp *jsonrpc.Response) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answered = true
	if resp.Error != nil {
		var we *jsonrpc.Error
		if errors.As(resp.Error, &we) {
			cp := *we
			r.rpcErr = &cp
		}
		return
	}
	if rest, aside := SetAside(resp.Result); aside != nil {
		r.aside, resp.Result = aside, rest
	}
}

// broken records that the answer could not be read, and why.
func (r *callRecord) broken(why string) {
	r.mu.Lock()
	r.answered, r.why = true, why
	r.mu.Unlock()
}
