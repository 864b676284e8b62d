package kb

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/testkit"
)

// TestRemoveStaleIndexes: the index of a folder that no longer exists goes,
// with its -wal, -shm and lock files; the index of a folder that exists, one
// written within minAge, one whose lock a process holds and one that does
// not record its folder stay.
func TestRemoveStaleIndexes(t *testing.T) {
	ctx := context.Background()
	indexDir := t.TempDir()
	build := func(name string) (dir, path string) {
		dir = filepath.Join(t.TempDir(), name)
		testkit.WriteFiles(t, dir, map[string]string{"a.md": "alpha " + name})
		kb, err := Open(name, dir, Options{IndexDir: indexDir})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kb.Index(ctx, IndexOptions{}); err != nil {
			t.Fatal(err)
		}
		path = kb.IndexFile()
		if err := kb.Close(); err != nil {
			t.Fatal(err)
		}
		return dir, path
	}
	age := func(path string) {
		old := time.Now().Add(-2 * time.Hour)
		for _, f := range []string{path, path + "-wal", path + "-shm"} {
			if err := os.Chtimes(f, old, old); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
	}
	_, kept := build("kept")
	goneDir, gone := build("gone")
	youngDir, young := build("young")
	lockedDir, locked := build("locked")
	oldDir, unrecorded := build("unrecorded")
	ix, err := openIndex(ctx, unrecorded)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ix.db.Exec(`DELETE FROM meta WHERE key = 'folder'`); err != nil {
		t.Fatal(err)
	}
	ix.close()
	for _, d := range []string{goneDir, youngDir, lockedDir, oldDir} {
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{kept, gone, locked, unrecorded} {
		age(p)
	}
	if err := os.WriteFile(gone+"-wal", nil, 0o600); err != nil { // as a process killed would leave it
		t.Fatal(err)
	}
	age(gone)
	unlock, err := lockFile(ctx, locked+".lock", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()

	removed, err := RemoveStaleIndexes(ctx, indexDir, time.Hour)
	if err != nil || !slices.Equal(removed, []string{gone}) {
		t.Fatalf("removed %v, %v; want [%s]", removed, err, gone)
	}
	for _, f := range []string{gone, gone + "-wal", gone + "-shm", gone + ".lock"} {
		if _, err := os.Lstat(f); !os.IsNotExist(err) {
			t.Errorf("%s: %v, want it removed", f, err)
		}
	}
	for _, p := range []string{kept, young, locked, unrecorded} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v, want it kept", p, err)
		}
	}
	if removed, err := RemoveStaleIndexes(ctx, filepath.Join(indexDir, "missing"), time.Hour); err != nil || removed != nil {
		t.Errorf("no index folder: %v, %v", removed, err)
	}
}

func TestIsIndexName(t *testing.T) {
	for name, want := range map[string]bool{
		"0123456789abcdef0123456789abcdef.db":      true,
		"0123456789abcdef0123456789abcdef.db-wal":  false,
		"0123456789abcdef0123456789abcdef.db.lock": false,
		"0123456789ABCDEF0123456789abcdef.db":      false,
		"0123456789abcdef0123456789abcde.db":       false,
		"0123456789abcdef0123456789abcdefa.db":     false,
		"0123456789abcdeg0123456789abcdef.db":      false,
		".db":                                      false,
	} {
		if got := isIndexName(name); got != want {
			t.Errorf("isIndexName(%q) = %v, want %v", name, got, want)
		}
	}
}
