package kb

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Tests of issue 22, item 3: an index that is right or rebuilt.

// sameStatEdit rewrites the file at p with content of the same size and
// sets its modification time back, as cp -p, rsync -t or a tool that
// restores timestamps leave it: size, mtime and inode as they were.
func sameStatEdit(t *testing.T, p, content string) {
	t.Helper()
	before, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(content)) != before.Size() {
		t.Fatalf("the edit of %s changes its size", p)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, before.ModTime(), before.ModTime()); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) || inode(after) != inode(before) {
		t.Fatalf("the edit changed the stat: %v %v %d, was %v %v %d", after.Size(), after.ModTime(), inode(after), before.Size(), before.ModTime(), inode(before))
	}
}

// settled waits until files written now are no longer "changed as they
// were read" (racyWindow, which ageFiles cannot shorten: setting times back
// changes the ctime), so that the index records their stat.
func settled() { time.Sleep(racyWindow + 100*time.Millisecond) }

// TestSameStatEditFoundBySearch: an edit that keeps the file's size, mtime
// and inode is seen: the old word no longer finds the concept, and the new
// one does once the next search's process has reconciled (kb search
// refreshes first). Before, neither: the stat walk took the file for
// unchanged, and a hit's check compared the same three.
func TestSameStatEditFoundBySearch(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the status change time is read on Linux only")
	}
	ctx := context.Background()
	indexDir := t.TempDir()
	kb, dir := openTest(t, "docs", map[string]string{"a.md": "alpha words here", "b.md": "alpha and beta"}, Options{IndexDir: indexDir, RefreshInterval: time.Millisecond})
	settled()
	if _, err := kb.Index(ctx, IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	if ids := searchIDs(t, kb, "alpha", 5); !slices.Equal(ids, []string{"a", "b"}) {
		t.Fatal(ids)
	}
	sameStatEdit(t, filepath.Join(dir, "a.md"), "gamma words here")
	if ids := searchIDs(t, kb, "alpha", 5); !slices.Equal(ids, []string{"b"}) {
		t.Fatalf("search alpha after a.md lost it (same size and mtime): %v, want [b]", ids)
	}
	time.Sleep(5 * time.Millisecond) // past RefreshInterval
	if err := kb.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if ids := searchIDs(t, kb, "gamma", 5); !slices.Equal(ids, []string{"a"}) {
		t.Fatalf("search gamma after a.md got it (same size and mtime): %v, want [a]", ids)
	}

	// Another process (base) sharing the index, which never saw the file
	// before: the same from its reconcile.
	sameStatEdit(t, filepath.Join(dir, "b.md"), "delta and epsi")
	other, err := Open("docs", dir, Options{IndexDir: indexDir, RefreshInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	time.Sleep(5 * time.Millisecond)
	if err := other.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if ids := searchIDs(t, other, "epsi", 5); !slices.Equal(ids, []string{"b"}) {
		t.Fatalf("another base's search epsi: %v, want [b]", ids)
	}
	if ids := searchIDs(t, other, "beta", 5); len(ids) != 0 {
		t.Fatalf("another base's search beta: %v, want none", ids)
	}
}

// docOf returns the rowid of the concept id's row in the index (its FTS5
// text is under it; indexing it again gives it a new one).
func docOf(t *testing.T, kb *Base, id string) int64 {
	t.Helper()
	var doc int64
	if err := kb.ix.db.QueryRow(`SELECT doc FROM files WHERE id = ?`, id).Scan(&doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestTouchDoesNotReindex: a change of a file's times or mode only (its
// ctime changes, and with touch its mtime) is read and compared, and not
// indexed again; a change of its content with the same stat is.
func TestTouchDoesNotReindex(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the status change time is read on Linux only")
	}
	ctx := context.Background()
	kb, dir := openTest(t, "docs", map[string]string{"a.md": "alpha words here", "b.md": "beta"}, Options{IndexDir: t.TempDir()})
	settled()
	if _, err := kb.Index(ctx, IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	doc := docOf(t, kb, "a")
	p := filepath.Join(dir, "a.md")
	later := time.Now().Add(-time.Minute)
	if err := os.Chtimes(p, later, later); err != nil { // touch
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := kb.reconcile(ctx, 0, IndexOptions{})
	if err != nil || st.Read != 0 {
		t.Fatalf("reconcile after a touch and a chmod: %+v, %v; want nothing indexed again", st, err)
	}
	if d := docOf(t, kb, "a"); d != doc {
		t.Fatalf("a touch indexed a.md again (row %d, was %d)", d, doc)
	}
	if ids := searchIDs(t, kb, "alpha", 5); !slices.Equal(ids, []string{"a"}) {
		t.Fatal(ids)
	}
	sameStatEdit(t, p, "gamma words here")
	st, err = kb.reconcile(ctx, 0, IndexOptions{})
	if err != nil || st.Read != 1 {
		t.Fatalf("reconcile after a same-stat edit: %+v, %v; want a.md indexed again", st, err)
	}
	if ids := searchIDs(t, kb, "gamma", 5); !slices.Equal(ids, []string{"a"}) {
		t.Fatal(ids)
	}
}

// TestIndexRepairsSameStatEdit: kb index (Base.Index) reads every file and
// compares its content with the index, so it repairs an edit that no stat
// shows (here the row is made to record the edited file's whole stat, as a
// system without ctime, or an edit within one tick of the clock, leaves
// it), which a reconcile does not see. Before, kb index read nothing.
func TestIndexRepairsSameStatEdit(t *testing.T) {
	ctx := context.Background()
	kb, dir := openTest(t, "docs", map[string]string{"a.md": "alpha words here", "b.md": "beta"}, Options{IndexDir: t.TempDir(), RefreshInterval: time.Hour})
	ageFiles(t, dir)
	settled()
	if _, err := kb.Index(ctx, IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "a.md")
	sameStatEdit(t, p, "gamma words here")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	// The row says the file is as it is now: no stat tells the edit.
	if _, err := kb.ix.db.Exec(`UPDATE files SET ctime_ns = ? WHERE id = 'a'`, ctime(fi)); err != nil {
		t.Fatal(err)
	}
	if st, err := kb.reconcile(ctx, 0, IndexOptions{}); err != nil || st.Read != 0 {
		t.Fatalf("a reconcile: %+v, %v; want nothing read (the stat is as recorded)", st, err)
	}
	st, err := kb.Index(ctx, IndexOptions{})
	if err != nil || st.Read != 1 || st.Concepts != 2 {
		t.Fatalf("kb index: %+v, %v; want a.md indexed again", st, err)
	}
	if ids := searchIDs(t, kb, "gamma", 5); !slices.Equal(ids, []string{"a"}) {
		t.Fatalf("search gamma after kb index: %v", ids)
	}
	if ids := searchIDs(t, kb, "alpha", 5); len(ids) != 0 {
		t.Fatalf("search alpha after kb index: %v", ids)
	}
	if st, err := kb.Index(ctx, IndexOptions{}); err != nil || st.Read != 0 {
		t.Fatalf("the next kb index: %+v, %v; want nothing indexed again", st, err)
	}
}

// asides returns the paths beside the index that something unusable in its
// place was moved to.
func asides(t *testing.T, path string) []string {
	t.Helper()
	m, err := filepath.Glob(path + ".aside-*")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range m {
		if !strings.HasSuffix(p, "-wal") && !strings.HasSuffix(p, "-shm") {
			out = append(out, p)
		}
	}
	return out
}

// TestUnusableIndexMovedAside: something in the index's place that is not
// a usable index (a folder, a file that is not a database, a database of
// another schema, a damaged database) is moved aside, not deleted, and the
// index built again: the first search answers, kb index says where it
// went. Before, a folder failed every search ("cannot be written"), a
// garbage file was removed, and a database of another schema had the
// index's tables added to it.
func TestUnusableIndexMovedAside(t *testing.T) {
	cases := []struct {
		name   string
		put    func(t *testing.T, path string)
		says   string
		verify func(t *testing.T, aside string)
	}{
		{"folder", func(t *testing.T, path string) {
			if err := os.MkdirAll(filepath.Join(path, "inside"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "is a folder", func(t *testing.T, aside string) {
			if fi, err := os.Stat(filepath.Join(aside, "inside")); err != nil || !fi.IsDir() {
				t.Errorf("the folder moved aside: %v", err)
			}
		}},
		{"garbage", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte(strings.Repeat("this is not a database\n", 100)), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not a database", func(t *testing.T, aside string) {
			if b, err := os.ReadFile(aside); err != nil || !strings.HasPrefix(string(b), "this is not a database\n") {
				t.Errorf("the file moved aside: %q, %v", b, err)
			}
		}},
		{"short garbage", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("junk"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not a database", func(t *testing.T, aside string) {
			if b, err := os.ReadFile(aside); err != nil || string(b) != "junk" {
				t.Errorf("the file moved aside: %q, %v", b, err)
			}
		}},
		{"another schema", func(t *testing.T, path string) {
			db, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('ada')`); err != nil {
				t.Fatal(err)
			}
		}, "another schema", func(t *testing.T, aside string) {
			db, err := sql.Open("sqlite", "file:"+aside+"?mode=ro")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var name string
			if err := db.QueryRow(`SELECT name FROM users`).Scan(&name); err != nil || name != "ada" {
				t.Errorf("the database moved aside: %q, %v", name, err)
			}
		}},
		{"another schema at this version", func(t *testing.T, path string) {
			db, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`CREATE TABLE files (x); PRAGMA user_version = 1`); err != nil {
				t.Fatal(err)
			}
		}, "another schema", nil},
	}
	for _, c := range cases {
		for _, via := range []string{"search", "index"} {
			t.Run(c.name+"/"+via, func(t *testing.T) {
				indexDir := t.TempDir()
				dir, path := builtIndex(t, 30, indexDir)
				if err := removeIndexFiles(path); err != nil {
					t.Fatal(err)
				}
				c.put(t, path)
				kb, err := Open("docs", dir, Options{IndexDir: indexDir, RefreshInterval: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				defer kb.Close()
				if via == "index" {
					st, err := kb.Index(context.Background(), IndexOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if !strings.Contains(st.Damaged, c.says) || !strings.Contains(st.Damaged, "moved aside") || !strings.Contains(st.Damaged, path+".aside-") || st.Read != 30 {
						t.Fatalf("kb index: %+v; want it to say %q and where it was moved aside, and every concept read", st, c.says)
					}
				}
				if ids := searchIDs(t, kb, "word7", 5); !slices.Equal(ids, []string{"c007"}) {
					t.Fatalf("search: %v", ids)
				}
				if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
					t.Fatalf("the index: %v", err)
				}
				moved := asides(t, path)
				if len(moved) != 1 {
					t.Fatalf("moved aside: %v; want one", moved)
				}
				if c.verify != nil {
					c.verify(t, moved[0])
				}
				// A new process finds the index sound: nothing more moved.
				kb2, err := Open("docs", dir, Options{IndexDir: indexDir, RefreshInterval: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				defer kb2.Close()
				if st, err := kb2.Index(context.Background(), IndexOptions{Check: true}); err != nil || st.Damaged != "" || st.Read != 0 {
					t.Fatalf("the next kb index: %+v, %v", st, err)
				}
				if moved := asides(t, path); len(moved) != 1 {
					t.Fatalf("moved aside after the next kb index: %v", moved)
				}
			})
		}
	}
}

// TestDamagedIndexCopiedAside: a damaged database (pages SQLite finds
// corrupt) is built again, its content kept aside (copied: see
// resetIndexFor), and kb index says where.
func TestDamagedIndexCopiedAside(t *testing.T) {
	indexDir := t.TempDir()
	dir, path := builtIndex(t, 300, indexDir)
	for _, p := range ftsPages(t, path) {
		damageFile(t, path, (p-1)*4096, 4096)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
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
	moved := asides(t, path)
	if len(moved) != 1 || !strings.Contains(st.Damaged, "moved aside (copied) to "+moved[0]) {
		t.Fatalf("kb index: %+v; moved aside: %v", st, moved)
	}
	if got, err := os.ReadFile(moved[0]); err != nil || string(got) != string(want) {
		t.Fatalf("the copy aside differs from the damaged index (%v)", err)
	}
	if ids := searchIDs(t, kb, "word7", 5); !slices.Equal(ids, []string{"c007"}) {
		t.Fatal(ids)
	}
}

// TestIndexWithoutNewColumnsMigrated: an index made before files had
// ctime_ns and hash gets them (not rebuilt), and its rows, whose content
// is unknown, are read and indexed again by the next reconcile.
func TestIndexWithoutNewColumnsMigrated(t *testing.T) {
	indexDir := t.TempDir()
	dir, path := builtIndex(t, 20, indexDir)
	db, err := sql.Open("sqlite", indexDSN(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`ALTER TABLE files DROP COLUMN hash`, `ALTER TABLE files DROP COLUMN ctime_ns`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	kb, err := Open("docs", dir, Options{IndexDir: indexDir, RefreshInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	st, err := kb.reconcile(context.Background(), 0, IndexOptions{})
	if err != nil || st.Damaged != "" || (runtime.GOOS == "linux" && st.Read != 20) {
		t.Fatalf("reconcile of an index without ctime_ns and hash: %+v, %v; want every concept read again", st, err)
	}
	var unknown int
	if err := kb.ix.db.QueryRow(`SELECT count(*) FROM files WHERE hash = 0`).Scan(&unknown); err != nil || unknown != 0 {
		t.Fatalf("rows of unknown content after the reconcile: %d, %v", unknown, err)
	}
	if moved := asides(t, path); len(moved) != 0 {
		t.Fatalf("moved aside: %v", moved)
	}
	if ids := searchIDs(t, kb, "word7", 5); !slices.Equal(ids, []string{"c007"}) {
		t.Fatal(ids)
	}
}

// TestDirectoryIndexConcurrentSearches: searches of several bases (as
// processes) meeting a folder in the index's place at once move it aside
// once, and all answer.
func TestDirectoryIndexConcurrentSearches(t *testing.T) {
	indexDir := t.TempDir()
	dir, path := builtIndex(t, 30, indexDir)
	if err := removeIndexFiles(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		kb, err := Open("docs", dir, Options{IndexDir: indexDir, RefreshInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		defer kb.Close()
		wg.Go(func() {
			out, err := kb.Search(context.Background(), "word7", 5)
			if err != nil || len(out.Results) != 1 || out.Results[0].ID != "c007" {
				t.Errorf("search: %+v, %v", out, err)
			}
		})
	}
	wg.Wait()
	if moved := asides(t, path); len(moved) != 1 {
		t.Fatalf("moved aside: %v; want one", moved)
	}
}
