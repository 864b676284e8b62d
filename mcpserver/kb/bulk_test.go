package kb

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func automerge(t *testing.T, ix *ftsIndex) int {
	t.Helper()
	v := defaultAutomerge // no row: the default
	if err := ix.db.QueryRow(`SELECT v FROM fts_config WHERE k = 'automerge'`).Scan(&v); err != nil && err.Error() != "sql: no rows in result set" {
		t.Fatal(err)
	}
	return v
}

// segments counts the FTS5 index's segments that hold terms.
func segments(t *testing.T, ix *ftsIndex) int {
	t.Helper()
	var n int
	if err := ix.db.QueryRow(`SELECT count(DISTINCT segid) FROM fts_idx`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBulkReconcile: a reconcile of many changes turns FTS5's automerge off
// while it applies them, merges the segments into one at the end and turns
// automerge back on, also when it fails; a later reconcile turns it back on
// when a killed one left it off. And a batch replacing many concepts makes
// one segment, not one per concept.
func TestBulkReconcile(t *testing.T) {
	files := map[string]string{}
	for i := range 40 {
		files[fmt.Sprintf("c%02d.md", i)] = fmt.Sprintf("# Concept %d\n\nwords about topic%d and more words\n", i, i)
	}
	kb, dir := openTest(t, "bulk", files, Options{})
	ageFiles(t, dir)
	kb.bulkAfter = 30
	ctx := context.Background()
	ix, err := kb.index(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var during []int
	kb.beforeApply = func() { during = append(during, automerge(t, ix)) }
	if _, err := kb.Index(ctx, IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(during) == 0 || during[0] != 0 {
		t.Fatalf("automerge while applying a bulk reconcile: %v, want 0", during)
	}
	if v := automerge(t, ix); v != defaultAutomerge {
		t.Fatalf("automerge after: %d", v)
	}
	if n := segments(t, ix); n != 1 {
		t.Fatalf("%d segments after a bulk reconcile, want 1", n)
	}
	// As a process killed in a bulk reconcile leaves it.
	if err := ix.setAutomerge(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := kb.Index(ctx, IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	if v := automerge(t, ix); v != defaultAutomerge {
		t.Fatalf("automerge left off: %d", v)
	}
	if ids := searchIDs(t, kb, "topic7", 5); len(ids) != 1 || ids[0] != "c07" {
		t.Fatal(ids)
	}
	// A batch replacing many concepts removes them all before it inserts:
	// FTS5 writes its pending inserts out before a removal, so interleaved
	// each replacement would make a segment.
	kb.beforeApply = nil
	if err := ix.setAutomerge(ctx, 0); err != nil { // so segments are not merged away
		t.Fatal(err)
	}
	before := segments(t, ix)
	old := time.Now().Add(-time.Hour)
	for i := range 20 {
		p := filepath.Join(dir, fmt.Sprintf("c%02d.md", i))
		if err := os.WriteFile(p, fmt.Appendf(nil, "# Concept %d\n\nnew words about subject%d\n", i, i), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	kb.bulkAfter = 1000 // not bulk: no optimize
	if st, err := kb.Index(ctx, IndexOptions{}); err != nil || st.Read != 20 {
		t.Fatal(st, err)
	}
	if n := segments(t, ix); n > before+2 {
		t.Fatalf("replacing 20 concepts in one batch made %d segments", n-before)
	}
	if ids := searchIDs(t, kb, "subject7", 5); len(ids) != 1 || ids[0] != "c07" {
		t.Fatal(ids)
	}
	if ids := searchIDs(t, kb, "topic7", 5); len(ids) != 0 {
		t.Fatal(ids)
	}
	// A bulk reconcile that fails (here: cancelled) turns it back on too.
	for i := range 40 {
		p := filepath.Join(dir, fmt.Sprintf("c%02d.md", i))
		if err := os.Chtimes(p, time.Now().Add(-2*time.Hour), time.Now().Add(-2*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	kb.beforeApply = func() {
		during = append(during, automerge(t, ix))
		cancel()
	}
	during = nil
	kb.bulkAfter = 30
	if _, err := kb.Index(cctx, IndexOptions{}); err == nil {
		t.Fatal("a cancelled reconcile succeeded")
	}
	if len(during) == 0 || during[0] != 0 {
		t.Fatalf("automerge while applying: %v, want 0", during)
	}
	if v := automerge(t, ix); v != defaultAutomerge {
		t.Fatalf("automerge after a failed bulk reconcile: %d", v)
	}
}

// TestWriteTxPrepares: a write transaction prepares each statement once,
// however many concepts it stores.
func TestWriteTxPrepares(t *testing.T) {
	kb, _ := openTest(t, "prep", map[string]string{"a.md": "alpha"}, Options{})
	ctx := context.Background()
	ix, err := kb.index(ctx)
	if err != nil {
		t.Fatal(err)
	}
	btx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer btx.Rollback()
	tx := newWriteTx(btx)
	for i := range 10 {
		id := fmt.Sprintf("c%d", i)
		if err := put(ctx, tx, id, row{size: 5, indexed: true, title: id}, []byte("words"), i%2 == 0); err != nil {
			t.Fatal(err)
		}
	}
	// INSERT INTO files, INSERT INTO fts, and remove's DELETE.
	if tx.prepared != 3 {
		t.Fatalf("%d statements prepared for 10 puts, want 3", tx.prepared)
	}
}

// TestBuildBatches: a build (a bulk reconcile) applies its files in
// transactions of up to bulkBatch files, each ended once it holds
// batchBytes of text, however large the concepts are.
func TestBuildBatches(t *testing.T) {
	files := map[string]string{}
	big := strings.Repeat("lorem ipsum dolor sit amet ", (900<<10)/27) // ~900 KiB
	const n = 20
	for i := range n {
		files[fmt.Sprintf("big%02d.md", i)] = fmt.Sprintf("# Big %d\n\n%s\n", i, big)
	}
	for i := range 40 {
		files[fmt.Sprintf("small%02d.md", i)] = fmt.Sprintf("# Small %d\n\nwords\n", i)
	}
	kb, dir := openTest(t, "batches", files, Options{})
	ageFiles(t, dir)
	kb.bulkAfter = 10
	applies := 0
	kb.beforeApply = func() { applies++ }
	st, err := kb.Index(context.Background(), IndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Read != n+40 {
		t.Fatalf("read %d, want %d", st.Read, n+40)
	}
	// 20 × 900 KiB is about 18 MiB: a transaction ends once it holds
	// batchBytes, so at least two (one, were only the count bounded).
	if applies < 2 {
		t.Fatalf("%d transaction for %d MiB of text, want at least 2", applies, n*len(big)>>20)
	}
	if ids := searchIDs(t, kb, "lorem", 50); len(ids) != n {
		t.Fatalf("search found %d of the %d large concepts", len(ids), n)
	}
}
