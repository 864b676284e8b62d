package kb

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// zipfKB makes n concepts of words drawn from a Zipf distribution over
// vocab (a few words in nearly every concept, a long tail of rare ones),
// with a title of three words.
func zipfKB(n int, vocab []string, seed uint64) map[string]string {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(vocab)-1))
	files := map[string]string{}
	for i := range n {
		var sb strings.Builder
		fmt.Fprintf(&sb, "# %s %s %s\n\n", vocab[zipf.Uint64()], vocab[rng.IntN(len(vocab))], vocab[zipf.Uint64()])
		for range 20 + rng.IntN(200) {
			sb.WriteString(vocab[zipf.Uint64()])
			sb.WriteByte(' ')
		}
		files[fmt.Sprintf("c%04d.md", i)] = sb.String()
	}
	return files
}

// TestSearchPruneSameAnswer: a search answered by the cheaper queries (see
// ftsIndex.pruned) returns what the whole query does: the same concepts
// with the same scores as reported (rounded), in the same order; on a
// generated corpus, for queries mixing common and rare words, and for
// several page sizes.
func TestSearchPruneSameAnswer(t *testing.T) {
	vocab := benchKBVocabulary()[:600]
	kb, _ := openTest(t, "zipf", zipfKB(400, vocab, 3), Options{})
	ctx := context.Background()
	if _, err := kb.Index(ctx, IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	ix, err := kb.index(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	const queries = 300
	for q := range queries {
		var terms []string
		for range 2 + rng.IntN(3) {
			// Ranks mostly among the most common words (found in over
			// half of the concepts), some middling, some rare.
			var r int
			switch rng.IntN(3) {
			case 0:
				r = rng.IntN(8)
			case 1:
				r = 8 + rng.IntN(40)
			default:
				r = 48 + rng.IntN(len(vocab)-48)
			}
			terms = append(terms, vocab[r])
		}
		terms, _ = queryTerms(strings.Join(terms, " "))
		k := []int{1, 3, 10, 50}[q%4]
		ix.noPrune = false
		got, err := ix.search(ctx, terms, k, DefaultMaxBytes)
		if err != nil {
			t.Fatal(err)
		}
		ix.noPrune = true
		want, err := ix.search(ctx, terms, k, DefaultMaxBytes)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d: %q: %d hits, the whole query %d", q, terms, len(got), len(want))
		}
		for i := range got {
			if got[i].id != want[i].id || roundScore(got[i].score) != roundScore(want[i].score) {
				t.Fatalf("%d: %q: hit %d is %s scoring %v, the whole query's %s scoring %v", q, terms, i, got[i].id, got[i].score, want[i].id, want[i].score)
			}
		}
	}
	// The corpus and queries must exercise the cheaper queries, else this
	// proves nothing.
	t.Logf("of %d searches, %d were answered by the cheaper queries", queries, ix.splits.Load())
	if ix.splits.Load() < queries/5 {
		t.Fatal("too few")
	}
}

// TestSearchPruneBound: when concepts having only a frequent term outscore
// the k best having the rarer one (here, short concepts repeating it against
// long ones mentioning the rare term once), the search is the whole query's.
func TestSearchPruneBound(t *testing.T) {
	files := map[string]string{}
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 60)
	for i := range 100 {
		var text string
		switch {
		case i < 3:
			text = filler + " omega " + filler // the rare term, once, in a long text
		case i < 43:
			text = strings.Repeat("alpha ", 10) // the frequent term (40%), in short texts
		default:
			text = "lorem ipsum"
		}
		files[fmt.Sprintf("c%03d.md", i)] = text
	}
	kb, _ := openTest(t, "bound", files, Options{})
	ctx := context.Background()
	if _, err := kb.Index(ctx, IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	ix, err := kb.index(ctx)
	if err != nil {
		t.Fatal(err)
	}
	terms := []string{"alpha", "omega"}
	const k = 3
	ix.noPrune = true
	want, err := ix.search(ctx, terms, k, DefaultMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	ix.noPrune = false
	got, err := ix.search(ctx, terms, k, DefaultMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	// The frequent term's concepts must win, else the case tests nothing.
	if len(want) != k || want[0].id < "c003" || want[0].id >= "c043" {
		t.Fatalf("the whole query's hits %+v: the case does not test the bound", want)
	}
	for i := range want {
		if i >= len(got) || got[i].id != want[i].id {
			t.Fatalf("hits %+v, the whole query's %+v", got, want)
		}
	}
}
