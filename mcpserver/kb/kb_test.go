package kb

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// writeFiles writes files (slash paths relative to dir) for a test knowledge base.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func openTest(t testing.TB, name string, files map[string]string, opts Options) (*Base, string) {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, files)
	kb, err := Open(name, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kb.Close() })
	return kb, dir
}

var sampleFiles = map[string]string{
	"index.md":          "---\ntitle: Welcome\n---\nStart here. See guides/setup for installation.\n",
	"guides/setup.md":   "---\ntitle: \"Setup: installing agentctl\"\ntags: [a]\n---\n# Ignored heading\n\nInstall the binary, then run agentctl instance create.\n",
	"guides/upgrade.md": "# Upgrading\n\nReplace the binary. Your instances keep working; the store migrates itself.\n",
	"notes/plain.md":    "No title here, just words about zebras.\n",
	"notes/.hidden.md":  "hidden zebra",
	".git/config.md":    "hidden folder zebra",
	"notes/readme.txt":  "not markdown zebra",
	"notes/x.md.md":     "double suffix zebra",
}

func TestListPagination(t *testing.T) {
	files := map[string]string{}
	var all []string
	for i := range 25 {
		id := fmt.Sprintf("p/c%02d", i)
		files[id+".md"] = fmt.Sprintf("# Concept %d\n", i)
		all = append(all, id)
	}
	files["q/other.md"] = "x"
	files["p-sibling.md"] = "x" // sorts between "p" and "p/" bytewise: "-" < "/"
	kb, dir := openTest(t, "docs", files, Options{})
	ctx := context.Background()

	var got []string
	cursor, pages := "", 0
	for {
		out, err := kb.List(ctx, "p/", cursor, 10)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, c := range out.Concepts {
			got = append(got, c.ID)
			if want := "Concept " + strings.TrimLeft(strings.TrimPrefix(c.ID, "p/c"), "0"); c.Title != want && !(c.ID == "p/c00" && c.Title == "Concept 0") {
				t.Errorf("%s title %q", c.ID, c.Title)
			}
		}
		if out.NextCursor == "" {
			break
		}
		if pages == 1 {
			// A concept added behind the cursor does not disturb the pages.
			writeFiles(t, dir, map[string]string{"p/a-first.md": "x"})
		}
		cursor = out.NextCursor
	}
	if pages != 3 || !slices.Equal(got, all) {
		t.Fatalf("%d pages: %v", pages, got)
	}

	// Whole listing, deterministic and sorted.
	out, err := kb.List(ctx, "", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Concepts) != 28 || !slices.IsSortedFunc(out.Concepts, func(a, b ConceptSummary) int { return strings.Compare(a.ID, b.ID) }) {
		t.Fatalf("%d concepts", len(out.Concepts))
	}
	// Prefixes that are not folder boundaries, and ones that cannot match.
	for prefix, n := range map[string]int{"p": 27, "p/c1": 10, "q/": 1, "zz/": 0, "../": 0, "p/c00": 1, "/p": 0} {
		out, err := kb.List(ctx, prefix, "", 1000)
		if err != nil || len(out.Concepts) != n {
			t.Errorf("prefix %q: %d concepts, want %d (%v)", prefix, len(out.Concepts), n, err)
		}
	}
	if _, err := kb.List(ctx, "", "!!not-a-cursor", 10); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("bad cursor: %v", err)
	}
	out, _ = kb.List(ctx, "", "", 5000)
	if len(out.Concepts) != 28 {
		t.Fatal("limit above the maximum is clamped")
	}
}

