package kb

// The queries of a search: ranking, the cheaper query tried first, the
// rarest terms of a long query, and the look-up of the best rows. The
// index's schema, opening and writes are in ftsindex.go.

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
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
// terms, best first.
//
// One score, however the search is answered: what a hit reports is FTS5's
// BM25 of the whole query (negated: higher is better), the terms summed in
// one order, the rarest first (ties by the term), rounded to 4 significant
// digits (roundScore); hits are ordered by it, equal ones by id. A page of
// k is fetched past its k-th hit until no concept left out could round to
// the k-th's score (see best), so which of many equal hits a page holds
// never depends on the order of the index's rows, and a page of k is the
// first k of a larger one.
//
// FTS5 scores every match; the query asks it for rowids only (no join per
// match), and looks up the top ones' rows after. Concepts over maxBytes (a
// shared index may hold them for a process with a larger limit) are
// filtered then, asking for more when some were.
//
// Scoring every match is what a search costs (BM25 looks up each match's
// length), and a word found in many concepts makes that many matches. So a
// query of several words, some of them found in many concepts, is first
// answered by cheaper queries when they tell the same page, with the same
// scores, as the whole query (see pruned); else the whole query runs.
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
	if len(terms) == 1 {
		return ix.best(ctx, tx, terms, k, maxBytes)
	}
	n, counts, err := termStats(ctx, tx, terms)
	if err != nil || n == 0 {
		return nil, err
	}
	terms, counts = rarestFirst(terms, counts)
	if !ix.noPrune {
		hits, ok, err := ix.pruned(ctx, tx, terms, counts, n, k, maxBytes)
		if err != nil || ok {
			return hits, err
		}
	}
	return ix.best(ctx, tx, terms, k, maxBytes)
}

// rarestFirst returns terms in the order their scores are summed in: by
// how many concepts have them, fewest first, then by the term.
func rarestFirst(terms []string, counts []int64) ([]string, []int64) {
	order := make([]int, len(terms))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(counts[a], counts[b]), strings.Compare(terms[a], terms[b]))
	})
	ts, cs := make([]string, len(terms)), make([]int64, len(terms))
	for i, o := range order {
		ts[i], cs[i] = terms[o], counts[o]
	}
	return ts, cs
}

// BM25's parameters in FTS5.
const bm25K1, bm25B = 1.2, 0.75

// commonIDF is the IDF FTS5's BM25 gives a term found in half of the
// concepts or more (whose IDF, log((N-n+0.5)/(n+0.5)), is not positive):
// such a term adds less than commonIDF times k1+1 to a score.
const commonIDF = 1e-6

// frequentShare: a term found in more than this share of the concepts may
// be scored only for the concepts that have a rarer one (see pruned).
const frequentShare = 1.0 / 16

// pruned answers the query of terms (rarest first, as search orders them,
// with their counts among n concepts) by cheaper queries, when they tell
// the whole query's page with its scores, and reports whether they did.
//
// The terms are split in three: the rarer ones (R, a prefix), the common
// ones (C, a suffix: in half of the concepts or more, their IDF is 1e-6),
// and between them the frequent ones (F: in more than frequentShare of the
// concepts, while what they can add stays small). Only the concepts having
// an R term are scored: by R's query alone when there is no F term,
// else exactly for R and F (see bestOf). A concept with no R term scores
// at most what the F and C terms can add (each its IDF times k1+1); when
// that rounds below the k-th hit's score, none can be on the page or tie
// with it. The C terms add less than 2.2e-6 each: a score they could not
// carry to the next rounded value is reported as the whole query's is
// (page). When that is not so for the page, the C terms are scored too
// (for the concepts with an R term), and failing that the whole query runs.
//
// It is worth it only when the R terms' concepts are few against the
// whole query's matches, which the most frequent term's count bounds from
// below.
func (ix *ftsIndex) pruned(ctx context.Context, tx *sql.Tx, terms []string, counts []int64, n int64, k int, maxBytes int64) ([]hit, bool, error) {
	idf := make([]float64, len(terms))
	common := len(terms)
	for i, c := range counts {
		idf[i] = math.Log((float64(n) - float64(c) + 0.5) / (float64(c) + 0.5))
		if 2*c >= n {
			idf[i] = commonIDF
			common = min(common, i)
		}
	}
	// F: from the most frequent term not common on, while what they can
	// add (IDF times k1+1) stays below half the IDF of the rarest term,
	// about the least a concept having that term scores: else the k best
	// of the rarer terms' concepts would seldom score above it, and the
	// work be wasted.
	split := max(common, 1)
	bound := 0.0
	for i := common; i < len(terms); i++ {
		bound += commonIDF * (bm25K1 + 1)
	}
	delta := bound // what C can add
	for split > 1 {
		b := bound + idf[split-1]*(bm25K1+1)
		if idf[split-1] >= math.Log(1/frequentShare) || b >= idf[0]/2 {
			break
		}
		split, bound = split-1, b
	}
	if split == len(terms) {
		return nil, false, nil
	}
	var rareMatches int64
	for _, c := range counts[:split] {
		rareMatches += c
	}
	if 2*rareMatches >= counts[len(counts)-1] {
		return nil, false, nil
	}
	rare, frequent := terms[:split], terms[split:max(common, split)]
	// Room for the last bits of sums.
	bound, delta = bound*(1+1e-9)+1e-12, delta*(1+1e-9)
	var hits []hit
	var ok bool
	var err error
	if len(frequent) == 0 {
		hits, ok, err = ix.bestRare(ctx, tx, rare, delta, bound, k, maxBytes)
	} else {
		hits, ok, err = ix.bestOf(ctx, tx, rare, frequent, delta, bound, k, maxBytes)
	}
	if err == nil && !ok && delta > 0 {
		hits, ok, err = ix.bestOf(ctx, tx, rare, terms[split:], 0, bound, k, maxBytes)
	}
	if err != nil || !ok {
		return nil, false, err
	}
	ix.splits.Add(1)
	return hits, true, nil
}

