package wire

import (
	"bytes"
	"fmt"
	"strconv"
)

// Kind is what a message is to the endpoint.
type Kind uint8

const (
	Other        Kind = iota // nothing to answer: a notification, an answer, no JSON-RPC
	Request                  // a request to be answered
	Cancellation             // notifications/cancelled: its request then gets no answer
	MisplacedID              // notifications/cancelled with an id of its own: an invalid request
)

// go-sdk v1.8.0's own error codes (internal/jsonrpc2/wire.go), which its
// internal package keeps from us; JSON-RPC's are jsonrpc.Code*.
const (
	CodeUnknown       = -32001 // ErrUnknown
	CodeClientClosing = -32003 // ErrClientClosing
	CodeServerClosing = -32004 // ErrServerClosing: a call a closing server will not answer
	CodeRejected      = -32005 // ErrRejected: "rejected by transport"
)

// MaxDepth is go-sdk's bound of the nesting of arrays and objects
// (internal/json defaultMaxDepth): deeper input ends its connection.
const MaxDepth = 1000

// Message is one JSON-RPC message, read once ([Message.Parse]): slices of
// its line. Keys are compared decoded and the last of duplicate keys
// counts, as go-sdk reads them.
type Message struct {
	Line []byte
	// The top-level members as written; nil when absent.
	Version, ID, Method, Params, Result, Error []byte
	// Name is the method decoded; nil when it is no string.
	Name []byte
	Kind Kind
	// Key is the key ([AppendIDKey]) of a request's id or of a
	// cancellation's requestId.
	Key []byte
	// Token is a request's params._meta.progressToken as written; nil if
	// it has none.
	Token []byte
	// RequestID and Reason are a cancellation's, as written.
	RequestID, Reason []byte
	// Object: the line is a JSON object, read to its end. Depth is how
	// deep it nests arrays and objects (1: a flat object).
	Object bool
	Depth  int
	// Plain: an object of JSON-RPC's members only, their keys written
	// without escapes, "jsonrpc" written "2.0" and the method a string
	// without escapes: what the fast lane reads by itself.
	Plain bool
	// Answer: a result or an error ([Message.Envelope]).
	Answer bool
	key    [32]byte // Key's room
}

// Parse reads line, which is valid JSON, into m (reused: nothing is
// allocated for a message without escapes).
func (m *Message) Parse(line []byte) {
	*m = Message{Line: line, Plain: true}
	o := NewObject(line)
	for o.Next() {
		k := o.Key()
		known := true
		switch string(Key(k)) { // no allocation: a switch on bytes
		case "jsonrpc":
			m.Version = o.Value()
		case "id":
			m.ID = o.Value()
		case "method":
			m.Method = o.Value()
		case "params":
			m.Params = o.Value()
		case "result":
			m.Result = o.Value()
		case "error":
			m.Error = o.Value()
		default:
			known = false
		}
		if !known || bytes.IndexByte(k, '\\') >= 0 {
			m.Plain = false
		}
	}
	m.Object, m.Depth = o.Done(), 1+o.depth
	if m.Method != nil {
		s, plain := PlainString(m.Method)
		if !plain {
			if d, ok := String(m.Method); ok {
				s = []byte(d)
			}
		}
		m.Name, m.Plain = s, m.Plain && plain
	}
	m.Plain = m.Plain && m.Object && string(m.Version) == `"2.0"`
	switch cancel := string(m.Name) == "notifications/cancelled"; {
	case m.Name == nil:
		// An answer, or no JSON-RPC: the SDK's to judge.
	case m.ID != nil && cancel:
		m.Kind = MisplacedID
	case m.ID != nil:
		if key, ok := AppendIDKey(m.key[:0], m.ID); ok {
			m.Kind, m.Key, m.Token = Request, key, progressToken(m.Params)
		}
	case cancel:
		p := NewObject(m.Params)
		for p.Next() {
			switch string(Key(p.Key())) {
			case "requestId":
				m.RequestID = p.Value()
			case "reason":
				m.Reason = p.Value()
			}
		}
		if key, ok := AppendIDKey(m.key[:0], m.RequestID); ok {
			m.Kind, m.Key = Cancellation, key
		}
	}
}

var (
	progressTokenKey = []byte("progressToken")
	escapeMark       = []byte(`\u`)
	progressMethod   = []byte(`"notifications/progress"`)
)

