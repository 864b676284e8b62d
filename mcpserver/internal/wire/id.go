package wire

import (
	"encoding/json"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Request ids, as go-sdk v1.8.0 reads them: into a string or, for a
// number, a float64 whose integer part it keeps and writes back.

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
		if s, ok := PlainString(raw); ok {
			return append(append(dst, 's'), s...), true
		}
		s, ok := String(raw)
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

// AppendID appends the id whose key is key, as go-sdk writes it.
func AppendID(dst []byte, key string) []byte {
	if key[0] == 's' {
		return AppendString(dst, key[1:])
	}
	return append(dst, key[1:]...)
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

// Exact reports whether go-sdk writes the id or progress token raw back
// exactly as written: a string, or an integer of at most 2^53 in magnitude
// written without fraction or exponent. go-sdk reads numbers through a
// float64 and writes back its integer part (9007199254740993 comes back as
// 9007199254740992, 1.5 as 1, 1e3 as 1000).
func Exact(raw []byte) bool {
	if len(raw) > 0 && raw[0] == '"' {
		return true
	}
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 16 {
		return false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int64(c-'0')
	}
	return n <= 1<<53
}

// IDReader reads the top-level "id" member of a JSON object fed to it a
// piece at a time, without holding it: the id of a line over the size
// limit ([Lines.Skipped]), or of a line cut short or otherwise
// unreadable, so that the call it answers can fail. It reads what is there:
// an id written before the line broke is found, one after it is not.
type IDReader struct {
	depth       int
	inString    bool
	escaped     bool
	inKey       bool // reading a member name of the top-level object
	afterKey    bool // between a top-level member's name and its colon
	inValue     bool // in a top-level member's value
	isID        bool // ... and that member is "id"
	key         []byte
	id          []byte
	done, valid bool
}

// maxIDLen bounds an id the reader keeps.
const maxIDLen = 128

// Feed reads the next piece of the line.
func (s *IDReader) Feed(p []byte) {
	for _, c := range p {
		if s.done {
			return
		}
		if s.inString {
			if s.isID && s.inValue {
				s.keep(c)
			}
			switch {
			case s.escaped:
				s.escaped = false
			case c == '\\':
				s.escaped = true
			case c == '"':
				s.inString = false
				if s.inKey {
					s.inKey, s.afterKey = false, true
				} else if s.isID && s.inValue {
					s.finish()
				}
			default:
				if s.inKey && len(s.key) < 8 {
					s.key = append(s.key, c)
				}
			}
			continue
		}
		top := s.depth == 1
		switch c {
		case '"':
			s.inString = true
			switch {
			case top && !s.inValue && !s.afterKey:
				s.inKey, s.key = true, s.key[:0]
			case top && s.isID && s.inValue:
				s.keep(c)
			}
		case '{', '[':
			if top && s.isID && s.inValue {
				s.done = true // an id is no object or array
				return
			}
			s.depth++
		case '}', ']':
			if top && s.isID && s.inValue {
				s.finish()
			}
			s.depth--
			if s.depth <= 0 {
				s.done = true
			}
		case ':':
			if top && s.afterKey {
				s.afterKey, s.inValue = false, true
				s.isID = string(s.key) == "id"
			}
		case ',':
			if top {
				if s.isID && s.inValue {
					s.finish()
				}
				s.inValue, s.isID = false, false
			}
		case ' ', '\t', '\r', '\n':
			if top && s.isID && s.inValue && len(s.id) > 0 {
				s.finish()
			}
		default:
			if top && s.isID && s.inValue {
				s.keep(c)
			}
		}
	}
}

func (s *IDReader) keep(c byte) {
	if len(s.id) >= maxIDLen {
		s.done = true
		return
	}
	s.id = append(s.id, c)
}

func (s *IDReader) finish() { s.done, s.valid = true, len(s.id) > 0 }

// ID returns the id read, if a whole one was.
func (s *IDReader) ID() (jsonrpc.ID, bool) {
	if !s.valid {
		return jsonrpc.ID{}, false
	}
	var v any
	if json.Unmarshal(s.id, &v) != nil {
		return jsonrpc.ID{}, false
	}
	if f, ok := v.(float64); ok && f != float64(int64(f)) {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil || !id.IsValid() {
		return jsonrpc.ID{}, false
	}
	return id, true
}
