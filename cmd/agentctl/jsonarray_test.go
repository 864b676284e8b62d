package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestJSONArrayWriterStreams: the elements reach the writer before Close
// once [jsonArrayFlushSize] bytes of them are held (a listing of 10,000
// instances holds at most that and one record), a short array reaches it
// in one write, and the whole is the indented array encoding/json makes of
// the elements (HTML characters as they are).
func TestJSONArrayWriterStreams(t *testing.T) {
	indent := func(v any, prefix string) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent(prefix, "  ")
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	big := strings.Repeat("x", 5000)
	var many []map[string]any
	for i := range 40 {
		many = append(many, map[string]any{"i": i, "s": big})
	}
	for _, items := range [][]map[string]any{{}, {{"a": 1}}, {{"a": 1}, {"b": "<x&y>"}, {"c": []int{1, 2}}}, many} {
		out := &countingWriter{}
		w := newJSONArrayWriter(out)
		made := 0 // bytes of the array so far
		for i, it := range items {
			if err := w.Write(it); err != nil {
				t.Fatal(err)
			}
			made += len(strings.TrimSuffix(indent(it, "  "), "\n")) + len(",\n  ")
			if held := made - out.Len(); held >= jsonArrayFlushSize {
				t.Fatalf("element %d: the writer holds %d bytes, want under %d", i, held, jsonArrayFlushSize)
			}
		}
		if len(items) == len(many) && out.writes == 0 {
			t.Fatalf("%d elements of 5 kB reached the writer only at Close", len(items))
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if len(items) < len(many) && out.writes != 1 {
			t.Errorf("array of %d: %d writes, want 1", len(items), out.writes)
		}
		if got, want := out.String(), indent(items, ""); got != want {
			t.Errorf("array of %d:\n%s\nwant\n%s", len(items), got, want)
		}
	}
}

// countingWriter is a bytes.Buffer that counts the writes it gets.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes++
	return c.Buffer.Write(p)
}
