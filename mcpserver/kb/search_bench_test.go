package kb

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	benchKBConcepts = 10_000
	benchKBBytes    = 2 << 10 // about 2 KB each
	benchKBVocab    = 4_000
)

// benchKBVocabulary makes benchKBVocab distinct pronounceable words,
// deterministically.
func benchKBVocabulary() []string {
	rng := rand.New(rand.NewPCG(7, 11))
	onsets := []string{"b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "cl", "st", "tr", "sh", "ch", "gr", "pl"}
	vowels := []string{"a", "e", "i", "o", "u", "ai", "ou", "ea"}
	codas := []string{"", "", "n", "r", "s", "t", "l", "m", "x", "nd", "st"}
	seen := map[string]bool{}
	var words []string
	for len(words) < benchKBVocab {
		var b strings.Builder
		for range 1 + rng.IntN(3) {
			b.WriteString(onsets[rng.IntN(len(onsets))])
			b.WriteString(vowels[rng.IntN(len(vowels))])
		}
		b.WriteString(codas[rng.IntN(len(codas))])
		if w := b.String(); len(w) > 2 && !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	return words
}

// writeBenchKB writes benchKBConcepts concepts of about benchKBBytes each in
// 100 folders: front-matter titles, headings, paragraphs of sentences whose
// words follow a Zipf distribution over the vocabulary (a few very common
// words, a long tail of rare ones), as natural text does.
func writeBenchKB(b *testing.B, dir string, vocab []string) {
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.07, 2, uint64(len(vocab)-1))
	word := func() string { return vocab[zipf.Uint64()] }
	rare := func() string { return vocab[100+rng.IntN(len(vocab)-100)] }
	sentence := func(sb *strings.Builder) {
		n := 6 + rng.IntN(12)
		for i := range n {
			w := word()
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			} else {
				sb.WriteByte(' ')
			}
			sb.WriteString(w)
		}
		sb.WriteString(". ")
	}
	for i := range benchKBConcepts {
		var sb strings.Builder
		title := strings.Join([]string{rare(), word(), rare()}, " ")
		fmt.Fprintf(&sb, "---\ntitle: %s\ntags: [%s, %s]\n---\n\n# %s\n\n", title, word(), word(), title)
		for sb.Len() < benchKBBytes {
			if rng.IntN(6) == 0 {
				fmt.Fprintf(&sb, "\n## %s %s\n\n", rare(), word())
			}
			for range 2 + rng.IntN(4) {
				sentence(&sb)
			}
			sb.WriteString("\n\n")
		}
		p := filepath.Join(dir, fmt.Sprintf("area%02d", i%100), fmt.Sprintf("topic%05d.md", i))
		if i < 100 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// benchKBQueries are fixed queries mixing common, middling and rare words,
// one to four words long.
func benchKBQueries(vocab []string) []string {
	ranks := [][]int{
		{3}, {40}, {250}, {1200}, {3900},
		{5, 900}, {60, 2500}, {300, 301}, {1500, 3000}, {10, 20},
		{2, 700, 3300}, {80, 1800, 2600}, {150, 450, 3500}, {1000, 2000, 3000},
		{1, 50, 500, 3700}, {33, 333, 1333, 3333}, {7, 77, 777, 2777}, {600}, {2200, 15}, {3999},
	}
	var qs []string
	for _, rs := range ranks {
		var ws []string
		for _, r := range rs {
			ws = append(ws, vocab[r])
		}
		qs = append(qs, strings.Join(ws, " "))
	}
	return qs
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func reportDurations(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(ds[len(ds)/2]), "ms/median")
	b.ReportMetric(ms(ds[len(ds)*99/100]), "ms/p99")
}

// linearScanSearch is the baseline: read every file and count the query
// words each contains (strings.Contains on the lower-cased text).
func linearScanSearch(dir, query string, limit int) ([]string, error) {
	terms := strings.Fields(strings.ToLower(query))
	type hit struct {
		id string
		n  int
	}
	var hits []hit
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		text := strings.ToLower(string(data))
		n := 0
		for _, t := range terms {
			if strings.Contains(text, t) {
				n++
			}
		}
		if n > 0 {
			hits = append(hits, hit{p, n})
		}
		return nil
	})
	slices.SortFunc(hits, func(a, b hit) int { return b.n - a.n })
	var ids []string
	for _, h := range hits[:min(limit, len(hits))] {
		ids = append(ids, h.id)
	}
	return ids, err
}

// BenchmarkKBSearch measures concept_search on a generated knowledge base of
// 10,000 concepts of about 2 KB: the first query (which builds the index,
// with the index's heap size), steady-state queries, the periodic stat walk
// that notices outside edits, and, as the baseline, a linear scan that reads
// every file per query.
//
//	go test -run '^$' -bench KBSearch -benchmem ./mcpserver/kb
func BenchmarkKBSearch(b *testing.B) {
	dir := b.TempDir()
	vocab := benchKBVocabulary()
	writeBenchKB(b, dir, vocab)
	queries := benchKBQueries(vocab)
	ctx := context.Background()

	b.Run("first_query_index_build", func(b *testing.B) {
		var total time.Duration
		var indexBytes uint64
		n := 0
		for b.Loop() {
			b.StopTimer()
			before := heapAlloc()
			kb, err := Open("bench", dir, Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			start := time.Now()
			if _, err := kb.Search(ctx, queries[0], 10); err != nil {
				b.Fatal(err)
			}
			total += time.Since(start)
			b.StopTimer()
			indexBytes = heapAlloc() - before
			var rows int
			if err := kb.ix.db.QueryRow(`SELECT count(*) FROM files WHERE indexed`).Scan(&rows); err != nil || rows != benchKBConcepts {
				b.Fatalf("indexed %d concepts: %v", rows, err)
			}
			runtime.KeepAlive(kb)
			kb.Close()
			n++
			b.StartTimer()
		}
		b.ReportMetric(float64(total)/float64(n)/float64(time.Millisecond), "ms/build")
		b.ReportMetric(float64(indexBytes)/(1<<20), "MB-index")
	})

	b.Run("steady_state", func(b *testing.B) {
		kb, err := Open("bench", dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer kb.Close()
		if _, err := kb.Search(ctx, queries[0], 10); err != nil {
			b.Fatal(err)
		}
		var ds []time.Duration
		i := 0
		for b.Loop() {
			q := queries[i%len(queries)]
			i++
			start := time.Now()
			out, err := kb.Search(ctx, q, 10)
			ds = append(ds, time.Since(start))
			if err != nil || len(out.Results) == 0 {
				b.Fatalf("%q: %v %v", q, out, err)
			}
		}
		reportDurations(b, ds)
	})

	b.Run("stat_walk_refresh", func(b *testing.B) {
		kb, err := Open("bench", dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer kb.Close()
		if _, err := kb.Search(ctx, queries[0], 10); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := kb.reconcile(ctx, 0, IndexOptions{}); err != nil { // walks
				b.Fatal(err)
			}
		}
	})

	b.Run("baseline_linear_scan", func(b *testing.B) {
		var ds []time.Duration
		i := 0
		for b.Loop() {
			q := queries[i%len(queries)]
			i++
			start := time.Now()
			ids, err := linearScanSearch(dir, q, 10)
			ds = append(ds, time.Since(start))
			if err != nil || len(ids) == 0 {
				b.Fatalf("%q: %v %v", q, ids, err)
			}
		}
		reportDurations(b, ds)
	})
}
