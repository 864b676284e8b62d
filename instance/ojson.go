package instance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// jsonObject is a JSON object that keeps its members' order, so that a
// user's file is written back with its keys where they were.
type jsonObject struct {
	keys []string
	vals map[string]any // *jsonObject, []any, json.Number, string, bool or nil
}

func newJSONObject() *jsonObject { return &jsonObject{vals: map[string]any{}} }

func (o *jsonObject) get(k string) (any, bool) { v, ok := o.vals[k]; return v, ok }

// set replaces k's value in place, or appends k.
func (o *jsonObject) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *jsonObject) remove(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	for i, key := range o.keys {
		if key == k {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			break
		}
	}
}

// jsonSyntax is err, a JSON decode error of data, with the line and column
// of a syntax error and what the clients' own readers accept that JSON
// does not (comments, a comma before a closing bracket).
func jsonSyntax(data []byte, err error) error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return err
	}
	line, col := lineCol(data, se.Offset)
	msg := se.Error()
	switch {
	case hasJSONComment(data):
		msg += "; the file has comments (JSON with comments), which agentctl does not edit"
	case se.Offset >= 1 && int(se.Offset) <= len(data) && (data[se.Offset-1] == '}' || data[se.Offset-1] == ']') &&
		bytes.HasSuffix(bytes.TrimRight(data[:se.Offset-1], " \t\r\n"), []byte(",")):
		msg += "; a comma before the closing bracket (a trailing comma), which JSON does not allow: remove it"
	}
	return fmt.Errorf("line %d, column %d: %s", line, col, msg)
}

// parseOrderedJSON reads one JSON value, keeping object member order and
// numbers as written. A syntax error names the line and column.
func parseOrderedJSON(data []byte) (any, error) {
	// encoding/json's own check gives the offset of a syntax error.
	var probe any
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, jsonSyntax(data, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return decodeOrdered(dec, data)
}

// decodeOrdered reads the value dec is at. A member name that comes twice
// in one object is an error: the file would be written back with one of
// them only, and which one its client reads is the client's choice.
func decodeOrdered(dec *json.Decoder, data []byte) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := newJSONObject()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				if _, dup := o.get(k); dup {
					// The offset is past the name's closing quote: point
					// at its opening one.
					off := dec.InputOffset()
					if i := bytes.LastIndexByte(data[:max(off-1, 0)], '"'); i >= 0 {
						off = int64(i)
					}
					line, col := lineCol(data, off+1) // lineCol counts as a syntax error's offset does
					return nil, fmt.Errorf("line %d, column %d: the member %q comes twice in one object; keep one of them", line, col, k)
				}
				v, err := decodeOrdered(dec, data)
				if err != nil {
					return nil, err
				}
				o.set(k, v)
			}
			_, err := dec.Token() // '}'
			return o, err
		case '[':
			list := []any{}
			for dec.More() {
				v, err := decodeOrdered(dec, data)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := dec.Token() // ']'
			return list, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil
	}
}

// encodeOrderedJSON writes v indented by indent per level, with a final newline.
func encodeOrderedJSON(v any, indent string) ([]byte, error) {
	var b bytes.Buffer
	if err := writeOrdered(&b, v, indent, 0); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

func writeOrdered(w *bytes.Buffer, v any, indent string, depth int) error {
	nl := func(d int) {
		w.WriteByte('\n')
		w.WriteString(strings.Repeat(indent, d))
	}
	switch t := v.(type) {
	case *jsonObject:
		if len(t.keys) == 0 {
			w.WriteString("{}")
			return nil
		}
		w.WriteByte('{')
		for i, k := range t.keys {
			if i > 0 {
				w.WriteByte(',')
			}
			nl(depth + 1)
			writeJSONString(w, k)
			w.WriteString(": ")
			if err := writeOrdered(w, t.vals[k], indent, depth+1); err != nil {
				return err
			}
		}
		nl(depth)
		w.WriteByte('}')
	case []any:
		if len(t) == 0 {
			w.WriteString("[]")
			return nil
		}
		w.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				w.WriteByte(',')
			}
			nl(depth + 1)
			if err := writeOrdered(w, e, indent, depth+1); err != nil {
				return err
			}
		}
		nl(depth)
		w.WriteByte(']')
	case string:
		writeJSONString(w, t)
	case json.Number:
		w.WriteString(t.String())
	case bool, nil:
		b, _ := json.Marshal(t)
		w.Write(b)
	default:
		return fmt.Errorf("cannot write %T as JSON", v)
	}
	return nil
}

// writeJSONString writes s as a JSON string, leaving <, > and & as they are.
func writeJSONString(w *bytes.Buffer, s string) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	w.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// jsonIndent is the indentation of the file's first indented line, or two
// spaces.
func jsonIndent(data []byte) string {
	for _, line := range strings.Split(string(data), "\n")[1:] {
		trimmed := strings.TrimLeft(line, " \t")
		if n := len(line) - len(trimmed); n > 0 && trimmed != "" {
			return line[:n]
		}
	}
	return "  "
}

// lineCol is the 1-based line and column of byte offset off in data.
func lineCol(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	return line, max(col, 1)
}

// hasJSONComment reports whether data has a // or /* outside strings.
func hasJSONComment(data []byte) bool {
	inStr, esc := false, false
	for i, c := range data {
		switch {
		case inStr && esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case !inStr && c == '/' && i+1 < len(data) && (data[i+1] == '/' || data[i+1] == '*'):
			return true
		}
	}
	return false
}
