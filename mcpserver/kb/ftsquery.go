package kb

// The queries of a search: ranking, the cheaper query tried first, the
// rarest terms of a long query, and the look-up of the best rows. The
// index's schema, opening and writes are in ftsindex.go.

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Ranking: FTS5's BM25 with the title's matches weighted titleWeight times
// the body's.
const titleWeight = 3.0

// search returns the best k concepts no larger than maxBytes matching any of
// terms, best first, ties broken by id.
//
// FTS5 scores every match; the query asks it for rowids only (no join per
// match), and looks up the top ones' rows after. Concepts over maxBytes (a
// shared index may hold them for a process with a larger limit) are
// filtered then, asking for more when some were.
//
// Scoring every match is what a search costs (BM25 looks up each match's
// length), and a word found in many concepts makes that many matches. So a
// query of several words is first run, when it has such words (see
// termStats), as a cheaper one whose answer stands if the left-out words
// could not have changed it (see pruned); else the whole query runs.
func (ix *ftsIndex) search(ctx context.Context, terms []string, k int, maxBytes int64) ([]hit, error) {
	// One read transaction, so one snapshot: a write or reconcile that
	// commits between the FTS5 query and the look-up of its rowids deletes
	// and re-inserts rows under new rowids, and the look-up would miss (or
	// misattribute) concepts it replaced. ReadOnly makes it a deferred
	// BEGIN, which takes no write lock.
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if !ix.noPrune && len(terms) > 1 {
		hits, ok, err := ix.pruned(ctx, tx, terms, k, maxBytes)
		if err != nil || ok {
			return hits, err
		}
	}
	return ix.best(ctx, tx, terms, k, maxBytes)
}

// BM25's parameters in FTS5.
const bm25K1, bm25B = 1.2, 0.75

// commonWeight bounds what a common term (see termStats) adds to a
// concept's score: FTS5's BM25 gives it an IDF of 1e-6, times a term
// frequency factor below k1+1.
const commonWeight = 1e-6 * (bm25K1 + 1)

// frequentShare: a term found in more than this share of the concepts (and
// fewer than half) may be scored only for the concepts that have a rarer
// one (see pruned).
const frequentShare = 1.0 / 16

// pruned runs a cheaper query than terms' whole one and returns its best
// k, and whether they are the whole query's: the same concepts, in the
// same order but for ties within what common terms can add (commonWeight
// each).
//
// A term in half of the concepts or more is common: BM25 weighs it 1e-6,
// so it is left out. A frequent one, in more than frequentShare of them,
// adds at most its IDF times k1+1 to a score: the query is run with the
// rarer terms only (R), and the frequent ones (F) are scored only for
// concepts having an R term, by a second query for concepts with an R term
// and an F term, which BM25 scores as the whole query does (its sum is
// over terms, each with the IDF of the whole index; only the order of the
// sum, so the last bits, may differ). A concept with no R
// term scores less than what F and the common terms can add; when the k
// best score more than that, they are the whole query's.
func (ix *ftsIndex) pruned(ctx context.Context, tx *sql.Tx, terms []string, k int, maxBytes int64) ([]hit, bool, error) {
	n, counts, err := termStats(ctx, tx, terms)
	if err != nil || n == 0 {
		return nil, false, err
	}
	// The terms BM25 weighs, with their IDFs, most frequent first.
	var weighed []string
	idf := map[string]float64{}
	common := 0.0 // what the common terms can add to a score
	for i, t := range terms {
		if c := float64(counts[i]); 2*c < float64(n) {
			weighed = append(weighed, t)
			idf[t] = math.Log((float64(n) - c + 0.5) / (c + 0.5))
		} else {
			common += commonWeight
		}
	}
	slices.SortStableFunc(weighed, func(a, b string) int { return cmp.Compare(idf[a], idf[b]) })
	// Frequent terms, most frequent first, while what they can add (IDF
	// times k1+1) stays below half the IDF of the rarest term, about the
	// least a concept having that term scores: else the k best of the
	// rarer terms' concepts would seldom score above it, and the work be
	// wasted.
	var frequent, rare []string
	freqBound := 0.0
	for i, t := range weighed[:max(len(weighed)-1, 0)] {
		b := freqBound + idf[t]*(bm25K1+1)
		if idf[t] >= math.Log(1/frequentShare) || b >= idf[weighed[len(weighed)-1]]/2 {
			break
		}
		frequent, rare, freqBound = weighed[:i+1], weighed[i+1:], b
	}
	if len(rare) > 0 && len(frequent) > 0 {
		hits, err := ix.bestOf(ctx, tx, rare, frequent, k, maxBytes)
		if err != nil {
			return nil, false, err
		}
		if len(hits) == k && hits[k-1].score > common+freqBound {
			ix.splits.Add(1)
			return hits, true, nil
		}
	}
	if common > 0 && len(weighed) > 0 {
		hits, err := ix.best(ctx, tx, weighed, k, maxBytes)
		if err != nil {
			return nil, false, err
		}
		if len(hits) == k && hits[k-1].score > common {
			ix.prunes.Add(1)
			return hits, true, nil
		}
	}
	return nil, false, nil
}

