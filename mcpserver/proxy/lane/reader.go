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
	"github.com/agentctl/agentctl/mcpserver/internal/jsonscan"
	"github.com/agentctl/agentctl/mcpserver/proxy"
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

// maxHead is how much of a line over the limit is kept to read its id.
const maxHead = 4 << 10

// errNotJSON describes a server's line that is not JSON.
var errNotJSON = errors.New("a line that is not JSON")

// readServer reads the server's output until it ends: the lane's lines
// go to the client, the rest to the SDK's session through sdk. It returns
// nil at the end of the output.
func (l *Lane) readServer(link *serverLink, out io.Reader, sdk *io.PipeWriter, max int) error {
	lines := guard.NewLines(out, max)
	// The head of a line over the limit, to read its id from; the rest of
	// it is never held.
	var head []byte
	lines.Skipped = func(piece []byte) {
		if room := maxHead - len(head); room > 0 {
			head = append(head, piece[:min(room, len(piece))]...)
		}
	}
	for {
		head = head[:0]
		line, err := lines.Next()
		var tl *guard.TooLongError
		switch {
		case errors.As(err, &tl):
			l.badLine(link, head, sdk, fmt.Errorf("an answer of %d bytes, over the limit of %d (ask the tool for less)", tl.Size, tl.Max))
			continue
		case len(bytes.TrimSpace(line)) == 0:
		case !json.Valid(line):
			l.badLine(link, line, sdk, errNotJSON)
		case !l.fromServer(sanitize(line)):
			if line[len(line)-1] != '\n' {
				line = append(line, '\n')
			}
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
	return validUTF8(line)
}

// badLine handles a server's line the lane cannot pass on (why says what
// it was): logged, and the call its id names, if any, fails.
func (l *Lane) badLine(link *serverLink, line []byte, sdk io.Writer, why error) {
	id := idOf(line)
	if l.report != nil {
		which := "no call's answer could be matched to it"
		if id != nil {
			which = fmt.Sprintf("the call it answered (id %s upstream) failed", clip(id))
		}
		l.report(link.server, fmt.Sprintf("a line of its output was %v; it was skipped and %s, and the server is kept", why, which))
	} else {
		l.log.Warn("MCP server wrote a line agentctl cannot read; skipping it", "mcp_server", link.server,
			"line", clip(line), "why", why.Error(), "id", string(id))
	}
	if id == nil {
		return
	}
	text := proxy.AnswerUnreadable(link.server, why.Error()) // the SDK path's words
	if s, ok := jsonscan.String(id); ok && strings.HasPrefix(s, idPrefix) {
		if c := l.take(s); c != nil {
			l.replyError(c, text)
		}
		return
	}
	// An id of the SDK's: its session gets an error answer for it (the
	// SDK path passes a server's error on to the client).
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id),
		"error": map[string]any{"code": -32603, "message": text}})
	_, _ = sdk.Write(append(msg, '\n'))
}

// idOf finds an answer's id in the start of a line that is no valid JSON:
// the value after its first "id" member, if it is a whole string or
// integer; nil if there is none (then nothing can be failed).
func idOf(line []byte) []byte {
	i := bytes.Index(line, []byte(`"id"`))
	if i < 0 {
		return nil
	}
	rest := bytes.TrimLeft(line[i+4:], " \t")
	if len(rest) == 0 || rest[0] != ':' {
		return nil
	}
	rest = bytes.TrimLeft(rest[1:], " \t")
	if len(rest) == 0 {
		return nil
	}
	if rest[0] == '"' {
		for j := 1; j < len(rest); j++ {
			switch rest[j] {
			case '\\':
				j++
			case '"':
				if _, ok := jsonscan.String(rest[:j+1]); ok {
					return rest[:j+1]
				}
				return nil
			}
		}
		return nil
	}
	j := 0
	for j < len(rest) && (rest[j] == '-' || rest[j] >= '0' && rest[j] <= '9') {
		j++
	}
	if j == len(rest) || !exactInteger(rest[:j]) {
		return nil // cut inside the number, or none
	}
	return rest[:j]
}

// clip is the start of a line, for the log.
func clip(line []byte) string {
	line = bytes.TrimSpace(line)
	if len(line) > 200 {
		return string(line[:200]) + "…"
	}
	return string(line)
}
