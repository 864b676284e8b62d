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
)

// TestKBIndexProgress: a progress bar on a terminal's stderr, nothing there
// off a terminal; the summary on stdout either way.
func TestKBIndexProgress(t *testing.T) {
	for _, tty := range []bool{true, false} {
		f := newTestFactory(t)
		dir := filepath.Join(f.dir, "kb")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range 300 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("c%d.md", i)), []byte("word"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		f.IOStreams.SetStderrTTY(tty)
		opts := &KBIndexOptions{IO: f.IOStreams, StateDir: f.Config.StateDir, Dir: dir, Output: formatTable}
		if err := kbIndexRun(context.Background(), opts); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(f.out.String(), "concepts\t300\n") {
			t.Errorf("tty %v: stdout %q", tty, f.out.String())
		}
		got := f.errOut.String()
		if tty && (!strings.Contains(got, "\rindexing "+dir+" [") || !strings.HasSuffix(got, "] 300/300\n")) {
			t.Errorf("progress on a terminal: %q", got)
		}
		if !tty && got != "" {
			t.Errorf("off a terminal, stderr %q", got)
		}
	}
}

// TestKBIndexProgressThenSummary: on a terminal, where stdout and stderr
// share the screen, the summary starts on a line of its own after the
// progress bar's (one buffer for both streams, as a terminal shows them).
func TestKBIndexProgressThenSummary(t *testing.T) {
	f := newTestFactory(t, "NO_COLOR=1")
	dir := filepath.Join(f.dir, "kb")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("c%d.md", i)), []byte("word"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var screen strings.Builder
	f.IOStreams.Out, f.IOStreams.ErrOut = &screen, &screen
	f.IOStreams.SetStdoutTTY(true)
	f.IOStreams.SetStderrTTY(true)
	opts := &KBIndexOptions{IO: f.IOStreams, StateDir: f.Config.StateDir, Dir: dir, Output: formatTable}
	if err := kbIndexRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if got := screen.String(); !strings.Contains(got, "] 3/3\nconcepts:") {
		t.Errorf("the terminal shows %q; want the bar's line ended before the summary", got)
	}
}

// TestKBIndexWarnsSkipped: kb index counts what it did not index, in its
// summary and its JSON, and names the first few on stderr: concepts over
// --max, and (unless this is root, who reads everything) files and folders
// it may not read.
func TestKBIndexWarnsSkipped(t *testing.T) {
	f := newTestFactory(t)
	dir := filepath.Join(f.dir, "kb")
	if err := os.MkdirAll(filepath.Join(dir, "locked"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"a.md": "alpha", "secret.md": "wombat", "locked/x.md": "x"}
	for i := range 7 {
		files[fmt.Sprintf("big%d.md", i)] = strings.Repeat("elephant ", 20)
	}
	old := time.Now().Add(-time.Hour) // else read again: modified as they were read
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(dir, name), old, old); err != nil {
			t.Fatal(err)
		}
	}
	root := os.Geteuid() == 0
	if !root {
		for _, p := range []string{"secret.md", "locked"} {
			if err := os.Chmod(filepath.Join(dir, p), 0); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(filepath.Join(dir, p), 0o755) })
		}
	}
	opts := &KBIndexOptions{IO: f.IOStreams, StateDir: f.Config.StateDir, Dir: dir, MaxBytes: 100, Output: formatTable}
	if err := kbIndexRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"too_large\t7\n", "max_bytes\t100\n"} {
		if !strings.Contains(f.out.String(), want) {
			t.Errorf("summary %q: no %q", f.out.String(), want)
		}
	}
	want := "Warning: 7 concepts are larger than 100 bytes (--max, the mount option max=) not indexed, so searches do not find them: big0.md, big1.md, big2.md, big3.md, big4.md and 2 more.\n"
	if !strings.Contains(f.errOut.String(), want) {
		t.Errorf("stderr %q, want %q", f.errOut.String(), want)
	}
	if !root {
		if !strings.Contains(f.out.String(), "unreadable\t2\n") {
			t.Errorf("summary %q: no unreadable 2", f.out.String())
		}
		want := "Warning: 2 files or folders this user may not read (their permissions), so not indexed: locked/, secret.md.\n"
		if !strings.Contains(f.errOut.String(), want) {
			t.Errorf("stderr %q, want %q", f.errOut.String(), want)
		}
	}
	f.out.Reset()
	opts.Output = formatJSON
	if err := kbIndexRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var st struct {
		TooLarge      int      `json:"too_large"`
		Unreadable    int      `json:"unreadable"`
		TooLargePaths []string `json:"too_large_paths"`
		Read          int      `json:"read"`
	}
	if err := json.Unmarshal(f.out.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if st.TooLarge != 7 || len(st.TooLargePaths) != 5 || st.Read != 0 || !root && st.Unreadable != 2 {
		t.Errorf("JSON %s", f.out.String())
	}
}
