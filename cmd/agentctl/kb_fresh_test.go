package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/mcpserver/kb"
)

// kbFreshSetup writes a knowledge base of a few concepts under the test
// factory's folder and builds its index with kb index, after waiting until
// the files are no longer "changed as they were read" (so the index
// records their stat); it returns the folder and the index database.
func kbFreshSetup(t *testing.T, f *testFactory) (dir, index string) {
	t.Helper()
	dir = filepath.Join(f.dir, "kb")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"a.md": "alpha words here", "b.md": "beta", "c.md": "gamma"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1100 * time.Millisecond)
	kbFreshIndex(t, f, dir)
	index, err := kb.IndexPath(kbIndexDir(f.Config.StateDir()), dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, index
}

// kbFreshIndex runs kb index -o json on dir and returns what it printed.
func kbFreshIndex(t *testing.T, f *testFactory, dir string) kb.IndexStats {
	t.Helper()
	f.out.Reset()
	f.errOut.Reset()
	opts := &KBIndexOptions{IO: f.IOStreams, StateDir: f.Config.StateDir, Dir: dir, Output: formatJSON}
	if err := kbIndexRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var st kb.IndexStats
	if err := json.Unmarshal(f.out.Bytes(), &st); err != nil {
		t.Fatalf("kb index -o json: %q: %v", f.out.String(), err)
	}
	return st
}

// kbFreshSearch runs kb search on dir (refresh interval an hour) and
// returns the ids it found.
func kbFreshSearch(t *testing.T, f *testFactory, dir, query string) []string {
	t.Helper()
	f.out.Reset()
	opts := &KBSearchOptions{IO: f.IOStreams, StateDir: f.Config.StateDir, RefreshInterval: func() (time.Duration, error) { return time.Hour, nil },
		Dir: dir, Query: query, Limit: 10, Output: formatJSON}
	if err := kbSearchRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var out kb.SearchOutput
	if err := json.Unmarshal(f.out.Bytes(), &out); err != nil {
		t.Fatalf("kb search -o json: %q: %v", f.out.String(), err)
	}
	ids := []string{}
	for _, r := range out.Results {
		ids = append(ids, r.ID)
	}
	return ids
}

// TestKBIndexRepairsSameStatEdit: an edit that keeps a.md's size, mtime
// and inode (as cp -p or rsync -t leave it), and which the index records
// the file's whole stat for (as on a system without ctime, or an edit
// within one tick of the clock), is repaired by kb index, which compares
// every file's content: kb search then finds the new word, not the old.
// Before, kb index read nothing and the old word kept finding a.md.
func TestKBIndexRepairsSameStatEdit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the status change time from syscall.Stat_t")
	}
	f := newTestFactory(t)
	dir, index := kbFreshSetup(t, f)
	p := filepath.Join(dir, "a.md")
	before, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("delta words here"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, before.ModTime(), before.ModTime()); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	ctime, ok := ctimeNS(fi)
	if !ok {
		t.Skip("the index's ctime is read from Linux's stat here")
	}
	db, err := sql.Open("sqlite", "file:"+index+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE files SET ctime_ns = ? WHERE id = 'a'`, ctime); err != nil {
		t.Fatal(err)
	}
	db.Close()

	if got := kbFreshIndex(t, f, dir); got.Read != 1 || got.Concepts != 3 {
		t.Fatalf("kb index after a same-stat edit: %+v; want a.md indexed again", got)
	}
	if ids := kbFreshSearch(t, f, dir, "delta"); len(ids) != 1 || ids[0] != "a" {
		t.Fatalf("kb search delta: %v, want [a]", ids)
	}
	if ids := kbFreshSearch(t, f, dir, "alpha"); len(ids) != 0 {
		t.Fatalf("kb search alpha: %v, want none", ids)
	}
	if got := kbFreshIndex(t, f, dir); got.Read != 0 {
		t.Fatalf("the next kb index: %+v; want nothing indexed again", got)
	}
}

// TestKBIndexMovesAsideFolder: a folder where the index database should be
// is moved aside (not deleted), kb index says so and where, and builds the
// index; kb search answers. Before, kb index and every search failed
// ("cannot be written") and nothing rebuilt it.
func TestKBIndexMovesAsideFolder(t *testing.T) {
	f := newTestFactory(t)
	dir, index := kbFreshSetup(t, f)
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(index + suffix); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(index, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	got := kbFreshIndex(t, f, dir)
	if got.Read != 3 || !strings.Contains(got.Damaged, "is a folder") || !strings.Contains(got.Damaged, "moved aside to "+index+".aside-") {
		t.Fatalf("kb index with a folder in the index's place: %+v", got)
	}
	if say := f.errOut.String(); !strings.Contains(say, "moved aside to "+index+".aside-") {
		t.Errorf("kb index says %q; want it to say where the folder went", say)
	}
	moved, err := filepath.Glob(index + ".aside-*")
	if err != nil || len(moved) != 1 {
		t.Fatalf("moved aside: %v, %v", moved, err)
	}
	if fi, err := os.Stat(filepath.Join(moved[0], "keep")); err != nil || !fi.IsDir() {
		t.Fatalf("the folder moved aside lost its content: %v", err)
	}
	if ids := kbFreshSearch(t, f, dir, "beta"); len(ids) != 1 || ids[0] != "b" {
		t.Fatalf("kb search beta: %v, want [b]", ids)
	}
}

// TestKBSearchMovesAsideGarbage: a file that is not a database where the
// index should be is moved aside by the first kb search, which answers.
func TestKBSearchMovesAsideGarbage(t *testing.T) {
	f := newTestFactory(t)
	dir, index := kbFreshSetup(t, f)
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Remove(index + suffix); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(index, []byte("garbage, not SQLite"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ids := kbFreshSearch(t, f, dir, "gamma"); len(ids) != 1 || ids[0] != "c" {
		t.Fatalf("kb search gamma: %v, want [c]", ids)
	}
	moved, err := filepath.Glob(index + ".aside-*")
	if err != nil || len(moved) != 1 {
		t.Fatalf("moved aside: %v, %v", moved, err)
	}
	if b, err := os.ReadFile(moved[0]); err != nil || string(b) != "garbage, not SQLite" {
		t.Fatalf("the file moved aside: %q, %v", b, err)
	}
}
