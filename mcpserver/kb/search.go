package kb

import (
	"context"
	"strconv"
	"strings"
	"time"
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
	Score   float64 `json:"score" jsonschema:"Relevance (higher is better); comparable only within one search."`
}

// SearchOutput is the result of [Base.Search] and concept_search.
type SearchOutput struct {
	Results []SearchResult `json:"results" jsonschema:"The best matches, best first; empty when nothing matches."`
}

// Search ranks the concepts for query (BM25 over title and body, title
// matches weighted up) and returns the best limit (default 10, at most 50),
// each with a snippet around its best match.
//
// The first search walks the folder and builds an in-memory inverted index;
// the index holds postings, titles and lengths, not the contents, and the
// snippets are cut from the top hits' files. Writes through [Base.Write] update
// the index at once. Edits made outside agentctl are picked up by a stat walk
// (no reads) at most once per RefreshInterval, which re-reads only files whose
// size or modification time changed.
func (kb *Base) Search(ctx context.Context, query string, limit int) (SearchOutput, error) {
	out := SearchOutput{Results: []SearchResult{}}
	if err := kb.usable(ctx); err != nil {
		return out, err
	}
	if strings.TrimSpace(query) == "" {
		return out, errorf(ErrInvalidRequest, "query is empty; search knowledge base %q with a few distinctive keywords", kb.name)
	}
	if limit <= 0 {
		limit = searchDefault
	}
	limit = min(limit, MaxSearchLimit)
	kb.lastSearch.Store(time.Now().UnixNano())
	if err := kb.refresh(ctx, kb.opts.RefreshInterval); err != nil {
		return out, err
	}
	terms := queryTerms(query)
	if len(terms) == 0 {
		return out, nil
	}
	kb.idxMu.RLock()
	if kb.idx == nil { // closed meanwhile
		kb.idxMu.RUnlock()
		return out, kb.usable(ctx)
	}
	hits := kb.idx.search(terms, limit)
	kb.idxMu.RUnlock()

	results := make([]SearchResult, len(hits))
	keep := make([]bool, len(hits))
	err := forEach(ctx, len(hits), func(_, i int) {
		h := hits[i]
		data, _, err := kb.readConcept(h.id)
		if err != nil {
			return // gone or changed since indexing; the next refresh catches up
		}
		_, body, _ := splitFrontMatter(data)
		results[i] = SearchResult{ID: h.id, Title: h.title, Snippet: snippet(body, terms), Score: roundScore(h.score)}
		keep[i] = true
	})
	for i := range results {
		if keep[i] {
			out.Results = append(out.Results, results[i])
		}
	}
	return out, err
}

func roundScore(s float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(s, 'f', 4, 64), 64)
	return r
}