// progressToken is params._meta.progressToken as written, the last of
// duplicate keys; nil if there is none. Params that hold neither the key
// nor a \u escape (which could spell it) are not scanned.
func progressToken(params []byte) []byte {
	if params == nil || !bytes.Contains(params, progressTokenKey) && !bytes.Contains(params, escapeMark) {
		return nil
	}
	var meta, tok []byte
	o := NewObject(params)
	for o.Next() {
		if string(Key(o.Key())) == "_meta" {
			meta = o.Value()
		}
	}
	o = NewObject(meta)
	for o.Next() {
		if string(Key(o.Key())) == "progressToken" {
			tok = o.Value()
		}
	}
	return tok
}

// Envelope reads msg, a message the endpoint writes, into m: its id,
// method and whether it is an answer, up to its id and its result or error
// (the writers put "id" first), never a result's value; an error's value,
// and a notifications/progress's params and their progressToken (Token).
func (m *Message) Envelope(msg []byte) {
	*m = Message{Line: msg}
	o := NewObject(msg)
	for o.Next() {
		switch k := o.Key(); {
		case KeyIs(k, "id"):
			m.ID = o.Value()
		case KeyIs(k, "method"):
			if m.Method = o.Value(); !bytes.Equal(m.Method, progressMethod) {
				return // a request or notification of the endpoint's
			}
		case KeyIs(k, "params"):
			m.Params = o.Value()
		case KeyIs(k, "result"):
			m.Answer = true
		case KeyIs(k, "error"):
			if !m.Answer {
				m.Error = o.Value()
			}
			m.Answer = true
		}
		if m.Answer && m.ID != nil && m.Method == nil {
			return
		}
	}
	p := NewObject(m.Params)
	for m.Method != nil && p.Next() {
		if KeyIs(p.Key(), "progressToken") {
			m.Token = p.Value()
			return
		}
	}
}

var openBrace, openBracket = []byte("{"), []byte("[")

// TooDeep reports whether line nests arrays and objects deeper than
// MaxDepth, counted as go-sdk counts them (internal/json checkMaxDepth):
// in one pass, without parsing, so that nothing recursive (or a scanner
// stack as deep as the line) ever meets it.
func TooDeep(line []byte) bool {
	// No deeper than it has brackets, strings' included: most lines are
	// told at once (bytes.Count is vectorized), without the scan.
	if len(line) <= MaxDepth || bytes.Count(line, openBrace)+bytes.Count(line, openBracket) <= MaxDepth {
		return false
	}
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
			if depth++; depth > MaxDepth {
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

// Null is the id of an answer to a message whose id cannot be read.
var Null = []byte("null")

// Check says what is wrong with a message of the client's ("" if nothing)
// that is JSON but no JSON-RPC 2.0 message go-sdk v1.8.0 reads (it would
// end the connection), and the id to answer it with (null unless it is a
// request with a valid id). The checks are go-sdk's decoding's, and
// JSON-RPC 2.0's where they are stricter (the method a string, params
// structured).
func (m *Message) Check() (id []byte, why string) {
	if !m.Object {
		return Null, "not a JSON object"
	}
	rawID, method, params := m.ID, m.Method, m.Params
	idOK := rawID == nil || validID(rawID)
	if method != nil && rawID != nil && idOK && !bytes.Equal(rawID, Null) {
		id = rawID // a request's: its answer is an error
	} else {
		id = Null
	}
	if !IsString(m.Version, "2.0") {
		if m.Version == nil {
			return id, `no "jsonrpc": "2.0" member`
		}
		return id, fmt.Sprintf(`"jsonrpc" is %s, not "2.0"`, clip(m.Version))
	}
	if !idOK {
		return Null, fmt.Sprintf("id %s is neither a string nor a number", clip(rawID))
	}
	if method != nil {
		if m.Name == nil {
			return id, fmt.Sprintf("method %s is not a string", clip(method))
		}
		// params null is taken as absent, as go-sdk takes it.
		if params != nil && params[0] != '{' && params[0] != '[' && !bytes.Equal(params, Null) {
			return id, fmt.Sprintf("params %s is neither an object nor an array", clip(params))
		}
		return nil, ""
	}
	// No method: an answer of the client's to a request of the endpoint's.
	switch {
	case rawID == nil || bytes.Equal(rawID, Null):
		return Null, "no method, and no id to answer"
	case m.Result == nil && m.Error == nil:
		return Null, "neither a method, nor a result or an error"
	case m.Error != nil && !bytes.Equal(m.Error, Null) && !validError(m.Error):
		return Null, "error is not an object with an integer code and a string message"
	}
	return nil, ""
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
	o := NewObject(raw)
	for o.Next() {
		v := o.Value()
		switch string(Key(o.Key())) {
		case "code":
			if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
				return false
			}
		case "message":
			if !IsString(v, "") && !bytes.Equal(v, Null) {
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
