package guard

import (
	"encoding/json"
	"fmt"

	"github.com/agentctl/agentctl/mcpserver/internal/wire"
)

// checkBatch says what is wrong with a batch ("" if nothing) that a session
// whose protocol version has batches may hand to go-sdk: empty, an invalid
// message in it ([wire.Message.Check]), or an id used twice (go-sdk ends
// the connection on each). pending reports whether a request id is still
// unanswered.
func checkBatch(line []byte, pending func(key []byte) bool) string {
	var msgs []json.RawMessage
	if json.Unmarshal(line, &msgs) != nil {
		return "not a JSON array"
	}
	if len(msgs) == 0 {
		return "empty batch"
	}
	seen := map[string]bool{}
	var m wire.Message
	for i, msg := range msgs {
		m.Parse(msg)
		if _, why := m.Check(); why != "" {
			return fmt.Sprintf("message %d of the batch: %s", i+1, why)
		}
		if m.Kind == wire.Request && string(m.Name) != "subscriptions/listen" {
			if seen[string(m.Key)] || pending(m.Key) {
				return fmt.Sprintf("message %d of the batch: id %s is already in use", i+1, wire.AppendID(nil, string(m.Key)))
			}
			seen[string(m.Key)] = true
		}
	}
	return ""
}
