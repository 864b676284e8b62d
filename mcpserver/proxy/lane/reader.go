package lane

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/agentctl/agentctl/mcpserver/guard"
	"github.com/agentctl/agentctl/mcpserver/proxy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Reading an external server's output. A server's line that is not JSON
// (a line cut short, a stray print) or longer than the limit
// ([guard.MaxLine], go-sdk's 16 MiB) would end the SDK client session,
// which reads the server's output as one stream of JSON values: every
// call in flight would be lost and later notifications with them. The
// lane reads the server's lines itself, so it recovers at the next
// newline instead: the line is logged, naming the server, and only the
// call whose id can be read from it fails (the lane's with an error to
// the client, the SDK's with an error answer handed to its session).

// maxHead is how much of a line over the limit is kept for the log.
const maxHead = 4 << 10

// errNotJSON describes a server's line that is not JSON; errNotJSONRPC,
// one that is JSON but no JSON-RPC message go-sdk can read (the SDK
// path's words for both).
var (
	errNotJSON    = errors.New("a line that is not JSON")
	errNotJSONRPC = errors.New("a line that is not a JSON-RPC message")
)

// readServer reads the server's output until it ends: the lane's lines
// go to the client, the rest to the SDK's session through sdk. It returns
// nil at the end of the output.
func (l *Lane) readServer(link *serverLink, out io.Reader, sdk *io.PipeWriter, max int) error {
	lines := guard.NewLines(out, max)
	// The head of a line over the limit, for the log, and its id, read as
	// it passes (wherever it is, as on the SDK path); the line is never
	// held.
	var (
		head []byte
		ids  proxy.IDReader
	)
	lines.Skipped = func(piece []byte) {
		if room := maxHead - len(head); room > 0 {
			head = append(head, piece[:min(room, len(piece))]...)
		}
		ids.Feed(piece)
	}
	for {
		head, ids = head[:0], proxy.IDReader{}
		line, err := lines.Next()
		var tl *guard.TooLongError
		switch {
		case errors.As(err, &tl):
			id, ok := ids.ID()
			l.failLine(link, head, id, ok, sdk, fmt.Errorf("an answer of %d bytes, over the limit of %d (ask the tool for less)", tl.Size, tl.Max))
			continue
		case len(bytes.TrimSpace(line)) == 0:
		case !json.Valid(line):
			l.badLine(link, line, sdk, errNotJSON)
		default:
			// The SDK's session gets the line as the SDK path reads it too
			// (proxy's decodeLine): not UTF-8 made U+FFFD.
			if line = sanitize(line); l.fromServer(link, line, sdk) {
				break
			}
			// The value and a newline: go-sdk's reader of the pipe
			// (mcp.IOTransport) ends the connection at anything else after
			// a value ("invalid trailing data"), white space included, which
			// the SDK path, reading lines, takes as JSON does.
			line = append(bytes.TrimRight(line, " \t\r\n"), '\n')
			if _, werr := sdk.Write(line); werr != nil {
				return werr
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// sanitize is a server's line with its bytes that are not UTF-8 replaced
// by U+FFFD, as go-sdk decodes it on the SDK path. Only the server's bytes
// are: the client's ids and tokens that the lane puts in its answers go
// back as the client wrote them, as the guard gives them back on the SDK
// path.
func sanitize(line []byte) []byte {
	if utf8.Valid(line) {
		return line
	}
	return proxy.ValidUTF8(line)
}

// badLine handles a server's line the lane cannot pass on (why says what
// it was): logged, and the call its id names, if any, fails. The id is
// read as the SDK path reads it (proxy.ReadID: the top-level "id" member).
func (l *Lane) badLine(link *serverLink, line []byte, sdk io.Writer, why error) {
	id, ok := proxy.ReadID(line)
	l.failLine(link, line, id, ok, sdk, why)
}

// failLine is badLine for a line whose id has been read (ok says whether
// it had one).
func (l *Lane) failLine(link *serverLink, line []byte, id jsonrpc.ID, ok bool, sdk io.Writer, why error) {
	if l.report != nil {
		which := "no call's answer could be matched to it"
		if ok {
			which = fmt.Sprintf("the call it answered (id %s upstream) failed", clip(idText(id)))
		}
		l.report(link.server, fmt.Sprintf("a line of its output was %v; it was skipped and %s, and the server is kept", why, which))
	} else {
		l.log.Warn("MCP server wrote a line agentctl cannot read; skipping it", "mcp_server", link.server,
			"line", clip(line), "why", why.Error(), "id", idText(id))
	}
	if !ok {
		return
	}
	text := proxy.AnswerUnreadable(link.server, why.Error()) // the SDK path's words
	if s, ok := id.Raw().(string); ok && strings.HasPrefix(s, idPrefix) {
		if c := l.take(s); c != nil {
			l.replyError(c, text)
		}
		return
	}
	// An id of the SDK's: its session gets an error answer for it, which
	// fails the call as on the SDK path (proxy.Recorder.Unreadable).
	var msg []byte
	if link.sdk != nil {
		msg = link.sdk.Unreadable(id, why.Error())
	} else {
		msg, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id.Raw(),
			"error": map[string]any{"code": -32603, "message": text}})
		msg = append(msg, '\n')
	}
	_, _ = sdk.Write(msg)
}

// idText is an id as JSON, for logs.
func idText(id jsonrpc.ID) []byte {
	if !id.IsValid() {
		return nil
	}
	b, _ := json.Marshal(id.Raw())
	return b
}

// clip is the start of a line, for the log.
func clip(line []byte) string {
	line = bytes.TrimSpace(line)
	if len(line) > 200 {
		return string(line[:200]) + "…"
	}
	return string(line)
}
