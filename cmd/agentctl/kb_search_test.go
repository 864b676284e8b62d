package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/mcpserver/kb"
)

// TestKBSearchIgnoredWords: a query of more words than a search looks for
// is searched for its rarest, and kb search names the others on stderr
// (the JSON lists them as "ignored").
func TestKBSearchIgnoredWords(t *testing.T) {
	f := newTestFactory(t)
	dir := filepath.Join(f.dir, "kb")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var common []string
	for i := range kb.MaxQueryTerms + 2 {
		common = append(common, fmt.Sprintf("w%03d", i))
	}
	for name, content := range map[string]string{"a.md": strings.Join(common, " "), "b.md": strings.Join(common, " "), "target.md": "zebra"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := &KBSearchOptions{IO: f.IOStreams, StateDir: f.Config.StateDir, RefreshInterval: func() (time.Duration, error) { return time.Hour, nil },
		Dir: dir, Query: strings.Join(common, " ") + " zebra", Limit: 10, Output: formatTable}
	if err := kbSearchRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(f.out.String(), "target\t") {
		t.Errorf("stdout %q: want target first", f.out.String())
	}
	want := fmt.Sprintf("Note: the query has more than %d different words; searched for the %d rarest, not for: w063, w064, w065.\n", kb.MaxQueryTerms, kb.MaxQueryTerms)
	if f.errOut.String() != want {
		t.Errorf("stderr %q, want %q", f.errOut.String(), want)
	}
	f.out.Reset()
	f.errOut.Reset()
	opts.Output = formatJSON
	if err := kbSearchRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.out.String(), `"ignored": [`) || f.errOut.Len() != 0 {
		t.Errorf("JSON %q, stderr %q", f.out.String(), f.errOut.String())
	}
}

// TestKBSearchTerminalText: a title or snippet holding a terminal escape
// sequence is printed with it escaped (it shows, and does nothing), in the
// table and the tab-separated output; -o json gives the text exactly.
func TestKBSearchTerminalText(t *testing.T) {
	f := newTestFactory(t)
	dir := filepath.Join(f.dir, "kb")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const title, body = "Evil \x1b]0;owned\x07title", "zebra \x1b[2J\x1b[31mred\u202e text"
	if err := os.WriteFile(filepath.Join(dir, "evil.md"), []byte("# "+title+"\n\n"+body+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := &KBSearchOptions{IO: f.IOStreams, StateDir: f.Config.StateDir, RefreshInterval: func() (time.Duration, error) { return time.Hour, nil },
		Dir: dir, Query: "zebra", Limit: 10, Output: formatTable}
	if err := kbSearchRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	want := `evil	Evil \x1b]0;owned\x07title	` // the score, then the snippet
	if got := f.out.String(); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, `zebra \x1b[2J\x1b[31mred\u202e text`+"\n") ||
		strings.ContainsAny(got, "\x1b\x07\u202e") {
		t.Errorf("stdout %q: want the escapes shown as %q", got, want)
	}
	f.out.Reset()
	opts.Output = formatJSON
	if err := kbSearchRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var got kb.SearchOutput
	if err := json.Unmarshal(f.out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Results) != 1 || got.Results[0].Title != title || !strings.HasSuffix(got.Results[0].Snippet, body) {
		t.Errorf("JSON %+v: want title %q and a snippet ending %q, exactly", got.Results, title, body)
	}
}
