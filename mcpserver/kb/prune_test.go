package kb

import (
	"context"
	"fmt"
	"math"
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

// TestSearchPruneSameAnswer: a search run without its common terms (see
// ftsIndex.search) returns the concepts the whole query does, in its order,
// but for ties within what the left-out terms can add; on a generated
// corpus, for queries mixing common and rare words.
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
	const k, queries = 10, 300
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
		more, err := ix.search(ctx, terms, k+50, DefaultMaxBytes)
		if err != nil {
			t.Fatal(err)
		}
		full := map[string]float64{}
		for _, h := range more {
			full[h.id] = h.score
		}
		tie := float64(len(terms)) * commonWeight
		if len(got) != len(want) {
			t.Fatalf("%d: %q: %d hits, the whole query %d", q, terms, len(got), len(want))
		}
		for i := range got {
			if math.Abs(got[i].score-want[i].score) > tie {
				t.Fatalf("%d: %q: hit %d scores %g (%s), the whole query's %g (%s)", q, terms, i, got[i].score, got[i].id, want[i].score, want[i].id)
			}
			s, ok := full[got[i].id]
			if !ok || math.Abs(s-got[i].score) > tie {
				t.Fatalf("%d: %q: %s scores %g, by the whole query %g (found %v)", q, terms, got[i].id, got[i].score, s, ok)
			}
			if s < want[len(want)-1].score-tie {
				t.Fatalf("%d: %q: %s (%g) is not in the whole query's top %d (last %g)", q, terms, got[i].id, s, k, want[len(want)-1].score)
			}
		}
	}
	// The corpus and queries must exercise both ways, else this proves
	// nothing.
	t.Logf("of %d searches, %d left common terms out, %d scored frequent ones for the rarer ones' concepts only", queries, ix.prunes.Load(), ix.splits.Load())
	if ix.prunes.Load() < queries/10 || ix.splits.Load() < queries/10 {
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
