package kb

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/testkit"
)

// A folder replaced while mounted (moved aside and a new one put in its
// place, as a fresh clone does) is followed: reads, lists, searches and
// writes work on the new folder, and the search index is rebuilt from it.
// Before, the base kept the old folder open: new concepts were not found,
// searches came back empty and writes went into the folder moved aside.
func TestFollowsAReplacedFolder(t *testing.T) {
	ctx := context.Background()
	parent := t.TempDir()
	dir := filepath.Join(parent, "docs")
	testkit.WriteFiles(t, dir, map[string]string{"old.md": "# Old\n\nzebras of the old clone\n"})
	kb, err := Open("docs", dir, Options{IndexDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	if s, err := kb.Search(ctx, "zebras", 10); err != nil || len(s.Results) != 1 {
		t.Fatalf("search before: %v %v", s, err)
	}

	if err := os.Rename(dir, filepath.Join(parent, "docs.old")); err != nil {
		t.Fatal(err)
	}
	testkit.WriteFiles(t, dir, map[string]string{"new.md": "# New\n\nyaks of the new clone\n"})

	if r, err := kb.Read(ctx, "new"); err != nil || !strings.Contains(r.Content, "yaks") {
		t.Fatalf("read of the new folder's concept: %+v %v", r, err)
	}
	if _, err := kb.Read(ctx, "old"); err == nil {
		t.Error("the old folder's concept is still read")
	}
	if l, err := kb.List(ctx, "", "", 0); err != nil || len(l.Concepts) != 1 || l.Concepts[0].ID != "new" {
		t.Errorf("list: %+v %v", l, err)
	}
	if s, err := kb.Search(ctx, "yaks", 10); err != nil || len(s.Results) != 1 || s.Results[0].ID != "new" {
		t.Errorf("search of the new folder: %+v %v", s, err)
	}
	if s, err := kb.Search(ctx, "zebras", 10); err != nil || len(s.Results) != 0 {
		t.Errorf("search still finds the old folder's concept: %+v %v", s, err)
	}
	if _, err := kb.Write(ctx, "written", "# Written\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "written.md")); err != nil {
		t.Errorf("the write did not reach the folder the path names: %v", err)
	}
}

// A link to the folder pointed at another folder is followed, with that
// folder's own index (indexes are kept by real path).
func TestFollowsARetargetedLink(t *testing.T) {
	ctx := context.Background()
	parent := t.TempDir()
	testkit.WriteFiles(t, filepath.Join(parent, "v1"), map[string]string{"a.md": "# A\n\nzebras\n"})
	testkit.WriteFiles(t, filepath.Join(parent, "v2"), map[string]string{"b.md": "# B\n\nyaks\n"})
	link := filepath.Join(parent, "current")
	if err := os.Symlink("v1", link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	kb, err := Open("docs", link, Options{IndexDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	first := kb.IndexFile()
	if s, err := kb.Search(ctx, "zebras", 10); err != nil || len(s.Results) != 1 {
		t.Fatalf("search before: %v %v", s, err)
	}
	tmp := filepath.Join(parent, "current.new")
	if err := os.Symlink("v2", tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
	if s, err := kb.Search(ctx, "yaks", 10); err != nil || len(s.Results) != 1 || s.Results[0].ID != "b" {
		t.Errorf("search after the link moved: %+v %v", s, err)
	}
	if kb.IndexFile() == first {
		t.Error("the new folder shares the old folder's index")
	}
}

// A folder removed while mounted is an error that says so, and the shared
// index keeps what it had (another process may serve the folder once it
// is back). Before, lists and searches came back empty, the index was
// emptied for every process, and writes "succeeded" into the removed
// folder.
func TestFolderGoneIsAnError(t *testing.T) {
	ctx := context.Background()
	parent := t.TempDir()
	dir := filepath.Join(parent, "docs")
	testkit.WriteFiles(t, dir, map[string]string{"a.md": "# A\n\nzebras\n"})
	indexDir := t.TempDir()
	kb, err := Open("docs", dir, Options{IndexDir: indexDir})
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	if s, err := kb.Search(ctx, "zebras", 10); err != nil || len(s.Results) != 1 {
		t.Fatalf("search before: %v %v", s, err)
	}
	if err := os.Rename(dir, filepath.Join(parent, "elsewhere")); err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func() error{
		"read":   func() error { _, err := kb.Read(ctx, "a"); return err },
		"list":   func() error { _, err := kb.List(ctx, "", "", 0); return err },
		"search": func() error { _, err := kb.Search(ctx, "zebras", 10); return err },
		"write":  func() error { _, err := kb.Write(ctx, "b", "# B\n"); return err },
		"index":  func() error { _, err := kb.Index(ctx, IndexOptions{}); return err },
	} {
		if err := op(); err == nil || !strings.Contains(err.Error(), "no longer exists") {
			t.Errorf("%s: %v, want an error saying the folder no longer exists", name, err)
		}
	}
	if err := os.Rename(filepath.Join(parent, "elsewhere"), dir); err != nil {
		t.Fatal(err)
	}
	if s, err := kb.Search(ctx, "zebras", 10); err != nil || len(s.Results) != 1 {
		t.Errorf("search once the folder is back: %+v %v", s, err)
	}
}

// Content with a NUL character is refused: a model that sends one made a
// mistake, and the file would be binary, not Markdown.
func TestWriteRefusesNUL(t *testing.T) {
	kb, dir := openTest(t, "docs", nil, Options{})
	_, err := kb.Write(context.Background(), "a", "# A\n\x00tail\n")
	if err == nil || !strings.Contains(err.Error(), `NUL character (\u0000) at byte 4`) {
		t.Fatalf("write with NUL: %v", err)
	}
	if _, serr := os.Stat(filepath.Join(dir, "a.md")); serr == nil {
		t.Error("the concept was written anyway")
	}
}