// best returns the best k concepts no larger than maxBytes matching any of
// terms, within tx.
func (ix *ftsIndex) best(ctx context.Context, tx *sql.Tx, terms []string, k int, maxBytes int64) ([]hit, error) {
	match := matchAny(terms)
	for want := k + 8; ; want *= 4 {
		hits, more, err := ix.top(ctx, tx, match, want, maxBytes)
		if err != nil || len(hits) >= k || !more {
			return sortHits(hits, k), err
		}
	}
}

// bestOf returns the best k concepts no larger than maxBytes among those
// with any of rare, scored for the query of rare and frequent, within tx.
func (ix *ftsIndex) bestOf(ctx context.Context, tx *sql.Tx, rare, frequent []string, k int, maxBytes int64) ([]hit, error) {
	scores := map[int64]float64{}
	rareMatch := matchAny(rare)
	for _, match := range []string{rareMatch, "(" + rareMatch + ") AND (" + matchAny(frequent) + ")"} {
		rs, err := tx.QueryContext(ctx, `SELECT rowid, -bm25(fts, ?, 1.0) FROM fts WHERE fts MATCH ?`, titleWeight, match)
		if err != nil {
			return nil, err
		}
		for rs.Next() {
			var doc int64
			var score float64
			if err := rs.Scan(&doc, &score); err != nil {
				rs.Close()
				return nil, err
			}
			scores[doc] = score
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return nil, err
		}
	}
	docs := slices.Collect(maps.Keys(scores))
	slices.SortFunc(docs, func(a, b int64) int { return cmp.Compare(scores[b], scores[a]) })
	if ix.matched != nil {
		ix.matched()
	}
	for want := k + 8; ; want *= 4 {
		hits, err := ix.lookup(ctx, tx, docs[:min(want, len(docs))], scores, maxBytes)
		if err != nil || len(hits) >= k || want >= len(docs) {
			return sortHits(hits, k), err
		}
	}
}

// sortHits sorts hits best first, ties by id, and returns the first k.
func sortHits(hits []hit, k int) []hit {
	slices.SortStableFunc(hits, func(a, b hit) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	return hits[:min(k, len(hits))]
}

// matchAny is the FTS5 query for concepts with any of terms.
func matchAny(terms []string) string {
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + t + `"` // tokens hold letters, digits and marks only
	}
	return strings.Join(quoted, " OR ")
}

// rarest returns the n terms (in query order) that fewest concepts have,
// leaving out those none has, and the others that some concept has.
// Counts stop at half the concepts (see termStats): terms at least that
// common are kept in query order.
func (ix *ftsIndex) rarest(ctx context.Context, terms []string, n int) (kept, ignored []string, err error) {
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, nil, err
	}
	defer tx.Rollback()
	_, counts, err := termStats(ctx, tx, terms)
	if err != nil || counts == nil {
		return nil, nil, err // no concept is indexed
	}
	var order []int // terms some concept has, rarest first
	for i, c := range counts {
		if c > 0 {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(counts[a], counts[b]) })
	keep := make([]bool, len(terms))
	for _, i := range order[:min(n, len(order))] {
		keep[i] = true
	}
	for i, t := range terms {
		switch {
		case keep[i]:
			kept = append(kept, t)
		case counts[i] > 0:
			ignored = append(ignored, t)
		}
	}
	return kept, ignored, nil
}