// page returns the first k of hits when they are the whole query's page,
// hits being concepts with a rarer term (see pruned), each scored for a
// prefix of the query's terms, sorted by sortHits. The terms left out can
// add at most delta to a score; a concept not among hits scores at most
// next (with more: there may be such concepts) or, having no rarer term,
// at most bound. more reports that more hits could tell; !ok && !more that
// they cannot.
func page(hits []hit, k int, next float64, more bool, delta, bound float64) (_ []hit, ok, fetch bool) {
	if len(hits) < k {
		return nil, false, more
	}
	kth := roundScore(hits[k-1].score)
	if roundScore(bound) >= kth {
		return nil, false, false
	}
	if more && roundScore(up(next, delta)) >= kth {
		return nil, false, true
	}
	if delta > 0 {
		// A score the left-out terms could carry to the next rounded
		// value is not known as reported; it must not matter.
		for _, h := range hits {
			if r := roundScore(up(h.score, delta)); r >= kth && r != roundScore(h.score) {
				return nil, false, false
			}
		}
	}
	return hits[:k], true, false
}

// up is the most score can become when terms adding at most delta are
// added to it, with room for the rounding of the sums.
func up(score, delta float64) float64 {
	if delta == 0 {
		return score
	}
	return score + delta + math.Abs(score)*1e-12
}

// best returns the best k concepts no larger than maxBytes matching any of
// terms, within tx: FTS5's best, then more, until no match left out could
// round to the k-th hit's score (see search).
func (ix *ftsIndex) best(ctx context.Context, tx *sql.Tx, terms []string, k int, maxBytes int64) ([]hit, error) {
	match := matchAny(terms)
	for want := k + 8; ; want *= 4 {
		hits, last, more, err := ix.top(ctx, tx, match, want, maxBytes)
		if err != nil {
			return nil, err
		}
		hits = sortHits(hits)
		if !more || len(hits) >= k && roundScore(last) < roundScore(hits[k-1].score) {
			return hits[:min(k, len(hits))], nil
		}
	}
}

// bestRare is pruned's answer from the concepts with any of rare, scored
// for rare, FTS5's best first, when the terms after rare are common ones
// adding at most delta, and concepts without a rare term score at most
// bound. ok reports whether it is the whole query's page.
func (ix *ftsIndex) bestRare(ctx context.Context, tx *sql.Tx, rare []string, delta, bound float64, k int, maxBytes int64) ([]hit, bool, error) {
	match := matchAny(rare)
	for want := k + 8; ; want *= 4 {
		hits, last, more, err := ix.top(ctx, tx, match, want, maxBytes)
		if err != nil {
			return nil, false, err
		}
		page, ok, fetch := page(sortHits(hits), k, last, more, delta, bound)
		if !fetch {
			return page, ok, nil
		}
	}
}

