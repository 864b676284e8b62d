package guard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentctl/agentctl/mcpserver/internal/jsonscan"
)

// Lines that are JSON but no JSON-RPC 2.0 message go-sdk v1.8.0 can read:
// go-sdk ends the connection on each (jsonrpc2.DecodeMessage fails, or its
// ioConn refuses the batch), so the guard answers them itself, with an
// Invalid Request error (-32600), and reads on. The checks below are the
// ones go-sdk's decoding makes, and JSON-RPC 2.0's where they are stricter
// (the method a string, params structured).

// codeInvalidRequest is JSON-RPC 2.0's code for JSON that is not a valid
// request.
const codeInvalidRequest = -32600

// maxDepth is go-sdk's bound of the nesting of arrays and objects
// (internal/json defaultMaxDepth): deeper input ends its connection.
const maxDepth = 1000

// tooDeep reports whether line nests arrays and objects deeper than
// maxDepth, counted as go-sdk counts them (internal/json checkMaxDepth):
// in one pass, without parsing, so that nothing recursive (or a scanner
// stack as deep as the line) ever meets it.
func tooDeep(line []byte) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range line {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > maxDepth {
				return true
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return false
}

// checkMessage reads one message of the client's, which is valid JSON, and
// says what is wrong with it ("" if nothing), and the id to answer it with
// (null unless it is a request with a valid id). The last of duplicate keys
// counts, and keys are compared decoded, as go-sdk decodes them.
func checkMessage(msg []byte) (id []byte, why string) {
	null := nullID
	var version, rawID, method, params, result, errObj []byte
	o := jsonscan.NewObject(msg)
	for o.Next() {
		switch string(key(o.Key())) { // no allocation: a switch on bytes
		case "jsonrpc":
			version = o.Value()
		case "id":
			rawID = o.Value()
		case "method":
			method = o.Value()
		case "params":
			params = o.Value()
		case "result":
			result = o.Value()
		case "error":
			errObj = o.Value()
		}
	}
	if !o.Done() {
		return null, "not a JSON object"
	}
	idOK := rawID == nil || validID(rawID)
	if method != nil && rawID != nil && idOK && !bytes.Equal(rawID, null) {
		id = rawID // a request's: its answer is an error
	} else {
		id = null
	}
	if !isString(version, "2.0") {
		if version == nil {
			return id, `no "jsonrpc": "2.0" member`
		}
		return id, fmt.Sprintf(`"jsonrpc" is %s, not "2.0"`, clip(version))
	}
	if !idOK {
		return null, fmt.Sprintf("id %s is neither a string nor a number", clip(rawID))
	}
	if method != nil {
		if !isString(method, "") {
			return id, fmt.Sprintf("method %s is not a string", clip(method))
		}
		// params null is taken as absent, as go-sdk takes it.
		if params != nil && params[0] != '{' && params[0] != '[' && !bytes.Equal(params, null) {
			return id, fmt.Sprintf("params %s is neither an object nor an array", clip(params))
		}
		return nil, ""
	}
	// No method: an answer of the client's to a request of the endpoint's.
	switch {
	case rawID == nil || bytes.Equal(rawID, null):
		return null, "no method, and no id to answer"
	case result == nil && errObj == nil:
		return null, "neither a method, nor a result or an error"
	case errObj != nil && !bytes.Equal(errObj, null) && !validError(errObj):
		return null, "error is not an object with an integer code and a string message"
	}
	return nil, ""
}

// nullID is the id of an answer to a message whose id cannot be read.
var nullID = []byte("null")

// key is a member's key decoded (empty if it is not a string); a key
// written without escapes, as nearly all are, is not copied.
func key(k []byte) []byte {
	if s, ok := jsonscan.PlainString(k); ok {
		return s
	}
	s, _ := jsonscan.String(k)
	return []byte(s)
}

// isString reports whether v is a JSON string, equal to want unless want
// is empty; one written without escapes is not decoded.
func isString(v []byte, want string) bool {
	if s, ok := jsonscan.PlainString(v); ok {
		return want == "" || string(s) == want
	}
	s, ok := jsonscan.String(v)
	return ok && (want == "" || s == want)
}

// validID reports whether raw is an id go-sdk reads: a string, a number a
// float64 holds, or null (no id).
func validID(raw []byte) bool {
	switch c := raw[0]; {
	case c == '"' || c == 'n':
		return true
	case c == '-' || c >= '0' && c <= '9':
		_, err := strconv.ParseFloat(string(raw), 64)
		return err == nil
	}
	return false
}

// validError reports whether raw is an error object go-sdk reads: its code
// an integer, its message a string.
func validError(raw []byte) bool {
	o := jsonscan.NewObject(raw)
	for o.Next() {
		v := o.Value()
		switch string(key(o.Key())) {
		case "code":
			if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
				return false
			}
		case "message":
			if !isString(v, "") && !bytes.Equal(v, nullID) {
				return false
			}
		}
	}
	return o.Done()
}

// clip is a value for a message: short values whole, long ones cut.
func clip(v []byte) string {
	if len(v) > 40 {
		return string(v[:37]) + "..."
	}
	return string(v)
}

// checkBatch says what is wrong with a batch ("" if nothing) that a session
// whose protocol version has batches may hand to go-sdk: empty, an invalid
// message in it, or an id used twice (go-sdk ends the connection on each).
// pending reports whether a request id is still unanswered.
func checkBatch(line []byte, pending func(key []byte) bool) string {
	var msgs []json.RawMessage
	if json.Unmarshal(line, &msgs) != nil {
		return "not a JSON array"
	}
	if len(msgs) == 0 {
		return "empty batch"
	}
	var buf [32]byte
	seen := map[string]bool{}
	for i, msg := range msgs {
		if _, why := checkMessage(msg); why != "" {
			return fmt.Sprintf("message %d of the batch: %s", i+1, why)
		}
		if k, kind := readRequest(buf[:0], msg); kind == request {
			if seen[string(k)] || pending(k) {
				return fmt.Sprintf("message %d of the batch: id %s is already in use", i+1, appendID(nil, string(k)))
			}
			seen[string(k)] = true
		}
	}
	return ""
}
