package guard

import (
	"bytes"
	"encoding/json"

	"github.com/agentctl/agentctl/mcpserver/internal/wire"
)

// isBatch reports whether a line is a JSON array: a batch of messages.
func isBatch(line []byte) bool {
	b := bytes.TrimLeft(line, " \t\r\n")
	return len(b) > 0 && b[0] == '['
}

// negotiatedVersion is the protocolVersion of an answer to initialize ("" if
// it has none).
func negotiatedVersion(answer []byte) string {
	o := wire.NewObject(answer)
	for o.Next() {
		if wire.KeyIs(o.Key(), "result") {
			r := wire.NewObject(o.Value())
			for r.Next() {
				if wire.KeyIs(r.Key(), "protocolVersion") {
					v, _ := wire.String(r.Value())
					return v
				}
			}
			return ""
		}
	}
	return ""
}

// decodeBatch is a batch's messages (nil if it is none).
func decodeBatch(b []byte) []json.RawMessage {
	var msgs []json.RawMessage
	if json.Unmarshal(b, &msgs) != nil {
		return nil
	}
	return msgs
}
