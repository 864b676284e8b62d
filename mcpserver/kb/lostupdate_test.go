package kb

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestSearchSnapshot: a search whose FTS5 query and look-up of the hits'
// rows straddle the commit of writes of those concepts (each re-inserts
// its row under a new rowid, as a reconcile re-reading them does) still
// finds them. Before the search read both in one transaction, the look-up
// missed the rowids the writes had replaced: the race behind
// TestConcurrentUse's lost results.
func TestSearchSnapshot(t *testing.T) {
	kb, _ := openTest(t, "docs", nil, Options{RefreshInterval: time.Hour})
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c"} {
		if _, err := kb.Write(ctx, id, "# "+id+"\nalpha"); err != nil {
			t.Fatal(err)
		}
	}
	if ids := searchIDs(t, kb, "alpha", 10); !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Fatalf("before: %v", ids)
	}
	ix, err := kb.index(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	ix.matched = func() {
		once.Do(func() {
			// Rewritten with the same words: whatever rowids they had,
			// at most one of them is given the same rowid again.
			for _, id := range []string{"a", "b", "c"} {
				if _, err := kb.Write(ctx, id, "# "+id+"\nalpha again"); err != nil {
					t.Error(err)
				}
			}
		})
	}
	if ids := searchIDs(t, kb, "alpha", 10); !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Fatalf("a search during writes of its hits found %v, want [a b c]", ids)
	}
}

// TestReconcileRacyReplaced: a reconcile that read a concept within
// racyWindow of its modification stores what the file holds when it
// applies the read, not the read, when the file was replaced meanwhile by
// one stat cannot tell from it (same size, same inode). Writes make such a
// file when a rename lands on the inode an earlier rename freed; here an
// edit in place makes it deterministically. Before the reconcile read such
// files again inside its transaction, it stored the older text, which a
// search for the new words then missed (and which the stale-hit check
// could not see either).
func TestReconcileRacyReplaced(t *testing.T) {
	kb, dir := openTest(t, "docs", nil, Options{RefreshInterval: time.Hour})
	ctx := context.Background()
	if _, err := kb.Write(ctx, "x", "# x\nalpha"); err != nil {
		t.Fatal(err)
	}
	// A modification time in the future keeps every read of x within
	// racyWindow of it however slow the machine, and the edit below puts
	// it back: size, inode and modification time all stay the same.
	p := filepath.Join(dir, "x.md")
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(p, future, future); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	kb.beforeApply = func() {
		once.Do(func() {
			if err := os.WriteFile(p, []byte("# x\nbravo"), 0o644); err != nil {
				t.Error(err)
			}
			if err := os.Chtimes(p, future, future); err != nil {
				t.Error(err)
			}
		})
	}
	// The index's row for x has mtime -1 (written within racyWindow of
	// the file's modification), so the reconcile reads x again.
	if st, err := kb.Index(ctx, IndexOptions{}); err != nil || st.Read != 1 {
		t.Fatalf("index: %+v, %v", st, err)
	}
	kb.beforeApply = nil
	after, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() != before.Size() || inode(after) != inode(before) || !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("the edit changed the file's size, inode or modification time; the test needs none to change")
	}
	if ids := searchIDs(t, kb, "bravo", 10); !slices.Equal(ids, []string{"x"}) {
		t.Errorf("search bravo: %v, want [x]", ids)
	}
	if ids := searchIDs(t, kb, "alpha", 10); len(ids) != 0 {
		t.Errorf("search alpha: %v, want none", ids)
	}
}

// TestReconcileKeepsNewerWrite: a reconcile that read a concept before a
// concept_write of another process (another base sharing the index)
// replaced it does not store its older read over the write's row. The
// write lands between the reconcile's read and its transaction (the
// beforeApply hook). The index itself is checked, not Search: a search
// would mend an older row it finds (TestSearchNeverStale), and so hide the
// lost update.
func TestReconcileKeepsNewerWrite(t *testing.T) {
	indexDir := t.TempDir()
	a, dir := openTest(t, "docs", map[string]string{"x.md": "# x\nalpha"}, Options{IndexDir: indexDir, RefreshInterval: time.Hour})
	// Aged: a read within racyWindow of the file's modification is read
	// again inside the transaction, which would find the write anyway.
	ageFiles(t, dir)
	b, err := Open("docs", dir, Options{IndexDir: indexDir, RefreshInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	if _, err := a.index(ctx); err != nil { // b's write needs the schema
		t.Fatal(err)
	}
	var once sync.Once
	a.beforeApply = func() {
		once.Do(func() {
			if _, err := b.Write(ctx, "x", "# x\nbravo"); err != nil {
				t.Error(err)
			}
		})
	}
	if st, err := a.Index(ctx, IndexOptions{}); err != nil || st.Read != 1 {
		t.Fatalf("index: %+v, %v", st, err)
	}
	a.beforeApply = nil
	ix, err := a.index(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		word string
		want []string
	}{{"bravo", []string{"x"}}, {"alpha", nil}} {
		hits, err := ix.search(ctx, []string{c.word}, 10, a.opts.MaxBytes)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, h := range hits {
			ids = append(ids, h.id)
		}
		if !slices.Equal(ids, c.want) {
			t.Errorf("the index's hits for %q: %v, want %v (the reconcile's older read replaced the write)", c.word, ids, c.want)
		}
	}
}
