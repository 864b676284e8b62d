package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestJSONArrayWriterStreams: each element reaches the writer when it is
// written, not at Close (a listing of 10,000 instances holds one record at
// a time), and the whole is the indented array encoding/json makes of them
// (HTML characters as they are).
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
	for _, items := range [][]map[string]any{{}, {{"a": 1}}, {{"a": 1}, {"b": "<x&y>"}, {"c": []int{1, 2}}}} {
		var out bytes.Buffer
		w := newJSONArrayWriter(&out)
		for i, it := range items {
			before := out.Len()
			if err := w.Write(it); err != nil {
				t.Fatal(err)
			}
			if got, one := out.String()[before:], strings.TrimSuffix(indent(it, "  "), "\n"); !strings.HasSuffix(got, one) {
				t.Fatalf("element %d: the writer got %q when it was written, want it to end with %q", i, got, one)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got, want := out.String(), indent(items, ""); got != want {
			t.Errorf("array of %d:\n%s\nwant\n%s", len(items), got, want)
		}
	}
}
