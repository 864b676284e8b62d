package instance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// JSON, edited in place.
//
// A client's JSON file is never decoded and encoded again as a whole: it is
// scanned for the byte ranges of its values, and only the range of the one
// entry agentctl adds, replaces or removes is changed. Everything else stays
// byte for byte: formatting, numbers as written (1e400,
// 12345678901234567890), escapes (a lone "\ud800"), even invalid UTF-8.

// jsonSpan is a JSON value's bytes, [start, end).
type jsonSpan struct {
	start, end int
	kind       byte // '{', '[', '"', or 0 for a literal or number
	members    []jsonMember
}

// jsonMember is an object's member: its name (decoded), where its quoted
// name starts, and its value.
type jsonMember struct {
	name     string
	keyStart int
	val      *jsonSpan
}

func (s *jsonSpan) member(name string) (int, *jsonMember) {
	for i := range s.members {
		if s.members[i].name == name {
			return i, &s.members[i]
		}
	}
	return -1, nil
}

// scanJSON checks that data is one JSON value, with no member name twice in
// one object, and returns its spans. Errors name the line and column.
func scanJSON(data []byte) (*jsonSpan, error) {
	// encoding/json's check gives the offset of a syntax error; a
	// RawMessage converts no number (1e400 is valid JSON).
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, jsonSyntax(data, err)
	}
	sc := jsonScanner{data: data}
	sc.ws()
	return sc.value()
}

// jsonScanner reads spans from JSON already known to be valid.
type jsonScanner struct {
	data []byte
	pos  int
}

func (sc *jsonScanner) ws() {
	for sc.pos < len(sc.data) {
		switch sc.data[sc.pos] {
		case ' ', '\t', '\n', '\r':
			sc.pos++
		default:
			return
		}
	}
}

func (sc *jsonScanner) value() (*jsonSpan, error) {
	s := &jsonSpan{start: sc.pos}
	if sc.pos >= len(sc.data) {
		return nil, errors.New("unexpected end of JSON")
	}
	switch c := sc.data[sc.pos]; c {
	case '{':
		s.kind = '{'
		sc.pos++
		sc.ws()
		for sc.pos < len(sc.data) && sc.data[sc.pos] != '}' {
			keyStart := sc.pos
			sc.str()
			var name string
			_ = json.Unmarshal(sc.data[keyStart:sc.pos], &name)
			if i, _ := s.member(name); i >= 0 {
				line, col := lineCol(sc.data, int64(keyStart)+1) // lineCol counts as a syntax error's offset does
				return nil, fmt.Errorf("line %d, column %d: the member %q comes twice in one object; keep one of them", line, col, name)
			}
			sc.ws()
			sc.pos++ // ':'
			sc.ws()
			v, err := sc.value()
			if err != nil {
				return nil, err
			}
			s.members = append(s.members, jsonMember{name: name, keyStart: keyStart, val: v})
			sc.ws()
			if sc.pos < len(sc.data) && sc.data[sc.pos] == ',' {
				sc.pos++
				sc.ws()
			}
		}
		sc.pos++ // '}'
	case '[':
		s.kind = '['
		sc.pos++
		sc.ws()
		for sc.pos < len(sc.data) && sc.data[sc.pos] != ']' {
			if _, err := sc.value(); err != nil {
				return nil, err
			}
			sc.ws()
			if sc.pos < len(sc.data) && sc.data[sc.pos] == ',' {
				sc.pos++
				sc.ws()
			}
		}
		sc.pos++ // ']'
	case '"':
		s.kind = '"'
		sc.str()
	default:
		for sc.pos < len(sc.data) && !bytes.ContainsRune([]byte(" \t\r\n,]}"), rune(sc.data[sc.pos])) {
			sc.pos++
		}
	}
	s.end = sc.pos
	return s, nil
}

// str moves past the string at pos.
func (sc *jsonScanner) str() {
	sc.pos++ // '"'
	for sc.pos < len(sc.data) {
		switch sc.data[sc.pos] {
		case '\\':
			sc.pos += 2
		case '"':
			sc.pos++
			return
		default:
			sc.pos++
		}
	}
}

