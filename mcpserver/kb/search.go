package kb

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Page sizes of [Base.Search]: a limit of 0 or less gets searchDefault, one
// above MaxSearchLimit gets MaxSearchLimit.
const (
	searchDefault  = 10
	MaxSearchLimit = 50
)

// SearchResult is one hit of [Base.Search].
type SearchResult struct {
	ID      string  `json:"id" jsonschema:"The concept's id, to pass to concept_read."`
	Title   string  `json:"title,omitempty" jsonschema:"Its title."`
	Snippet string  `json:"snippet" jsonschema:"A short excerpt around the best match."`
	Score   float64 `json:"score" jsonschema:"Relevance, higher is better: the concept's BM25 for the whole query (title matches count 3 times), rounded to 4 significant digits; results are ordered by it, equal scores by id. Comparable only within one search."`
}

// SearchOutput is the result of [Base.Search] and concept_search.
type SearchOutput struct {
	Results []SearchResult `json:"results" jsonschema:"The best matches, best first; empty when nothing matches."`
	// Ignored lists the words of the query that were not searched for
	// although some concept has them: a search looks for at most
	// MaxQueryTerms of a query's words, the rarest.
	Ignored []string `json:"ignored,omitempty" jsonschema:"Words of the query that were not searched for although concepts have them: a search looks for at most the 64 rarest of its words (those in fewest concepts). Absent when every word was searched for."`
}

// Search ranks the concepts for query and returns the best limit (default
// 10, at most 50), each with a snippet around its best match.
//
// Ranking is SQLite FTS5's BM25 over title and body, title matches weighted
// 3×, with Porter stemming ("deploying" finds "deploy") and diacritics
// folded; a concept matches if it has any of the query's words. One score,
// however the search is answered (which queries answer it, an index built
// in one go or kept up to date, stale or rebuilt, any limit): a result's
// score is FTS5's BM25 of the whole query, negated (higher is better), its
// terms summed rarest first, rounded to 4 significant digits; results are
// ordered by that score, equal scores by id, so a page of n results is the
// first n of a larger page. The snippets are cut from the top hits' files.
//
// The index is a database under [Options.IndexDir] shared by every process
// mounting the folder. Writes through [Base.Write] update it in the same
// step as the file. Edits made outside agentctl are picked up by a
// reconcile: a stat walk (no reads) that re-reads only files whose size,
// modification time, inode or status change time changed, and indexes them
// again if their content did (a hash). The first search of an index that no
// reconcile has completed builds it first. Later, a search finding that no
// process has completed a reconcile within RefreshInterval starts one in
// the background and answers from the index as it is; while searches come
// (within the last minute, or two intervals if longer), a background
// refresher reconciles one RefreshInterval after the last reconcile by any
// process, so the folder is walked at most once per interval. So a search
// waits for the walk only when there is no index yet. Edits outside
// agentctl are searchable within about RefreshInterval (plus one walk)
// while searches come; a hit whose file changed since it was indexed is
// indexed again before the search answers (see below).
//
// The query is words and nothing else: its tokens, runs of letters, digits
// and marks (up to 64 bytes), lower-cased. There are no operators: quotes,
// "*", "^", ":", parentheses and AND, OR, NOT or NEAR are plain text (the
// words "and", "or", "not", "near"), so every query is valid. A query with
// no words is refused, as an empty one is; so is one of more than
// MaxQueryWords different words. Of more than MaxQueryTerms, the
// MaxQueryTerms rarest (in fewest concepts) are searched for: words no
// concept has are left out first, as they change nothing, and
// [SearchOutput.Ignored] lists the others left out.
//
// A damaged index (SQLite finds corrupt pages, or a file that is not a
// database) is built again from the folder, under the flock, before the
// search is run again (see [Base.Index]).
func (kb *Base) Search(ctx context.Context, query string, limit int) (SearchOutput, error) {
	out := SearchOutput{Results: []SearchResult{}}
	if err := kb.usable(ctx); err != nil {
		return out, err
	}
	if strings.TrimSpace(query) == "" {
		return out, errorf(ErrInvalidRequest, "query is empty; search knowledge base %q with a few distinctive keywords", kb.name)
	}
	terms, tooMany := queryTerms(query)
	switch {
	case len(terms) == 0:
		q := "query"
		if len(query) <= 40 {
			q = fmt.Sprintf("query %q", query)
		}
		return out, errorf(ErrInvalidRequest, "%s has no words to search for (a word is letters or digits; quotes, operators and other signs are ignored); search knowledge base %q with a few distinctive keywords", q, kb.name)
	case tooMany:
		return out, errorf(ErrInvalidRequest, "query has more than %d different words; search knowledge base %q with a few distinctive keywords (at most the %d rarest words of a query are searched for)", MaxQueryWords, kb.name, MaxQueryTerms)
	}
	if limit <= 0 {
		limit = searchDefault
	}
	limit = min(limit, MaxSearchLimit)
	kb.lastSearch.Store(kb.now().UnixNano())
	res, err := kb.search(ctx, terms, limit)
	if !isDamaged(err) {
		return res, err
	}
	if _, rerr := kb.reconcile(ctx, 0, IndexOptions{check: checkDamaged}); rerr != nil {
		return out, kb.closedOr(ctx, rerr)
	}
	res, err = kb.search(ctx, terms, limit)
	if isDamaged(err) {
		return out, fmt.Errorf("%w; it was built again from the folder and is damaged still: check the disk, or remove the index and its -wal and -shm files", err)
	}
	return res, err
}

