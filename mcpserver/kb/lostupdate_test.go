package kb

import (
	"context"
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