func TestTitles(t *testing.T) {
	for _, tc := range []struct {
		content, title, frontMatterTitle string
	}{
		{"---\ntitle: Plain\n---\nbody", "Plain", "Plain"},
		{"---\ntitle: \"Quoted: yes\"\n---\n", "Quoted: yes", "Quoted: yes"},
		{"---\ntitle: 'It''s single'\n---\n", "It's single", "It's single"},
		{"---\ntitle: \"esc \\\"q\\\"\"\n---\n", `esc "q"`, `esc "q"`},
		{"---\ntitle: With comment # note\n---\n", "With comment", "With comment"},
		{"---\r\ntitle: CRLF\r\n---\r\nbody", "CRLF", "CRLF"},
		{"\ufeff---\ntitle: BOM\n---\n", "BOM", "BOM"},
		{"---\ntitle: >\n  Folded\n  title\nother: x\n---\n", "Folded title", "Folded title"},
		{"---\nauthor: x\n---\n# From heading\n", "From heading", ""},
		{"---\n  title: nested, not top-level\n---\n# H\n", "H", ""},
		{"# Heading #\ntext", "Heading", ""},
		{"intro\n```\n# not a heading\n```\n# Real\n", "Real", ""},
		{"## Second level only\n", "", ""},
		{"---\ntitle: unterminated\n# Heading\n", "Heading", ""}, // no closing ---: no front matter
		{"", "", ""},
	} {
		if got := conceptTitle([]byte(tc.content)); got != tc.title {
			t.Errorf("conceptTitle(%q) = %q, want %q", tc.content, got, tc.title)
		}
		if got, _, _ := splitFrontMatter([]byte(tc.content)); got != tc.frontMatterTitle {
			t.Errorf("front matter title of %q = %q, want %q", tc.content, got, tc.frontMatterTitle)
		}
	}
	// Read gives the front-matter title only; list and search fall back to
	// the heading.
	kb, _ := openTest(t, "docs", map[string]string{"h.md": "# Heading only\n\nsome words\n"}, Options{})
	ctx := context.Background()
	r, err := kb.Read(ctx, "h")
	if err != nil || r.Title != "" {
		t.Fatalf("read title %q %v", r.Title, err)
	}
	l, _ := kb.List(ctx, "", "", 0)
	s, _ := kb.Search(ctx, "words", 0)
	if l.Concepts[0].Title != "Heading only" || s.Results[0].Title != "Heading only" {
		t.Fatalf("list %v search %v", l, s)
	}
}

func TestCleanConceptID(t *testing.T) {
	for id, want := range map[string]string{
		"a": "a", "guides/setup": "guides/setup", "guides/setup.md": "guides/setup",
		"with space/ü": "with space/ü", "a.b": "a.b", "a..b": "a..b", "x.MD": "x.MD",
	} {
		if got, err := CleanConceptID(id); err != nil || got != want {
			t.Errorf("CleanConceptID(%q) = %q, %v; want %q", id, got, err, want)
		}
	}
	for id, why := range map[string]string{
		"":                       "empty",
		"../x":                   `".." component`,
		"a/../../x":              `".." component`,
		"a/./b":                  `"." component`,
		"/etc/passwd":            "absolute",
		`a\b`:                    "backslash",
		"a\x00b":                 "NUL",
		"a\nb":                   "control character",
		"a//b":                   "empty folder name",
		"a/":                     "names a folder",
		".hidden":                "hidden",
		"a/.git/x":               "hidden",
		".md":                    "no name",
		"x.md.md":                "twice",
		"\xff":                   "UTF-8",
		strings.Repeat("a", 300): "longer than 200",
	} {
		_, err := CleanConceptID(id)
		if !errors.Is(err, ErrInvalidConceptID) || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), `e.g. "guides/setup"`) {
			t.Errorf("CleanConceptID(%q) = %v; want an error about %q", id, err, why)
		}
	}
}

func FuzzCleanConceptID(f *testing.F) {
	for _, s := range []string{"a", "guides/setup.md", "../x", "a/../../x", "/etc/passwd", `a\b`, "a\x00b", "", ".", "..", "a/..", "...", "a/.../b", "x.md.md", "C:/x", "~/x", "a//b"} {
		f.Add(s)
	}
	root := filepath.FromSlash("/kb/root")
	f.Fuzz(func(t *testing.T, id string) {
		c, err := CleanConceptID(id)
		if err != nil {
			if !errors.Is(err, ErrInvalidConceptID) {
				t.Fatalf("%q: unexpected error %v", id, err)
			}
			return
		}
		for part := range strings.SplitSeq(c, "/") {
			if part == ".." || part == "." || part == "" {
				t.Fatalf("%q accepted as %q with component %q", id, c, part)
			}
		}
		rel := c + ".md"
		joined := filepath.Join(root, filepath.FromSlash(rel))
		if !strings.HasPrefix(joined, root+string(filepath.Separator)) || !filepath.IsLocal(filepath.FromSlash(rel)) {
			t.Fatalf("%q accepted as %q, which leaves the root: %s", id, c, joined)
		}
		if again, err := CleanConceptID(c); err != nil || again != c {
			t.Fatalf("%q: canonical id %q is not stable: %q %v", id, c, again, err)
		}
	})
}

func TestOpenErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	for _, dir := range []string{file, filepath.Join(t.TempDir(), "missing")} {
		if _, err := Open("docs", dir, Options{}); err == nil || !strings.Contains(err.Error(), `knowledge base "docs"`) {
			t.Errorf("Open(%s): %v", dir, err)
		}
	}
	kb, _ := openTest(t, "docs", nil, Options{})
	kb.Close()
	if _, err := kb.Read(context.Background(), "x"); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("read after close: %v", err)
	}
	// Close stops the background refresher of a searched knowledge base.
	kb2, _ := openTest(t, "docs", map[string]string{"a.md": "alpha"}, Options{RefreshInterval: time.Millisecond})
	if _, err := kb2.Search(context.Background(), "alpha", 1); err != nil {
		t.Fatal(err)
	}
	if err := kb2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := kb2.Search(context.Background(), "alpha", 1); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("search after close: %v", err)
	}
}

const (
	crashEnv  = "KB_CRASH_WRITER"
	crashSize = 512 << 10
)

// TestCrashWriter is the child process of TestCrashSafety: it writes a
// large concept in a loop, alternating two contents, until it is killed.
func TestCrashWriter(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("helper process of TestCrashSafety")
	}
	kb, err := Open("crash", dir, Options{})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	contents := []string{strings.Repeat("A", crashSize), strings.Repeat("B", crashSize)}
	fmt.Println("ready")
	deadline := time.Now().Add(time.Minute) // never outlive a parent that died
	for i := 0; time.Now().Before(deadline); i++ {
		if _, err := kb.Write(context.Background(), "big", contents[i%2]); err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
	}
	os.Exit(0)
}

func TestCrashSafety(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("needs SIGKILL and subprocesses")
	}
	dir := t.TempDir()
	initial := "# Initial\n"
	writeFiles(t, dir, map[string]string{"big.md": initial})
	valid := map[string]string{initial: "initial", strings.Repeat("A", crashSize): "A", strings.Repeat("B", crashSize): "B"}
	seen := map[string]int{}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 6 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		ready := false
		for !ready && sc.Scan() {
			if strings.HasPrefix(sc.Text(), "error:") {
				t.Fatal(sc.Text())
			}
			ready = sc.Text() == "ready"
		}
		if !ready {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the writer never became ready")
		}
		time.Sleep(time.Duration(1+rng.IntN(40)) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil { // SIGKILL
			t.Fatal(err)
		}
		cmd.Wait()

		kb, err := Open("crash", dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := kb.Read(context.Background(), "big")
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		which, ok := valid[r.Content]
		if !ok {
			t.Fatalf("round %d: torn concept: %d bytes, starts %q, ends %q", round, len(r.Content), r.Content[:min(8, len(r.Content))], r.Content[max(0, len(r.Content)-8):])
		}
		seen[which]++
		l, err := kb.List(context.Background(), "", "", 0)
		if err != nil || len(l.Concepts) != 1 || l.Concepts[0].ID != "big" {
			t.Fatalf("round %d: list %v %v", round, l, err)
		}
		if s, err := kb.Search(context.Background(), "initial", 10); err != nil || len(s.Results) > 1 {
			t.Fatalf("round %d: search %v %v", round, s, err)
		}
		kb.Close()
	}
	ents, _ := os.ReadDir(dir)
	var temps []string
	for _, e := range ents {
		if isTempName(e.Name()) {
			temps = append(temps, e.Name())
		}
	}
	t.Logf("contents seen after SIGKILL: %v; temporary files left behind: %d", seen, len(temps))

	// Leftover temporary files are removed by a walk once they are stale.
	kb, err := Open("crash", dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	kb.staleTempAge = 0
	if _, err := kb.List(context.Background(), "", "", 0); err != nil {
		t.Fatal(err)
	}
	ents, _ = os.ReadDir(dir)
	for _, e := range ents {
		if isTempName(e.Name()) {
			t.Fatalf("stale temporary file %s not removed", e.Name())
		}
	}
}

func TestTempFiles(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		t.Run(fmt.Sprint("read-only=", readOnly), func(t *testing.T) {
			stale := ".a.md" + tempMarker + "0011"
			fresh := ".a.md" + tempMarker + "2233"
			kb, dir := openTest(t, "docs", map[string]string{
				"a.md": "alpha", "sub/" + stale: "half a write", stale: "half", fresh: "in flight",
			}, Options{ReadOnly: readOnly})
			old := time.Now().Add(-2 * defaultStaleTempAge)
			for _, p := range []string{stale, "sub/" + stale} {
				if err := os.Chtimes(filepath.Join(dir, p), old, old); err != nil {
					t.Fatal(err)
				}
			}
			l, err := kb.List(context.Background(), "", "", 0)
			if err != nil || len(l.Concepts) != 1 || l.Concepts[0].ID != "a" {
				t.Fatalf("list %v %v", l, err)
			}
			if s, _ := kb.Search(context.Background(), "half write flight", 10); len(s.Results) != 0 {
				t.Fatalf("temporary files searched: %v", s.Results)
			}
			for p, wantGone := range map[string]bool{stale: !readOnly, "sub/" + stale: !readOnly, fresh: false} {
				_, err := os.Stat(filepath.Join(dir, p))
				if gone := errors.Is(err, os.ErrNotExist); gone != wantGone {
					t.Errorf("%s: removed=%v, want %v", p, gone, wantGone)
				}
			}
		})
	}
}

