package kb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/testkit"
)

func searchIDs(t *testing.T, kb *Base, query string, limit int) []string {
	t.Helper()
	out, err := kb.Search(context.Background(), query, limit)
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, r := range out.Results {
		ids = append(ids, r.ID)
	}
	return ids
}

// relevanceKB is a small knowledge base of an imagined project's notes, the
// kind a coding agent searches; relevanceQueries are labelled queries, each
// with the concept it must find in its top 3.
var relevanceKB = map[string]string{
	"ops/deploy.md":         "---\ntitle: Deploying to production\n---\nDeployments run from CI after the release tag is pushed. Roll back with the previous tag.\n",
	"ops/rollback.md":       "# Rolling back a release\n\nIf a deployment breaks production, redeploy the previous tag and open an incident.\n",
	"ops/oncall.md":         "# On-call rota\n\nThe on-call engineer answers pages within fifteen minutes and escalates incidents.\n",
	"ops/backups.md":        "# Database backups\n\nPostgres is snapshotted nightly; restores are tested every month.\n",
	"dev/setup.md":          "---\ntitle: Setting up a development machine\n---\nInstall Go, Node and Docker, then run make bootstrap to fetch dependencies.\n",
	"dev/testing.md":        "# Writing tests\n\nUnit tests sit beside the code; integration tests start a real database in Docker.\n",
	"dev/style.md":          "# Code style\n\nFormat with gofmt, lint with staticcheck, name things for what they do.\n",
	"dev/migrations.md":     "# Schema migrations\n\nEach migration is a numbered SQL file; never edit one that has shipped.\n",
	"api/auth.md":           "# Authentication\n\nClients authenticate with OAuth tokens; service accounts use signed JWTs.\n",
	"api/rate-limits.md":    "# Rate limits\n\nEach token may make 600 requests per minute; over that the API answers 429.\n",
	"api/pagination.md":     "# Pagination\n\nList endpoints return a cursor; pass it back to get the next page.\n",
	"api/errors.md":         "# Error responses\n\nErrors are JSON with a code and a message that says how to fix the request.\n",
	"product/pricing.md":    "# Pricing plans\n\nThe free plan has three seats; the team plan is billed monthly per seat.\n",
	"product/roadmap.md":    "# Roadmap\n\nNext quarter: offline mode, audit logs and single sign-on.\n",
	"product/glossary.md":   "# Glossary\n\nA workspace holds projects; a project holds boards; a board holds cards.\n",
	"people/onboarding.md":  "# Onboarding new engineers\n\nThe first week: laptop setup, a buddy, and a small bug fixed and deployed.\n",
	"people/holidays.md":    "# Holidays and leave\n\nBook leave in the HR tool at least two weeks ahead.\n",
	"security/secrets.md":   "# Handling secrets\n\nSecrets live in the vault; never commit them. Rotate a leaked key at once.\n",
	"security/incidents.md": "# Security incidents\n\nReport a suspected breach to the security channel; do not investigate alone.\n",
	"security/sso.md":       "# Single sign-on\n\nSSO uses SAML with the company identity provider; OAuth for the public API.\n",
}

var relevanceQueries = []struct{ query, want string }{
	{"how do I deploy", "ops/deploy"},
	{"roll back a broken release", "ops/rollback"},
	{"who answers pages", "ops/oncall"},
	{"restore the postgres database", "ops/backups"},
	{"install development dependencies", "dev/setup"},
	{"integration tests database", "dev/testing"},
	{"gofmt staticcheck", "dev/style"},
	{"edit a migration", "dev/migrations"},
	{"JWT service account", "api/auth"},
	{"too many requests 429", "api/rate-limits"},
	{"next page cursor", "api/pagination"},
	{"error message format", "api/errors"},
	{"how much does the team plan cost", "product/pricing"},
	{"audit logs", "product/roadmap"},
	{"what is a board", "product/glossary"},
	{"first week new engineer", "people/onboarding"},
	{"book leave", "people/holidays"},
	{"leaked key", "security/secrets"},
	{"suspected breach", "security/incidents"},
	{"SAML identity provider", "security/sso"},
}