// search is [Base.Search] once, for the query's terms.
func (kb *Base) search(ctx context.Context, terms []string, limit int) (SearchOutput, error) {
	out := SearchOutput{Results: []SearchResult{}}
	ix, err := kb.index(ctx)
	if err != nil {
		return out, err
	}
	// An index no reconcile has completed is built (or completed) first.
	// A stale one answers at once while the refresher reconciles it: the
	// search waits only for its own hits that changed (below).
	fresh, built, err := kb.freshness(ctx, ix, kb.opts.RefreshInterval)
	if err != nil {
		return out, kb.closedOr(ctx, err)
	}
	// The index of a folder that was replaced (see [Base.follow]) is of the
	// old one: it is walked before the search, as a new one is built.
	if !built || kb.walkNext.Load() {
		if _, err := kb.reconcile(ctx, kb.opts.RefreshInterval, IndexOptions{}); err != nil {
			return out, kb.closedOr(ctx, err)
		}
		if ix, err = kb.index(ctx); err != nil { // a damaged one was replaced
			return out, err
		}
	}
	kb.bgOnce.Do(func() { kb.bgDone.Go(kb.backgroundRefresh) })
	if !fresh && built {
		select {
		case kb.kick <- struct{}{}:
		default: // one is pending already
		}
	}
	if len(terms) > MaxQueryTerms {
		kept, ignored, err := ix.rarest(ctx, terms, MaxQueryTerms)
		if err != nil {
			return out, kb.closedOr(ctx, kb.indexError(ix, err))
		}
		if len(kept) == 0 {
			return out, nil // no concept has any of them
		}
		terms, out.Ignored = kept, ignored
	}
	// A hit whose file is no longer what was indexed (an edit the
	// reconcile has not seen yet, a process killed between a write's
	// rename and its index update) is indexed again and the search run
	// again, once; then it is left out. So no result is for text its
	// concept no longer has.
	for attempt := 0; ; attempt++ {
		hits, err := ix.search(ctx, terms, limit, kb.opts.MaxBytes)
		if err != nil {
			return out, kb.closedOr(ctx, kb.indexError(ix, err))
		}
		results, stale, err := kb.searchResults(ctx, hits, terms)
		if err != nil || len(stale) == 0 || attempt == 1 {
			out.Results = results
			return out, err
		}
		if err := kb.reindex(ctx, ix, stale); err != nil {
			return out, kb.closedOr(ctx, err)
		}
	}
}

// searchResults reads the hits' files for their snippets, in parallel, and
// returns the results of those still as indexed, and the others' files.
func (kb *Base) searchResults(ctx context.Context, hits []hit, terms []string) ([]SearchResult, []file, error) {
	results := make([]SearchResult, len(hits))
	state := make([]int8, len(hits)) // 0 gone, 1 ok, 2 stale
	err := forEach(ctx, len(hits), func(_, i int) {
		h := hits[i]
		data, fi, err := kb.readConcept(h.id)
		if err != nil {
			state[i] = 2 // gone or unreadable: the index must say so
			return
		}
		if fi.Size() != h.size || inode(fi) != h.inode || h.mtime != -1 && fi.ModTime().UnixNano() != h.mtime ||
			h.ctime != -1 && ctime(fi) != h.ctime {
			state[i] = 2
			return
		}
		_, body, _ := splitFrontMatter(data)
		results[i] = SearchResult{ID: h.id, Title: h.title, Snippet: snippet(body, terms), Score: roundScore(h.score)}
		state[i] = 1
	})
	out := []SearchResult{}
	var stale []file
	for i := range results {
		switch state[i] {
		case 1:
			out = append(out, results[i])
		case 2:
			stale = append(stale, file{id: hits[i].id, known: true})
		}
	}
	return out, stale, err
}

// reindex reads files again and applies them, as a reconcile does.
func (kb *Base) reindex(ctx context.Context, ix *ftsIndex, files []file) error {
	batch := make([]indexed, len(files))
	for i, f := range files {
		batch[i] = kb.readForIndex(f)
	}
	_, err := kb.applyBatch(ctx, ix, batch)
	return err
}

// closedOr returns the error of a closed base, if it was closed meanwhile,
// else err.
func (kb *Base) closedOr(ctx context.Context, err error) error {
	if uerr := kb.usable(ctx); uerr != nil {
		return uerr
	}
	return err
}

// roundScore keeps 4 significant digits: the score a search reports, and
// orders its results by (see [Base.Search]). FTS5's BM25 gives a word found
// in more than half of the concepts a weight of 1e-6, so in a small
// knowledge base scores can be tiny; rounding to decimal places would make
// them 0.
func roundScore(s float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(s, 'g', 4, 64), 64)
	return r
}
