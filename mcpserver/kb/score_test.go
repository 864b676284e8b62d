package kb

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/testkit"
)

// scoreCorpus is the knowledge base of the one-score tests: concepts of
// Zipf-distributed words (a few words in most concepts, a long tail of rare
// ones), and tieConcepts identical ones (equal scores for any query), more
// than a search fetches beyond its limit, so which of them a page holds is
// decided by the tie-break alone.
func scoreCorpus(vocab []string) map[string]string {
	files := zipfKB(300, vocab, 11)
	for i := range tieConcepts {
		files[tieID(i)+".md"] = "# Quokka notes\n\nThe quokka and the marmot; " + vocab[0] + " " + vocab[1] + ".\n"
	}
	return files
}

const tieConcepts = 40

func tieID(i int) string { return fmt.Sprintf("tie/t%02d", i) }

// scoreQueries are queries mixing common, middling and rare words of
// vocab, and the tied concepts' words alone and with common ones.
func scoreQueries(vocab []string, n int) []string {
	rng := rand.New(rand.NewPCG(21, 22))
	qs := []string{"quokka", "quokka marmot", "marmot " + vocab[0], "quokka " + vocab[1] + " " + vocab[2], vocab[0], vocab[0] + " " + vocab[1]}
	for range n {
		var words []string
		for range 1 + rng.IntN(4) {
			var r int
			switch rng.IntN(3) {
			case 0:
				r = rng.IntN(8)
			case 1:
				r = 8 + rng.IntN(40)
			default:
				r = 48 + rng.IntN(len(vocab)-48)
			}
			words = append(words, vocab[r])
		}
		if rng.IntN(5) == 0 {
			words = append(words, "quokka")
		}
		qs = append(qs, strings.Join(words, " "))
	}
	return qs
}

// TestSearchOneScoreEveryPath: every way a search can be answered gives
// the same hits with the same scores in the same order, for the same query
// over the same concepts: an index built in one go and one kept up to date
// by writes and reconciles (whose rows are in another order), each with
// the cheaper queries a search tries first (see ftsIndex.search) and with
// every query run whole, a stale index answering while it is brought up
// to date in the background, a damaged index built again, and any limit
// (a page of k hits is the first k of a larger page). Scores are reported
// rounded to 4 significant digits, equal scores ordered by id.
func TestSearchOneScoreEveryPath(t *testing.T) {
	ctx := context.Background()
	vocab := benchKBVocabulary()[:600]
	files := scoreCorpus(vocab)
	queries := scoreQueries(vocab, 60)
	indexDir := t.TempDir()

	// Built in one go.
	fresh, freshDir := openTest(t, "docs", files, Options{IndexDir: indexDir})
	ageFiles(t, freshDir)
	if _, err := fresh.Index(ctx, IndexOptions{}); err != nil {
		t.Fatal(err)
	}

	// Kept up to date: built from part of the concepts, the rest written
	// through Write (the tied ones in descending id order) or found by a
	// reconcile, some rewritten: rows no longer in id order.
	part := map[string]string{}
	var later []string
	for name, content := range files {
		if strings.HasPrefix(name, "tie/") || len(part) >= 200 {
			later = append(later, name)
			continue
		}
		part[name] = content
	}
	slices.Sort(later)
	slices.Reverse(later)
	kept, keptDir := openTest(t, "docs", part, Options{IndexDir: indexDir})
	if _, err := kept.Index(ctx, IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, name := range later {
		if i%2 == 0 {
			if _, err := kept.Write(ctx, strings.TrimSuffix(name, ".md"), files[name]); err != nil {
				t.Fatal(err)
			}
		} else {
			testkit.WriteFiles(t, keptDir, map[string]string{name: files[name]})
		}
	}
	for _, name := range []string{"c0003.md", "c0100.md", "c0150.md"} {
		if _, err := kept.Write(ctx, strings.TrimSuffix(name, ".md"), files[name]); err != nil {
			t.Fatal(err)
		}
	}
	ageFiles(t, keptDir)
	if _, err := kept.Index(ctx, IndexOptions{}); err != nil {
		t.Fatal(err)
	}

	// Stale: every search finds the index older than its refresh interval,
	// answers from it and starts a reconcile in the background.
	stale, err := Open("docs", freshDir, Options{IndexDir: indexDir, RefreshInterval: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stale.Close() })

	type path struct {
		name    string
		kb      *Base
		noPrune bool
	}
	paths := []path{
		{"built in one go, every query whole", fresh, true},
		{"built in one go", fresh, false},
		{"kept up to date, every query whole", kept, true},
		{"kept up to date", kept, false},
		{"stale", stale, false},
	}
	setNoPrune := func(kb *Base, on bool) {
		ix, err := kb.index(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ix.noPrune = on
	}
	want := map[string][]SearchResult{}
	for _, q := range queries {
		setNoPrune(fresh, true)
		out, err := fresh.Search(ctx, q, MaxSearchLimit)
		if err != nil {
			t.Fatal(err)
		}
		checkOrder(t, q, out.Results)
		want[q] = out.Results
	}
	check := func(name, q string, k int, got []SearchResult) {
		t.Helper()
		w := want[q][:min(k, len(want[q]))]
		if !slices.Equal(got, w) {
			t.Fatalf("%s, %q, limit %d:\n got %s\nwant %s", name, q, k, describeResults(got), describeResults(w))
		}
	}
	prunedSome := int64(0)
	for _, p := range paths {
		setNoPrune(p.kb, p.noPrune)
		ix, _ := p.kb.index(ctx)
		before := ix.splits.Load()
		for _, q := range queries {
			for _, k := range []int{1, 3, 10, MaxSearchLimit} {
				out, err := p.kb.Search(ctx, q, k)
				if err != nil {
					t.Fatal(err)
				}
				check(p.name, q, k, out.Results)
			}
		}
		prunedSome += ix.splits.Load() - before
	}
	// The cheaper queries must have answered some searches, else the
	// comparison proves nothing about them.
	if prunedSome < int64(len(queries)) {
		t.Fatalf("only %d searches were answered by the cheaper queries", prunedSome)
	}

	// Damaged: the index is built again from the folder and the search
	// rerun.
	for _, kb := range []*Base{stale, fresh, kept} {
		if err := kb.Close(); err != nil {
			t.Fatal(err)
		}
	}
	damageFile(t, filepath.Join(indexDir, filepath.Base(fresh.IndexFile())), 4096, 3*4096)
	rebuilt, err := Open("docs", freshDir, Options{IndexDir: indexDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rebuilt.Close() })
	for i, q := range queries {
		out, err := rebuilt.Search(ctx, q, 10)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 && rebuilt.walks.Load() == 0 {
			t.Fatal("the damaged index was not built again")
		}
		check("damaged, built again", q, 10, out.Results)
	}
}

// checkOrder fails unless results are in the documented order: score
// descending, equal scores by id.
func checkOrder(t *testing.T, q string, results []SearchResult) {
	t.Helper()
	for i := 1; i < len(results); i++ {
		a, b := results[i-1], results[i]
		if a.Score < b.Score || a.Score == b.Score && a.ID >= b.ID {
			t.Fatalf("%q: hit %d (%s %g) before hit %d (%s %g)", q, i-1, a.ID, a.Score, i, b.ID, b.Score)
		}
	}
}

func describeResults(rs []SearchResult) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, " %s:%g", r.ID, r.Score)
	}
	return b.String()
}