// bestOf is pruned's answer from the concepts with any of rare, each
// scored exactly for the query of rare and then others, when the terms
// after those add at most delta, and concepts without a rare term score at
// most bound. ok reports whether it is the whole query's page.
//
// A concept with a term of others is scored by the query (rare) AND
// (others), whose terms are a prefix of the whole query's, in its order:
// its BM25 is that prefix's, bit for bit. One with none is scored by the
// query of rare alone, which is the same (the other terms add 0); only
// those are, as BM25 is most of a query's cost.
func (ix *ftsIndex) bestOf(ctx context.Context, tx *sql.Tx, rare, others []string, delta, bound float64, k int, maxBytes int64) ([]hit, bool, error) {
	rareMatch := matchAny(rare)
	withRare, err := queryScores(ctx, tx, nil, `SELECT rowid, 0 FROM fts WHERE fts MATCH ?`, rareMatch)
	if err != nil {
		return nil, false, err
	}
	scores, err := queryScores(ctx, tx, nil, `SELECT rowid, -bm25(fts, ?, 1.0) FROM fts WHERE fts MATCH ?`, titleWeight, "("+rareMatch+") AND ("+matchAny(others)+")")
	if err != nil {
		return nil, false, err
	}
	var rest []int64
	for doc := range withRare {
		if _, ok := scores[doc]; !ok {
			rest = append(rest, doc)
		}
	}
	if len(rest) > 0 {
		list, err := json.Marshal(rest)
		if err != nil {
			return nil, false, err
		}
		// +rowid: a filter on FTS5's rows, not a look-up of each (which
		// would compute BM25's IDFs again for each).
		if _, err := queryScores(ctx, tx, scores, `SELECT rowid, -bm25(fts, ?, 1.0) FROM fts WHERE fts MATCH ? AND +rowid IN (SELECT value FROM json_each(?))`,
			titleWeight, rareMatch, string(list)); err != nil {
			return nil, false, err
		}
	}
	docs := slices.Collect(maps.Keys(scores))
	slices.SortFunc(docs, func(a, b int64) int { return cmp.Compare(scores[b], scores[a]) })
	if ix.matched != nil {
		ix.matched()
	}
	for want := k + 8; ; want *= 4 {
		hits, err := ix.lookup(ctx, tx, docs[:min(want, len(docs))], scores, maxBytes)
		if err != nil {
			return nil, false, err
		}
		next := 0.0
		if want < len(docs) {
			next = scores[docs[want]]
		}
		page, ok, fetch := page(sortHits(hits), k, next, want < len(docs), delta, bound)
		if !fetch {
			return page, ok, nil
		}
	}
}

// queryScores adds the rows (rowid, score) of query to scores (a new map
// if nil), an existing score left as it is, and returns it.
func queryScores(ctx context.Context, tx *sql.Tx, scores map[int64]float64, query string, args ...any) (map[int64]float64, error) {
	if scores == nil {
		scores = map[int64]float64{}
	}
	rs, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	for rs.Next() {
		var doc int64
		var score float64
		if err := rs.Scan(&doc, &score); err != nil {
			return nil, err
		}
		if _, ok := scores[doc]; !ok {
			scores[doc] = score
		}
	}
	return scores, rs.Err()
}

// sortHits sorts hits best first, by their scores as reported (rounded),
// equal ones by id.
func sortHits(hits []hit) []hit {
	slices.SortFunc(hits, func(a, b hit) int {
		return cmp.Or(cmp.Compare(roundScore(b.score), roundScore(a.score)), strings.Compare(a.id, b.id))
	})
	return hits
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

// top returns the best n matches (fewer if some are over maxBytes), the
// lowest score among the n (over maxBytes or not), and whether FTS5 had
// more, read within tx.
func (ix *ftsIndex) top(ctx context.Context, tx *sql.Tx, match string, n int, maxBytes int64) (hits []hit, last float64, more bool, err error) {
	rs, err := tx.QueryContext(ctx, `SELECT rowid, -bm25(fts, ?, 1.0) AS score FROM fts WHERE fts MATCH ? ORDER BY score DESC LIMIT ?`,
		titleWeight, match, n)
	if err != nil {
		return nil, 0, false, err
	}
	scores := map[int64]float64{}
	var docs []int64
	for rs.Next() {
		var doc int64
		var score float64
		if err := rs.Scan(&doc, &score); err != nil {
			rs.Close()
			return nil, 0, false, err
		}
		scores[doc] = score
		docs = append(docs, doc)
		last = score
	}
	rs.Close()
	if err := rs.Err(); err != nil || len(docs) == 0 {
		return nil, 0, false, err
	}
	if ix.matched != nil {
		ix.matched()
	}
	hits, err = ix.lookup(ctx, tx, docs, scores, maxBytes)
	return hits, last, len(docs) == n, err
}

// lookup returns the rows of docs no larger than maxBytes, as hits with
// their scores, read within tx. The rowids go in as one JSON array: a page
// of equal scores looks up every tied concept, which may be more than the
// variables a statement takes (32766).
func (ix *ftsIndex) lookup(ctx context.Context, tx *sql.Tx, docs []int64, scores map[int64]float64, maxBytes int64) ([]hit, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	list, err := json.Marshal(docs)
	if err != nil {
		return nil, err
	}
	rs, err := tx.QueryContext(ctx, `SELECT doc, id, title, size, mtime_ns, inode, ctime_ns FROM files WHERE size <= ? AND doc IN (SELECT value FROM json_each(?))`,
		maxBytes, string(list))
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