// decodeJSON decodes data (one valid JSON value) keeping member order and
// numbers as written, as [parseOrderedJSON] does, for comparisons.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return decodeOrdered(dec, data)
}

// lineIndent is the indentation of the line holding offset off, and
// whether off is the first thing on it.
func lineIndent(data []byte, off int) (string, bool) {
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	i := start
	for i < off && (data[i] == ' ' || data[i] == '\t') {
		i++
	}
	return string(data[start:i]), i == off
}

// encodeAt encodes v as JSON indented by unit per level, for a place
// whose line is indented by ind.
func encodeAt(v any, ind, unit string) ([]byte, error) {
	b, err := encodeOrderedJSON(v, unit)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.ReplaceAll(b, []byte("\n"), []byte("\n"+ind)), nil
}

func splice(data []byte, start, end int, with []byte) []byte {
	out := make([]byte, 0, len(data)-(end-start)+len(with))
	out = append(out, data[:start]...)
	out = append(out, with...)
	return append(out, data[end:]...)
}

// jsonInsert adds the member name: v at the end of the object obj in data,
// on a line of its own indented as its last member is (or one unit deeper
// than the object's line, in an empty object), or after it on the same
// line when the object is written on one line.
func jsonInsert(data []byte, obj *jsonSpan, name string, v any, unit string) ([]byte, error) {
	var key bytes.Buffer
	writeJSONString(&key, name)
	if len(obj.members) == 0 {
		ind, _ := lineIndent(data, obj.start)
		val, err := encodeAt(v, ind+unit, unit)
		if err != nil {
			return nil, err
		}
		text := "\n" + ind + unit + key.String() + ": " + string(val) + "\n" + ind
		return splice(data, obj.start+1, obj.end-1, lineEnds(data, []byte(text))), nil
	}
	last := obj.members[len(obj.members)-1]
	ind, own := lineIndent(data, last.keyStart)
	sep := ",\n" + ind
	if !own {
		ind, _ = lineIndent(data, obj.start)
		sep = ", "
	}
	val, err := encodeAt(v, ind, unit)
	if err != nil {
		return nil, err
	}
	return splice(data, last.val.end, last.val.end, lineEnds(data, []byte(sep+key.String()+": "+string(val)))), nil
}

// lineEnds gives text, to be put into data, data's line ends: \r\n when
// data has them.
func lineEnds(data, text []byte) []byte {
	if !bytes.Contains(data, []byte("\r\n")) {
		return text
	}
	return bytes.ReplaceAll(text, []byte("\n"), []byte("\r\n"))
}

// jsonRemove takes member i out of the object obj in data, with the comma
// and space that separate it from its neighbour; the last member leaves {}.
func jsonRemove(data []byte, obj *jsonSpan, i int) []byte {
	switch {
	case len(obj.members) == 1:
		return splice(data, obj.start+1, obj.end-1, nil)
	case i > 0:
		return splice(data, obj.members[i-1].val.end, obj.members[i].val.end, nil)
	default:
		return splice(data, obj.members[0].keyStart, obj.members[1].keyStart, nil)
	}
}

// checkJSONEdit makes sure that next holds what old holds with only the
// member name of the object key changed to v (removed when v is nil): a
// guard against an edit that would change anything else.
func checkJSONEdit(path string, old, next []byte, key, name string, v any) error {
	want, err1 := decodeJSON(old)
	got, err2 := decodeJSON(next)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("%s: %w; nothing was changed", path, err)
	}
	if top, ok := want.(*jsonObject); ok {
		servers, ok := memberObject(top, key)
		if !ok {
			servers = newJSONObject()
			top.set(key, servers)
		}
		if v == nil {
			servers.remove(name)
		} else {
			servers.set(name, v)
		}
	}
	if !sameValue(want, got) {
		return fmt.Errorf("%s: agentctl's edit would change more than its entry %s.%s (a bug in agentctl); nothing was changed", path, key, name)
	}
	return nil
}