// termStats returns the number of indexed concepts, N, and how many have
// each of terms, counting up to half of N (what makes a term common: its
// BM25 IDF, log((N-n+0.5)/(n+0.5)), is not positive, and FTS5 uses 1e-6).
// One statement, prepared once.
func termStats(ctx context.Context, tx *sql.Tx, terms []string) (n int64, counts []int64, err error) {
	n, err = indexedRows(ctx, tx)
	if err != nil || n == 0 {
		return 0, nil, err
	}
	counts = make([]int64, len(terms))
	cols := make([]string, len(terms))
	args := []any{(n + 1) / 2}
	dest := make([]any, len(terms))
	for i, t := range terms {
		cols[i] = fmt.Sprintf("(SELECT count(*) FROM (SELECT 1 FROM fts WHERE fts MATCH ?%d LIMIT ?1))", i+2)
		args = append(args, matchAny([]string{t}))
		dest[i] = &counts[i]
	}
	err = tx.QueryRowContext(ctx, "SELECT "+strings.Join(cols, ", "), args...).Scan(dest...)
	return n, counts, err
}

// indexedRows returns the row count BM25 uses, N: the first number (an
// SQLite varint) of the FTS5 "averages" record, fts_data row 1.
func indexedRows(ctx context.Context, tx *sql.Tx) (int64, error) {
	var rec []byte
	err := tx.QueryRowContext(ctx, `SELECT block FROM fts_data WHERE id = 1`).Scan(&rec)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, ok := sqliteVarint(rec)
	if !ok {
		return 0, nil
	}
	return int64(n), nil
}

// sqliteVarint decodes SQLite's varint (big-endian, 7 bits a byte with the
// high bit saying more follow, the ninth byte whole).
func sqliteVarint(b []byte) (uint64, bool) {
	var v uint64
	for i := 0; i < len(b) && i < 9; i++ {
		if i == 8 {
			return v<<8 | uint64(b[i]), true
		}
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i] < 0x80 {
			return v, true
		}
	}
	return 0, false
}

// top returns the best n matches (fewer if some are over maxBytes), and
// whether FTS5 had more, read within tx.
func (ix *ftsIndex) top(ctx context.Context, tx *sql.Tx, match string, n int, maxBytes int64) (hits []hit, more bool, err error) {
	rs, err := tx.QueryContext(ctx, `SELECT rowid, -bm25(fts, ?, 1.0) AS score FROM fts WHERE fts MATCH ? ORDER BY score DESC LIMIT ?`,
		titleWeight, match, n)
	if err != nil {
		return nil, false, err
	}
	scores := map[int64]float64{}
	var docs []int64
	for rs.Next() {
		var doc int64
		var score float64
		if err := rs.Scan(&doc, &score); err != nil {
			rs.Close()
			return nil, false, err
		}
		scores[doc] = score
		docs = append(docs, doc)
	}
	rs.Close()
	if err := rs.Err(); err != nil || len(docs) == 0 {
		return nil, false, err
	}
	if ix.matched != nil {
		ix.matched()
	}
	hits, err = ix.lookup(ctx, tx, docs, scores, maxBytes)
	return hits, len(docs) == n, err
}

// lookup returns the rows of docs no larger than maxBytes, as hits with
// their scores, read within tx.
func (ix *ftsIndex) lookup(ctx context.Context, tx *sql.Tx, docs []int64, scores map[int64]float64, maxBytes int64) ([]hit, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	args := make([]any, 0, len(docs)+1)
	args = append(args, maxBytes)
	for _, d := range docs {
		args = append(args, d)
	}
	rs, err := tx.QueryContext(ctx, `SELECT doc, id, title, size, mtime_ns, inode, ctime_ns FROM files WHERE size <= ? AND doc IN (?`+strings.Repeat(",?", len(docs)-1)+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var hits []hit
	for rs.Next() {
		var doc int64
		var h hit
		if err := rs.Scan(&doc, &h.id, &h.title, &h.size, &h.mtime, &h.inode, &h.ctime); err != nil {
			return nil, err
		}
		h.score = scores[doc]
		hits = append(hits, h)
	}
	return hits, rs.Err()
}

// hit is a search's match, with what its file was when indexed.
type hit struct {
	id, title          string
	score              float64
	size, mtime, inode int64
	ctime              int64 // -1: changed as it was read, not compared
}
