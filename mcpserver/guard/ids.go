package guard

import (
	"bytes"
	"strconv"

	"github.com/agentctl/agentctl/mcpserver/internal/wire"
)

// Request ids and progress tokens on the SDK path.
//
// go-sdk v1.8.0 reads a request id into a string or, for a number, a
// float64 whose integer part it keeps, and writes back what it kept:
// 12345678901234567890 came back as -9223372036854775808, 1.5 as 1, 1e2 as
// 100, "\u0061" as "a"; and it refuses a request whose id is one still in
// flight. It reads a progress token the same way. So the guard hands the SDK
// every request of the client's under an id of its own, the request's
// sequence number, and puts the client's id back, byte for byte, on the
// answer. A progress token the SDK would not write back as written (see
// [tokenCarried]) goes to the SDK as "agentctl-guard-N" (N the request's
// sequence number) and comes back in notifications/progress as the
// client's bytes. A cancellation names requests by value, as go-sdk would
// have matched them ([wire.AppendIDKey]: 1 and 1.0 are one id, "a" and "\u0061"
// too): it cancels every request in flight with that id, each under its
// own id. Answers of the client's to the SDK's requests (no method) pass
// unchanged: their ids are the SDK's.

// tokenPrefix starts the progress tokens the guard gives the SDK.
const tokenPrefix = "agentctl-guard-"

// sdkRequest is a request of the client's handed to the SDK under the id
// that is its key in [Guard.sdk].
type sdkRequest struct {
	// id is the client's id as written; token its progress token as written
	// when the SDK got the guard's instead ("" if not).
	id, token string
	// wait: the end of the input waits for its answer (not for a
	// subscriptions/listen); cancelled: the client cancelled it, its
	// answer is dropped; initialize: its answer says the session's version.
	wait, cancelled, initialize bool
}

// tokenCarried reports whether go-sdk writes the progress token tok back
// exactly as written: a string of printable ASCII without escapes (and
// without <, > and &, which an encoder may escape) that is not one of the
// guard's own, or an integer of at most 15 digits without sign of zero,
// fraction or exponent. Anything else that is no token (null, an object) is
// left alone: the SDK's to judge.
func tokenCarried(tok []byte) bool {
	switch c := tok[0]; {
	case c == '"':
		s, ok := wire.PlainString(tok)
		if !ok || bytes.HasPrefix(s, []byte(tokenPrefix)) {
			return false
		}
		for _, c := range s {
			if c > 0x7e || c == '<' || c == '>' || c == '&' {
				return false
			}
		}
		return true
	case c == '-' || c >= '0' && c <= '9':
		digits := tok
		if c == '-' {
			digits = digits[1:]
		}
		if len(digits) == 0 || len(digits) > 15 || digits[0] == '0' && (len(digits) > 1 || c == '-') {
			return false
		}
		for _, d := range digits {
			if d < '0' || d > '9' {
				return false
			}
		}
	}
	return true
}

// at is where sub, a slice of msg, starts in msg.
func at(msg, sub []byte) int { return cap(msg) - cap(sub) }

// appendToSDK appends the request m to dst as the SDK gets it: its id the
// guard's, seq, and its progress token the guard's if mapped.
func appendToSDK(dst []byte, m *wire.Message, seq uint64, mapToken bool) []byte {
	msg := m.Line
	idAt, tokAt := at(msg, m.ID), -1
	if mapToken {
		tokAt = at(msg, m.Token)
	}
	appendID := func(dst []byte) []byte { return strconv.AppendUint(dst, seq, 10) }
	appendTok := func(dst []byte) []byte {
		return append(strconv.AppendUint(append(append(dst, '"'), tokenPrefix...), seq, 10), '"')
	}
	if tokAt < 0 {
		dst = append(dst, msg[:idAt]...)
		dst = appendID(dst)
		return append(dst, msg[idAt+len(m.ID):]...)
	}
	first, firstLen, second, secondLen := idAt, len(m.ID), tokAt, len(m.Token)
	appendFirst, appendSecond := appendID, appendTok
	if tokAt < idAt {
		first, firstLen, second, secondLen = tokAt, len(m.Token), idAt, len(m.ID)
		appendFirst, appendSecond = appendTok, appendID
	}
	dst = append(dst, msg[:first]...)
	dst = appendFirst(dst)
	dst = append(dst, msg[first+firstLen:second]...)
	dst = appendSecond(dst)
	return append(dst, msg[second+secondLen:]...)
}

// guardSeq reads an id the guard gave the SDK (a sequence number).
func guardSeq(id []byte) (uint64, bool) {
	if len(id) == 0 || len(id) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range id {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

// guardToken reads a progress token the guard gave the SDK: the sequence
// number of its request.
func guardToken(tok []byte) (uint64, bool) {
	s, ok := wire.PlainString(tok)
	if !ok || !bytes.HasPrefix(s, []byte(tokenPrefix)) {
		return 0, false
	}
	return guardSeq(s[len(tokenPrefix):])
}

// replaceAt appends msg to dst with its slice old replaced by with.
func replaceAt(dst, msg, old []byte, with string) []byte {
	i := at(msg, old)
	dst = append(dst, msg[:i]...)
	dst = append(dst, with...)
	return append(dst, msg[i+len(old):]...)
}

// withID appends msg, a client's message whose id (or requestId) is the
// slice id, to dst with the guard's id seq in its place, and a newline.
func withID(dst, msg, id []byte, seq uint64) []byte {
	i := at(msg, id)
	dst = append(dst, msg[:i]...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, bytes.TrimRight(msg[i+len(id):], "\r\n")...)
	return append(dst, '\n')
}
