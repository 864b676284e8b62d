package kb

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// damageFile overwrites n bytes of the file at path from offset off with
// zeros (pages of zeros are no b-tree page; a header of zeros is no
// database).
func damageFile(t *testing.T, path string, off, n int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, n), off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// builtIndex builds the index of a knowledge base of n concepts (concept i
// has the word word<i>, all have common) under indexDir and closes it, so
// that its database is one file (no -wal), and returns the folder and the
// database.
func builtIndex(t *testing.T, n int, indexDir string) (dir, path string) {
	t.Helper()
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("c%03d.md", i)] = fmt.Sprintf("# Concept %d\n\nword%d and common words\n", i, i)
	}
	kb, dir := openTest(t, "docs", files, Options{IndexDir: indexDir})
	ageFiles(t, dir)
	if _, err := kb.Index(context.Background(), IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	path = kb.IndexFile()
	if err := kb.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Fatal("the closed index still has a -wal file")
	}
	return dir, path
}

// ftsPages returns the numbers of the pages of the index's FTS5 records
// (fts_data) past its root page: what only a search reads.
func ftsPages(t *testing.T, path string) []int64 {
	t.Helper()
	ix, err := openIndex(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.close()
	rs, err := ix.db.Query(`SELECT pageno FROM dbstat WHERE name = 'fts_data' AND pageno > (SELECT rootpage FROM sqlite_schema WHERE name = 'fts_data') ORDER BY pageno`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var pages []int64
	for rs.Next() {
		var p int64
		if err := rs.Scan(&p); err != nil {
			t.Fatal(err)
		}
		pages = append(pages, p)
	}
	if len(pages) == 0 {
		t.Fatal("no FTS5 pages past the root")
	}
	return pages
}

// TestIndexRebuildsDamaged: kb index on an index with damaged pages that
// only a search reads (FTS5's, zeroed) finds it so (PRAGMA quick_check), says
// so, and builds it again from the folder; searches are right again.
// Before, kb index reported success, and every search failed.
func TestIndexRebuildsDamaged(t *testing.T) {
	indexDir := t.TempDir()
	dir, path := builtIndex(t, 300, indexDir)
	for _, p := range ftsPages(t, path) {
		damageFile(t, path, (p-1)*4096, 4096)
	}
	kb, err := Open("docs", dir, Options{IndexDir: indexDir})
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	st, err := kb.Index(context.Background(), IndexOptions{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.Damaged, "quick_check") || st.Read != 300 || st.Concepts != 300 {
		t.Fatalf("index of a damaged database: %+v; want it found damaged and every concept read", st)
	}
	if ids := searchIDs(t, kb, "word7", 5); !slices.Equal(ids, []string{"c007"}) {
		t.Fatalf("search after the rebuild: %v", ids)
	}
	if st, err := kb.Index(context.Background(), IndexOptions{}); err != nil || st.Damaged != "" || st.Read != 0 {
		t.Fatalf("the next index: %+v, %v; want nothing to do", st, err)
	}
}

// TestSearchRebuildsDamaged: a search that finds the index damaged (its
// pages, its header, or FTS5's records) builds it again from the folder and
// answers; another base sharing the index (another process), open all
// along, answers right too, without a rebuild of its own.
func TestSearchRebuildsDamaged(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"pages", func(t *testing.T, path string) { damageFile(t, path, 4096, 3*4096) }},
		{"header", func(t *testing.T, path string) { damageFile(t, path, 0, 100) }},
		{"fts5 records", func(t *testing.T, path string) {
			ix, err := openIndex(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			defer ix.close()
			if _, err := ix.db.Exec(`UPDATE fts_data SET block = zeroblob(length(block)) WHERE id > 10`); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			indexDir := t.TempDir()
			dir, path := builtIndex(t, 300, indexDir)
			other, err := Open("docs", dir, Options{IndexDir: indexDir, RefreshInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			if ids := searchIDs(t, other, "word42", 5); !slices.Equal(ids, []string{"c042"}) {
				t.Fatal(ids)
			}
			c.damage(t, path)
			kb, err := Open("docs", dir, Options{IndexDir: indexDir, RefreshInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer kb.Close()
			for _, q := range []struct{ query, want string }{{"word7", "c007"}, {"word123", "c123"}} {
				if ids := searchIDs(t, kb, q.query, 5); !slices.Equal(ids, []string{q.want}) {
					t.Fatalf("search %s in the damaged index: %v", q.query, ids)
				}
			}
			walks := other.walks.Load()
			if ids := searchIDs(t, other, "word42", 5); !slices.Equal(ids, []string{"c042"}) {
				t.Fatalf("the other base's search after the rebuild: %v", ids)
			}
			if other.walks.Load() != walks {
				t.Error("the other base walked the folder again")
			}
		})
	}
}

// TestReplacedIndexReopened: a base whose index another process replaced
// (a damaged file SQLite does not take for a database is removed and made
// again) opens the new file at its next use, rather than going on with the
// old one: a concept written through the other process since is found.
func TestReplacedIndexReopened(t *testing.T) {
	indexDir := t.TempDir()
	dir, path := builtIndex(t, 30, indexDir)
	other, err := Open("docs", dir, Options{IndexDir: indexDir, RefreshInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if ids := searchIDs(t, other, "word7", 5); !slices.Equal(ids, []string{"c007"}) {
		t.Fatal(ids)
	}
	damageFile(t, path, 0, 100)
	kb, err := Open("docs", dir, Options{IndexDir: indexDir, RefreshInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	if ids := searchIDs(t, kb, "word7", 5); !slices.Equal(ids, []string{"c007"}) {
		t.Fatalf("search of the damaged index: %v", ids)
	}
	if _, err := kb.Write(context.Background(), "new", "# New\nquokka"); err != nil {
		t.Fatal(err)
	}
	if ids := searchIDs(t, other, "quokka", 5); !slices.Equal(ids, []string{"new"}) {
		t.Fatalf("the other base's search after the index was replaced: %v, want [new]", ids)
	}
}

// TestResetIndexClosesOnError: a reset that fails for a reason other than
// damage (here a cancelled context) closes the index it was given, which
// its caller then forgets: nothing is left open on every search that meets
// an index it cannot reset.
func TestResetIndexClosesOnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	ix, err := openIndex(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.db.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if fresh, err := resetIndex(ctx, path, ix); err == nil || fresh != nil {
		t.Fatalf("resetIndex with a cancelled context = %v, %v; want nil and an error", fresh, err)
	}
	if err := ix.db.Ping(); err == nil || !strings.Contains(err.Error(), "database is closed") {
		t.Errorf("the index after a failed reset: Ping = %v; want it closed", err)
	}
}

// resetIndex is resetIndexFor, when what is wrong is not known.
func resetIndex(ctx context.Context, path string, ix *ftsIndex) (*ftsIndex, error) {
	fresh, _, err := resetIndexFor(ctx, path, ix, nil)
	return fresh, err
}