// waitForSearch polls until check accepts the search's ids.
func waitForSearch(t *testing.T, kb *Base, query string, check func(ids []string) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var ids []string
	for time.Now().Before(deadline) {
		out, err := kb.Search(context.Background(), query, 50)
		if err != nil {
			t.Fatal(err)
		}
		ids = ids[:0]
		for _, r := range out.Results {
			ids = append(ids, r.ID)
		}
		if check(ids) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("search %q: still %v", query, ids)
}

func TestSearchFreshness(t *testing.T) {
	kb, dir := openTest(t, "docs", map[string]string{"a.md": "alpha beta", "sub/b.md": "beta"}, Options{RefreshInterval: 10 * time.Millisecond})
	has := func(want ...string) func([]string) bool {
		return func(ids []string) bool { return slices.Equal(ids, want) }
	}
	waitForSearch(t, kb, "alpha", has("a"))

	// Edits outside agentctl: added, changed (same size too), removed.
	writeFiles(t, dir, map[string]string{"sub/new.md": "gamma", "a.md": "delta beta"})
	waitForSearch(t, kb, "gamma", has("sub/new"))
	waitForSearch(t, kb, "alpha", has())
	waitForSearch(t, kb, "delta", has("a"))
	writeFiles(t, dir, map[string]string{"a.md": "omega beta"}) // same size, same second
	waitForSearch(t, kb, "omega", has("a"))
	if err := os.RemoveAll(filepath.Join(dir, "sub")); err != nil {
		t.Fatal(err)
	}
	waitForSearch(t, kb, "beta gamma", has("a"))

	// Writes through Write are searchable at once, without a refresh.
	kb2, _ := openTest(t, "docs", map[string]string{"a.md": "alpha"}, Options{RefreshInterval: time.Hour})
	ctx := context.Background()
	if s, _ := kb2.Search(ctx, "alpha", 10); len(s.Results) != 1 {
		t.Fatal(s)
	}
	for _, step := range []struct{ id, content, query, want string }{
		{"q/quokka", "# Quokka\nsmiling marsupial", "quokka", "q/quokka"},
		{"a", "now about wombats", "wombats", "a"},
		{"a", "now about wombats", "alpha", ""},
	} {
		if _, err := kb2.Write(ctx, step.id, step.content); err != nil {
			t.Fatal(err)
		}
		s, err := kb2.Search(ctx, step.query, 10)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if len(s.Results) > 0 {
			got = s.Results[0].ID
		}
		if got != step.want || len(s.Results) > 1 {
			t.Fatalf("after writing %s, search %q = %v", step.id, step.query, s.Results)
		}
	}
}

func TestSearchRanking(t *testing.T) {
	filler := strings.Repeat("lorem ipsum dolor sit amet consectetur ", 20)
	kb, _ := openTest(t, "docs", map[string]string{
		"title.md":   "---\ntitle: Deploying services\n---\n" + filler,
		"body.md":    "---\ntitle: Something else\n---\n" + filler + " we mention deploying once here, near the end of a long text. " + filler,
		"both.md":    "# Deploying with rollbacks\n\nDeploying is easy; rollbacks are easier.\n",
		"nothing.md": filler,
	}, Options{})
	s, err := kb.Search(context.Background(), "Deploying rollbacks", 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range s.Results {
		ids = append(ids, r.ID)
	}
	if !slices.Equal(ids, []string{"both", "title", "body"}) {
		t.Fatalf("ranking %v", s.Results)
	}
	for i := 1; i < len(s.Results); i++ {
		if s.Results[i].Score > s.Results[i-1].Score {
			t.Fatal("not sorted by score")
		}
	}
	body := s.Results[2]
	if !strings.Contains(body.Snippet, "mention deploying once") || !strings.HasPrefix(body.Snippet, "…") || !strings.HasSuffix(body.Snippet, "…") || len(body.Snippet) > 260 {
		t.Fatalf("snippet %q", body.Snippet)
	}
	if s, _ := kb.Search(context.Background(), "Deploying", 1); len(s.Results) != 1 {
		t.Fatal("limit ignored")
	}
	if s, _ := kb.Search(context.Background(), "!!!", 1); len(s.Results) != 0 {
		t.Fatal("a query without words matches nothing")
	}
	if s, _ := kb.Search(context.Background(), "ÜBER", 1); len(s.Results) != 0 {
		t.Fatal(s)
	}
}

func TestSnippet(t *testing.T) {
	body := []byte("Short text about Ünïcode wörds and more.")
	if got := snippet(body, []string{"wörds"}); got != string(body) {
		t.Fatalf("short body: %q", got)
	}
	long := []byte(strings.Repeat("aaa ", 100) + "needle in the haystack " + strings.Repeat("é ", 200))
	got := snippet(long, []string{"needle"})
	if !strings.Contains(got, "needle in the haystack") || !strings.HasPrefix(got, "…") || !strings.HasSuffix(got, "…") {
		t.Fatalf("%q", got)
	}
	if !utf8Valid(got) {
		t.Fatalf("invalid UTF-8 snippet %q", got)
	}
	// The window with most distinct terms wins over the first match.
	long = []byte("alpha " + strings.Repeat("x ", 300) + "alpha beta gamma")
	if got := snippet(long, []string{"alpha", "beta", "gamma"}); !strings.Contains(got, "alpha beta gamma") {
		t.Fatalf("%q", got)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\ufffd") == s }

func TestTokens(t *testing.T) {
	var toks []string
	tokens([]byte("Hello, World! max_bytes Ünïcode 2026-07 "+strings.Repeat("z", 65)), nil, func(tok []byte, s, e int) {
		toks = append(toks, string(tok))
	})
	if !slices.Equal(toks, []string{"hello", "world", "max", "bytes", "ünïcode", "2026", "07"}) {
		t.Fatalf("%q", toks)
	}
}

func TestIndexCompaction(t *testing.T) {
	x := newIndex()
	an := newAnalyzer()
	x.add("keep", 1, 1, an.analyze([]byte("# Keep\nsteady words")))
	for i := range 3000 {
		x.add(fmt.Sprintf("churn%d", i%3), 1, 1, an.analyze([]byte(fmt.Sprintf("round%d common", i))))
		x.maybeCompact()
	}
	if x.live != 4 || len(x.docs) > 1100 || len(x.byID) != 4 {
		t.Fatalf("live %d, docs %d: tombstones not compacted", x.live, len(x.docs))
	}
	hits := x.search([]string{"common", "steady", "round2999"}, 10)
	var ids []string
	for _, h := range hits {
		ids = append(ids, h.id)
	}
	if !slices.Equal(ids, []string{"churn2", "keep", "churn0", "churn1"}) || hits[1].title != "Keep" {
		t.Fatalf("after compaction: %+v", hits)
	}
	if h := x.search([]string{"round5"}, 10); len(h) != 0 {
		t.Fatalf("removed content still found: %+v", h)
	}
}

// TestConcurrentUse runs writes, searches and lists at once (for -race).
func TestConcurrentUse(t *testing.T) {
	kb, _ := openTest(t, "docs", sampleFiles, Options{RefreshInterval: time.Millisecond})
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 30 {
				id := fmt.Sprintf("w%d/c%d", w, i%5)
				if _, err := kb.Write(ctx, id, fmt.Sprintf("# C%d\nconcurrent word%d", i, i)); err != nil {
					t.Error(err)
				}
				if _, err := kb.Search(ctx, "concurrent binary", 5); err != nil {
					t.Error(err)
				}
				if _, err := kb.List(ctx, fmt.Sprintf("w%d/", w), "", 3); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	s, err := kb.Search(ctx, "concurrent", 50)
	if err != nil || len(s.Results) != 20 {
		t.Fatalf("%d results, %v", len(s.Results), err)
	}
}