// TestSearchRelevance: each labelled query finds its concept in the top 3.
func TestSearchRelevance(t *testing.T) {
	kb, _ := openTest(t, "docs", relevanceKB, Options{})
	for _, q := range relevanceQueries {
		if ids := searchIDs(t, kb, q.query, 3); !slices.Contains(ids, q.want) {
			t.Errorf("search %q: top 3 %v, want %s among them", q.query, ids, q.want)
		}
	}
}

// TestSharedIndex: two bases on one folder with one IndexDir (as two mcp
// serve processes) share the index: the second reads no file to answer, and
// a write through either is found at once through the other.
func TestSharedIndex(t *testing.T) {
	indexDir := t.TempDir()
	a, dir := openTest(t, "docs", relevanceKB, Options{IndexDir: indexDir, RefreshInterval: time.Hour})
	ageFiles(t, dir) // else read again: modified as they were read (racyWindow)
	if ids := searchIDs(t, a, "leaked key", 1); !slices.Equal(ids, []string{"security/secrets"}) {
		t.Fatal(ids)
	}
	// Through a link, under another name: the same index.
	link := filepath.Join(t.TempDir(), "link")
	symlink(t, dir, link)
	b, err := Open("other", link, Options{IndexDir: indexDir, RefreshInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.IndexFile() != a.IndexFile() || filepath.Dir(a.IndexFile()) != indexDir {
		t.Fatalf("index files %s and %s", a.IndexFile(), b.IndexFile())
	}
	st, err := b.Index(context.Background(), IndexOptions{})
	if err != nil || st.Read != 0 || st.Removed != 0 || st.Concepts != len(relevanceKB) {
		t.Fatalf("second base's reconcile: %+v, %v; want nothing read", st, err)
	}
	ctx := context.Background()
	if ids := searchIDs(t, b, "quokka", 5); len(ids) != 0 {
		t.Fatal(ids)
	}
	if _, err := a.Write(ctx, "zoo/quokka", "# Quokka\nsmiling marsupial"); err != nil {
		t.Fatal(err)
	}
	if ids := searchIDs(t, b, "quokka", 5); !slices.Equal(ids, []string{"zoo/quokka"}) {
		t.Fatalf("a write through one base, searched through the other: %v", ids)
	}
	if _, err := b.Write(ctx, "zoo/quokka", "# Wombat\nburrowing marsupial"); err != nil {
		t.Fatal(err)
	}
	if ids := searchIDs(t, a, "quokka", 5); len(ids) != 0 {
		t.Fatalf("replaced content still found: %v", ids)
	}
	if ids := searchIDs(t, a, "wombat", 5); !slices.Equal(ids, []string{"zoo/quokka"}) {
		t.Fatal(ids)
	}
	out, err := a.List(ctx, "zoo/", "", 10)
	if err != nil || len(out.Concepts) != 1 || out.Concepts[0].Title != "Wombat" {
		t.Fatalf("list: %+v, %v", out, err)
	}
}

// TestIndexSchemaVersion: an index of another schema version is rebuilt.
func TestIndexSchemaVersion(t *testing.T) {
	indexDir := t.TempDir()
	a, dir := openTest(t, "docs", map[string]string{"a.md": "alpha"}, Options{IndexDir: indexDir})
	if ids := searchIDs(t, a, "alpha", 5); len(ids) != 1 {
		t.Fatal(ids)
	}
	if _, err := a.ix.db.Exec(`PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	a.Close()
	b, err := Open("docs", dir, Options{IndexDir: indexDir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	st, err := b.Index(context.Background(), IndexOptions{})
	if err != nil || st.Read != 1 {
		t.Fatalf("rebuild: %+v, %v", st, err)
	}
	if ids := searchIDs(t, b, "alpha", 5); len(ids) != 1 {
		t.Fatal(ids)
	}
}

// TestIndexMaxBytesShared: a concept over one process's MaxBytes is not
// searchable there, and is indexed by a process whose limit allows it.
func TestIndexMaxBytesShared(t *testing.T) {
	indexDir := t.TempDir()
	big := "# Big\n" + strings.Repeat("elephant ", 200)
	small, dir := openTest(t, "docs", map[string]string{"big.md": big, "small.md": "elephant"}, Options{IndexDir: indexDir, MaxBytes: 100})
	if ids := searchIDs(t, small, "elephant", 5); !slices.Equal(ids, []string{"small"}) {
		t.Fatal(ids)
	}
	large, err := Open("docs", dir, Options{IndexDir: indexDir})
	if err != nil {
		t.Fatal(err)
	}
	defer large.Close()
	if ids := searchIDs(t, large, "elephant", 5); !slices.Equal(ids, []string{"big", "small"}) {
		t.Fatalf("the larger limit's search: %v", ids)
	}
	if _, err := small.Index(context.Background(), IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	if ids := searchIDs(t, small, "elephant", 5); !slices.Equal(ids, []string{"small"}) {
		t.Fatalf("the smaller limit's search after the larger indexed: %v", ids)
	}
}

// TestIndexProgress: Index reports progress up to the count it read.
func TestIndexProgress(t *testing.T) {
	files := map[string]string{}
	for i := range 600 {
		files[fmt.Sprintf("c%03d.md", i)] = fmt.Sprintf("word%d", i)
	}
	kb, _ := openTest(t, "docs", files, Options{IndexDir: t.TempDir()})
	var calls [][2]int
	st, err := kb.Index(context.Background(), IndexOptions{Progress: func(done, total int) { calls = append(calls, [2]int{done, total}) }})
	if err != nil || st.Read != 600 || st.Concepts != 600 {
		t.Fatalf("%+v, %v", st, err)
	}
	if len(calls) < 3 || calls[0] != [2]int{0, 600} || calls[len(calls)-1] != [2]int{600, 600} {
		t.Fatalf("progress %v", calls)
	}
}

// ageFiles sets the modification time of every file under dir an hour back.
func ageFiles(t *testing.T, dir string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, oldname, newname string) {
	t.Helper()
	if err := os.Symlink(oldname, newname); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
}

// TestSearchNeverStale: a file edited outside agentctl, before any
// reconcile has seen it, is not returned for text it no longer has.
func TestSearchNeverStale(t *testing.T) {
	kb, dir := openTest(t, "docs", map[string]string{"a.md": "alpha words", "b.md": "alpha"}, Options{IndexDir: t.TempDir(), RefreshInterval: time.Hour})
	if ids := searchIDs(t, kb, "alpha", 5); len(ids) != 2 {
		t.Fatal(ids)
	}
	testkit.WriteFiles(t, dir, map[string]string{"a.md": "gamma words, longer now"})
	if ids := searchIDs(t, kb, "alpha", 5); !slices.Equal(ids, []string{"b"}) {
		t.Fatalf("search alpha after a.md lost it: %v", ids)
	}
	if ids := searchIDs(t, kb, "gamma", 5); !slices.Equal(ids, []string{"a"}) {
		t.Fatalf("search gamma after the stale hit was indexed again: %v", ids)
	}
}

// TestStaleSearchDoesNotWaitForTheWalk: once an index is built, a search
// that finds it stale answers from it at once while the reconcile runs in
// the background; here another process (the flock held) is reconciling, so a
// search that waited for a reconcile of its own would not answer.
func TestStaleSearchDoesNotWaitForTheWalk(t *testing.T) {
	kb, dir := openTest(t, "docs", map[string]string{"a.md": "alpha"}, Options{IndexDir: t.TempDir(), RefreshInterval: time.Nanosecond})
	if ids := searchIDs(t, kb, "alpha", 5); !slices.Equal(ids, []string{"a"}) {
		t.Fatal(ids)
	}
	unlock, err := lockFile(context.Background(), kb.IndexFile()+".lock", nil)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WriteFiles(t, dir, map[string]string{"late.md": "wombat"})
	done := make(chan []string)
	go func() {
		out, _ := kb.Search(context.Background(), "alpha wombat", 5)
		var ids []string
		for _, r := range out.Results {
			ids = append(ids, r.ID)
		}
		done <- ids
	}()
	select {
	case ids := <-done:
		if !slices.Equal(ids, []string{"a"}) {
			t.Errorf("stale search: %v, want the index as it was", ids)
		}
	case <-time.After(30 * time.Second): // a backstop: it answers at once
		unlock()
		t.Fatal("a search on a stale index waited for the reconcile")
	}
	unlock()
	waitForSearch(t, kb, "wombat", func(ids []string) bool { return slices.Equal(ids, []string{"late"}) })
}

// TestSharedIndexConcurrentWriters: two bases sharing one index (two
// processes' connections) write, search and reconcile at once; no write is
// lost from the index.
func TestSharedIndexConcurrentWriters(t *testing.T) {
	indexDir := t.TempDir()
	a, dir := openTest(t, "docs", map[string]string{"seed.md": "seed"}, Options{IndexDir: indexDir, RefreshInterval: time.Millisecond})
	b, err := Open("docs", dir, Options{IndexDir: indexDir, RefreshInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	for w, base := range []*Base{a, b} {
		wg.Go(func() {
			for i := range 25 {
				if _, err := base.Write(ctx, fmt.Sprintf("w%d/c%d", w, i), fmt.Sprintf("# C\nword%dx%d common", w, i)); err != nil {
					t.Error(err)
				}
				if _, err := base.Search(ctx, "common", 5); err != nil {
					t.Error(err)
				}
				if i%10 == 0 {
					if _, err := base.Index(ctx, IndexOptions{}); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	// A third base, no reconcile of its own (the index is fresh): every
	// write must be in the index as the two left it.
	a.Close()
	b.Close()
	c, err := Open("docs", dir, Options{IndexDir: indexDir, RefreshInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for w := range 2 {
		for i := range 25 {
			want := fmt.Sprintf("w%d/c%d", w, i)
			if ids := searchIDs(t, c, fmt.Sprintf("word%dx%d", w, i), 5); !slices.Equal(ids, []string{want}) {
				t.Fatalf("%s: %v", want, ids)
			}
		}
	}
	if st, err := c.Index(ctx, IndexOptions{}); err != nil || st.Removed != 0 {
		t.Fatalf("%+v, %v", st, err)
	}
}

// TestIndexLockWait: Index waiting for another process's reconcile (the
// flock held) says so once after a moment, and stops waiting when its
// context is cancelled (Ctrl-C); once the lock is free it goes on.
func TestIndexLockWait(t *testing.T) {
	kb, _ := openTest(t, "docs", map[string]string{"a.md": "alpha"}, Options{IndexDir: t.TempDir()})
	if _, err := kb.index(context.Background()); err != nil {
		t.Fatal(err)
	}
	unlock, err := lockFile(context.Background(), kb.IndexFile()+".lock", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithCancel(context.Background())
	waiting := make(chan struct{}, 2)
	done := make(chan error)
	go func() {
		_, err := kb.Index(ctx, IndexOptions{Waiting: func() { waiting <- struct{}{} }})
		done <- err
	}()
	select {
	case <-waiting:
	case <-time.After(time.Minute): // a backstop: it is called after half a second
		t.Fatal("Waiting not called while Index waited for the lock")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled wait for the lock: %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute): // a backstop: it returns at once
		t.Fatal("Index went on waiting for the lock after its context was cancelled")
	}
	if len(waiting) != 0 {
		t.Error("Waiting called more than once")
	}
	// Freed, the next Index does not wait.
	unlock()
	st, err := kb.Index(context.Background(), IndexOptions{Waiting: func() { t.Error("Waiting called for a free lock") }})
	if err != nil || st.Read != 1 {
		t.Fatalf("%+v, %v", st, err)
	}
}

// denyOpen makes the given paths of the folder unreadable to kb: by their
// permissions, or as root (who can read them anyway) by kb's open. It
// returns a function that gives them back.
func denyOpen(t *testing.T, kb *Base, dir string, rels ...string) (restore func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		for _, rel := range rels {
			if err := os.Chmod(filepath.Join(dir, rel), 0); err != nil {
				t.Fatal(err)
			}
		}
		restore = func() {
			for _, rel := range rels {
				mode := os.FileMode(0o644)
				if fi, err := os.Lstat(filepath.Join(dir, rel)); err == nil && fi.IsDir() {
					mode = 0o755
				}
				os.Chmod(filepath.Join(dir, rel), mode)
			}
		}
		t.Cleanup(restore)
		return restore
	}
	var mu sync.Mutex
	denied := map[string]bool{}
	for _, rel := range rels {
		denied[rel] = true
	}
	open := kb.open
	kb.open = func(name string) (*os.File, error) {
		mu.Lock()
		defer mu.Unlock()
		if denied[name] {
			return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EACCES}
		}
		return open(name)
	}
	return func() {
		mu.Lock()
		defer mu.Unlock()
		clear(denied)
	}
}

// TestIndexReportsSkipped: Index counts and names what it did not index,
// concepts over MaxBytes and files and folders it could not read; an
// unreadable file whose size, modification time and inode stay the same is
// not read again (and so not counted as read) on every reconcile, and is
// read once it can be.
func TestIndexReportsSkipped(t *testing.T) {
	kb, dir := openTest(t, "docs", map[string]string{
		"a.md":        "alpha",
		"big.md":      strings.Repeat("elephant ", 20),
		"secret.md":   "# Secret\nwombat",
		"locked/x.md": "hidden",
	}, Options{IndexDir: t.TempDir(), MaxBytes: 100})
	ageFiles(t, dir)
	restore := denyOpen(t, kb, dir, "secret.md", "locked")
	ctx := context.Background()
	st, err := kb.Index(ctx, IndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Concepts != 3 || st.Read != 3 || st.TooLarge != 1 || !slices.Equal(st.TooLargePaths, []string{"big.md"}) ||
		st.Unreadable != 2 || !slices.Equal(st.UnreadablePaths, []string{"locked/", "secret.md"}) {
		t.Fatalf("first index: %+v", st)
	}
	st, err = kb.Index(ctx, IndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Read != 0 || st.TooLarge != 1 || st.Unreadable != 2 || !slices.Equal(st.UnreadablePaths, []string{"locked/", "secret.md"}) {
		t.Fatalf("second index, nothing changed: %+v; want nothing read and the same counts", st)
	}
	if ids := searchIDs(t, kb, "wombat", 5); len(ids) != 0 {
		t.Fatal(ids)
	}
	// Its permissions given back (which changes no size, modification time
	// or inode), it is read.
	restore()
	st, err = kb.Index(ctx, IndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Read != 2 || st.Unreadable != 0 || st.Concepts != 4 { // secret.md and locked/x.md
		t.Fatalf("index after the permissions were given back: %+v", st)
	}
	if ids := searchIDs(t, kb, "wombat", 5); !slices.Equal(ids, []string{"secret"}) {
		t.Fatal(ids)
	}
}

// TestIndexAddsColumns: an index of this version made before
// files.unreadable existed (by an older agentctl) gets the column when
// opened, and keeps what it holds: no rebuild.
func TestIndexAddsColumns(t *testing.T) {
	indexDir := t.TempDir()
	a, dir := openTest(t, "docs", map[string]string{"a.md": "alpha"}, Options{IndexDir: indexDir})
	ageFiles(t, dir)
	if _, err := a.Index(context.Background(), IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ix.db.Exec(`ALTER TABLE files DROP COLUMN unreadable`); err != nil {
		t.Fatal(err)
	}
	a.Close()
	b, err := Open("docs", dir, Options{IndexDir: indexDir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	st, err := b.Index(context.Background(), IndexOptions{})
	if err != nil || st.Read != 0 || st.Damaged != "" {
		t.Fatalf("index of the older index: %+v, %v; want nothing read", st, err)
	}
	if ids := searchIDs(t, b, "alpha", 5); !slices.Equal(ids, []string{"a"}) {
		t.Fatal(ids)
	}
}

// TestUnreadableAtTheEpoch: an unreadable file whose modification time is
// the epoch (archives unpacked with --mtime=0, SOURCE_DATE_EPOCH=0 builds)
// is reported unreadable and not read again, as any other: a zero mtime is
// not taken for a search's stale hit, which knows none.
func TestUnreadableAtTheEpoch(t *testing.T) {
	kb, dir := openTest(t, "docs", map[string]string{"a.md": "alpha", "old.md": "# Old\nwombat"}, Options{IndexDir: t.TempDir()})
	ageFiles(t, dir)
	if err := os.Chtimes(filepath.Join(dir, "old.md"), time.Unix(0, 0), time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	denyOpen(t, kb, dir, "old.md")
	ctx := context.Background()
	for i, wantRead := range []int{2, 0} { // a.md and the attempt at old.md, then nothing
		st, err := kb.Index(ctx, IndexOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st.Read != wantRead || st.Unreadable != 1 || !slices.Equal(st.UnreadablePaths, []string{"old.md"}) {
			t.Fatalf("index %d: %+v; want %d read and old.md unreadable", i+1, st, wantRead)
		}
	}
}
