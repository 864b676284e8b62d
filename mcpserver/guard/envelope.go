package guard

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/agentctl/agentctl/mcpserver/internal/jsonscan"
)

// Reading JSON-RPC envelopes: which line is a request, which write an
// answer, and to what. A request's members are all read, as go-sdk reads
// them (the last of duplicate keys counts), but its params only for a
// cancellation; an answer's only up to its id and result or error: results
// are not scanned (the writers put "id" first). A request is known by a key
// ([AppendIDKey]), built in the caller's buffer: nothing is allocated to
// read a message.

// Methods the guard knows: a cancellation settles a request, which then
// gets no answer; a 2026-07-28 client's subscriptions/listen is a stream of
// notifications, answered only when it is torn down, so it is not waited
// for.
var (
	cancelledMethod = []byte("notifications/cancelled")
	listenMethod    = []byte("subscriptions/listen")
)

// kind is what a message of the client's is to the guard.
type kind int

const (
	otherMessage kind = iota // nothing to wait for: a notification, an answer, not JSON-RPC
	request                  // a request to be answered
	cancellation             // the cancellation of a request, which then gets no answer
	misplacedID              // a cancellation with an id of its own: an invalid request
)

// isBatch reports whether a line is a JSON array: a batch of messages.
func isBatch(line []byte) bool {
	b := bytes.TrimLeft(line, " \t\r\n")
	return len(b) > 0 && b[0] == '['
}

// eachMessage calls f with each message of a line (a batch holds several).
func eachMessage(line []byte, f func(msg []byte)) {
	if isBatch(line) {
		var batch []json.RawMessage
		if json.Unmarshal(line, &batch) == nil {
			for _, m := range batch {
				f(m)
			}
		}
		return
	}
	f(line)
}

// readRequest reads one message of the client's: whether it is a request
// to be answered (not a subscriptions/listen) or a cancellation, and the
// key of the request (appended to buf).
func readRequest(buf, msg []byte) ([]byte, kind) {
	m := readClient(buf, msg)
	if m.kind == request && m.listen {
		return buf, otherMessage
	}
	return m.key, m.kind
}

// negotiatedVersion is the protocolVersion of an answer to initialize ("" if
// it has none).
func negotiatedVersion(answer []byte) string {
	o := jsonscan.NewObject(answer)
	for o.Next() {
		if jsonscan.KeyIs(o.Key(), "result") {
			r := jsonscan.NewObject(o.Value())
			for r.Next() {
				if jsonscan.KeyIs(r.Key(), "protocolVersion") {
					v, _ := jsonscan.String(r.Value())
					return v
				}
			}
			return ""
		}
	}
	return ""
}

// methodName is a method's name, decoded if it has escapes.
func methodName(v []byte) ([]byte, bool) {
	if s, ok := jsonscan.PlainString(v); ok {
		return s, true
	}
	s, ok := jsonscan.String(v)
	return []byte(s), ok
}

// readAnswer reads one message the endpoint writes: if it is an answer,
// the key of the request it answers (appended to buf).
func readAnswer(buf, msg []byte) ([]byte, bool) {
	var id []byte
	isAnswer := false
	o := jsonscan.NewObject(msg)
	for o.Next() {
		switch k := o.Key(); {
		case jsonscan.KeyIs(k, "id"):
			id = o.Value()
		case jsonscan.KeyIs(k, "method"):
			return buf, false // a request or notification of the endpoint's
		case jsonscan.KeyIs(k, "result"), jsonscan.KeyIs(k, "error"):
			isAnswer = true
		}
		if isAnswer && id != nil {
			break
		}
	}
	if !isAnswer {
		return buf, false
	}
	return AppendIDKey(buf, id)
}

// AppendIDKey appends the key of the request id raw (JSON) to dst: the id
// as go-sdk v1.8.0 tells ids apart, in a request, in a cancellation's
// requestId and in the answer it writes (jsonrpc2.MakeID of the value
// decoded into an any): a string by its value ("s" and the value), a
// number by the integer part of the float64 nearest to it ("n" and the
// digits), so 6.0 and 6.5 are 6, and 9007199254740993 is 9007199254740992.
// false for anything else (null, an object), which is no request id.
func AppendIDKey(dst, raw []byte) ([]byte, bool) {
	if len(raw) == 0 {
		return dst, false
	}
	switch c := raw[0]; {
	case c == '"':
		if s, ok := jsonscan.PlainString(raw); ok {
			return append(append(dst, 's'), s...), true
		}
		s, ok := jsonscan.String(raw)
		return append(append(dst, 's'), s...), ok
	case c == '-' || c >= '0' && c <= '9':
		if n, ok := smallInt(raw); ok {
			return strconv.AppendInt(append(dst, 'n'), n, 10), true
		}
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return dst, false
		}
		return strconv.AppendInt(append(dst, 'n'), int64(f), 10), true
	}
	return dst, false
}

// smallInt reads an integer of at most 15 digits (the ids clients use),
// which a float64 holds exactly, without allocating; false for anything
// else.
func smallInt(raw []byte) (int64, bool) {
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if raw[0] == '-' {
		n = -n
	}
	return n, true
}

// appendID appends the id whose key is key, as go-sdk writes it.
func appendID(dst []byte, key string) []byte {
	if key[0] == 's' {
		return jsonscan.AppendString(dst, key[1:])
	}
	return append(dst, key[1:]...)
}

// jsonString is s as a JSON string.
func jsonString(s string) []byte { return jsonscan.AppendString(nil, s) }
