package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
