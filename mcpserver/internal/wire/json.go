package wire

// Reading the top-level members of a JSON object without decoding or
// allocating: where each member's key and value are, which encoding/json
// would decode in full. It assumes valid JSON where it matters (every line
// is checked with [Valid] first) and reports false on anything it does not
// expect.

import (
	"encoding/json"

	sdkjson "github.com/segmentio/encoding/json"
)

// Valid reports whether line is one JSON value, as encoding/json.Valid
// does (FuzzValid pins the two together), with the validator of the
// decoder go-sdk reads messages with (segmentio/encoding), which takes a
// quarter of the time; for a line nested deeper than [MaxDepth], whose
// recursion would take a stack as deep as the line, with encoding/json's.
func Valid(line []byte) bool {
	if TooDeep(line) {
		return json.Valid(line)
	}
	return ValidShallow(line)
}

// ValidShallow is [Valid] of a line [TooDeep] has said false of, which
// the caller need not scan again (a long line with many brackets is
// scanned byte by byte).
func ValidShallow(line []byte) bool { return sdkjson.Valid(line) }

// Object walks the members of a JSON object in order. Reading a member's
// value is optional: a value not read is skipped by the next call to
// [Object.Next], so a caller that stops at the keys it needs never scans
// the values after them.
//
//	o := wire.NewObject(b)
//	for o.Next() {
//		if wire.KeyIs(o.Key(), "id") {
//			id := o.Value()
//		}
//	}
//	ok := o.Done() // the whole object was read and well-formed
type Object struct {
	b   []byte
	i   int // the next byte to read
	key []byte
	// val is the value's start; valEnd its end once read (0: not read).
	val, valEnd int
	state       uint8
	// depth is how deep the values read or skipped so far nest.
	depth int
}

const (
	stateStart uint8 = iota
	stateMember
	stateEnd // the closing brace was read
	stateBad
)

// NewObject starts reading b, which should hold a JSON object.
func NewObject(b []byte) Object {
	return Object{b: b}
}

// Next moves to the next member; false when there is none (the object ended,
// or is malformed: see [Object.Done]).
func (o *Object) Next() bool {
	b := o.b
	switch o.state {
	case stateStart:
		i := skipSpace(b, 0)
		if i >= len(b) || b[i] != '{' {
			o.state = stateBad
			return false
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			o.state = stateEnd
			return false
		}
		o.i = i
	case stateMember:
		end := o.valEnd
		if end == 0 {
			if end = o.skip(); end < 0 {
				return false
			}
		}
		i := skipSpace(b, end)
		if i >= len(b) {
			o.state = stateBad
			return false
		}
		switch b[i] {
		case ',':
			o.i = skipSpace(b, i+1)
		case '}':
			o.state = stateEnd
			return false
		default:
			o.state = stateBad
			return false
		}
	default:
		return false
	}
	i := o.i
	if i >= len(b) || b[i] != '"' {
		o.state = stateBad
		return false
	}
	end := skipString(b, i)
	if end < 0 {
		o.state = stateBad
		return false
	}
	o.key = b[i:end]
	i = skipSpace(b, end)
	if i >= len(b) || b[i] != ':' {
		o.state = stateBad
		return false
	}
	o.val, o.valEnd = skipSpace(b, i+1), 0
	o.state = stateMember
	return true
}

// Key is the current member's key as written: quotes included, escapes
// left alone.
func (o *Object) Key() []byte { return o.key }

// Value reads the current member's value; nil if it is malformed.
func (o *Object) Value() []byte {
	if o.valEnd == 0 {
		end := o.skip()
		if end < 0 {
			return nil
		}
		o.valEnd = end
	}
	return o.b[o.val:o.valEnd]
}

// skip finds the end of the current member's value (-1: malformed).
func (o *Object) skip() int {
	end, depth := skipValue(o.b, o.val)
	if end < 0 {
		o.state = stateBad
	}
	o.depth = max(o.depth, depth)
	return end
}

// Done reports whether the object was read to its end and well-formed.
func (o *Object) Done() bool { return o.state == stateEnd }

// EachMember calls f with each member of the object b: the key as written
// (quotes included, escapes left alone) and the value's bytes. It stops
// early when f returns false. It reports whether b is an object it read to
// the end, every member accepted by f.
func EachMember(b []byte, f func(key, value []byte) bool) bool {
	o := NewObject(b)
	for o.Next() {
		v := o.Value()
		if v == nil || !f(o.key, v) {
			return false
		}
	}
	return o.Done()
}

// EachElement calls f with each element of the array b (its bytes). It
// stops early when f returns false. It reports whether b is an array it
// read to the end, every element accepted by f. The input is valid JSON
// (as for [EachMember]).
func EachElement(b []byte, f func(value []byte) bool) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return skipSpace(b, i+1) == len(b)
	}
	for i < len(b) {
		e, _ := skipValue(b, i)
		if e < 0 || !f(b[i:e]) {
			return false
		}
		i = skipSpace(b, e)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
	return false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] (a
// quote), or -1.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// skipValue returns the index after the value starting at b[i], or -1,
// and how deep the value nests arrays and objects (0 for neither).
func skipValue(b []byte, i int) (end, deepest int) {
	if i >= len(b) {
		return -1, 0
	}
	switch b[i] {
	case '"':
		return skipString(b, i), 0
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				e := skipString(b, i)
				if e < 0 {
					return -1, deepest
				}
				i = e - 1
			case '{', '[':
				depth++
				deepest = max(deepest, depth)
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, deepest
				}
			}
		}
		return -1, deepest
	default: // a number, true, false or null
		s := i
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if i == s {
					return -1, 0
				}
				return i, 0
			}
			i++
		}
		if i == s {
			return -1, 0
		}
		return i, 0
	}
}

// PlainString returns the contents of a JSON string value without escapes
// (the common case for names, ids and versions); ok is false for anything
// else.
func PlainString(v []byte) (s []byte, ok bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return nil, false
	}
	s = v[1 : len(v)-1]
	for _, c := range s {
		if c == '\\' || c == '"' || c < 0x20 {
			return nil, false
		}
	}
	return s, true
}

// String returns the contents of the JSON string v, escapes decoded; ok is
// false if v is not a string.
func String(v []byte) (string, bool) {
	if s, ok := PlainString(v); ok {
		return string(s), true
	}
	var s string
	if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// KeyIs reports whether a member's key, as [Object.Key] gives it, is name
// (written without escapes).
func KeyIs(key []byte, name string) bool {
	return len(key) == len(name)+2 && string(key[1:len(key)-1]) == name
}

// Key is a member's key decoded, as go-sdk compares keys (empty if it is
// not a string); a key written without escapes, as nearly all are, is not
// copied.
func Key(k []byte) []byte {
	if s, ok := PlainString(k); ok {
		return s
	}
	s, _ := String(k)
	return []byte(s)
}

// IsString reports whether v is a JSON string, equal to want unless want
// is empty; one written without escapes is not decoded.
func IsString(v []byte, want string) bool {
	if s, ok := PlainString(v); ok {
		return want == "" || string(s) == want
	}
	s, ok := String(v)
	return ok && (want == "" || s == want)
}

// AppendString appends s as a JSON string.
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}
