package kb

import (
	"bytes"
	"slices"
	"strings"
	"unicode/utf8"
)

// sameStem reports whether a word of a concept matches a query term for
// the snippet: the same word, or, as the index's Porter stemming matches
// them, two forms of one ("deploy" and "deploying", "install" and
// "installation"): one a prefix of the other, of at least 4 bytes, the
// other at most 5 bytes longer.
func sameStem(word, term string) bool {
	if word == term {
		return true
	}
	p := 0
	for p < len(word) && p < len(term) && word[p] == term[p] {
		p++
	}
	return p >= 4 && p == min(len(word), len(term)) && max(len(word), len(term))-p <= 5
}

// snippetBytes is the length of a snippet, before "…" marks.
const snippetBytes = 200

// snippet cuts about snippetBytes of body around the window that holds
// the most distinct query terms (then the most matches), on word
// boundaries, with whitespace collapsed.
func snippet(body []byte, terms []string) string {
	type match struct{ start, end, term int }
	var ms []match
	tokens(body, nil, func(tok []byte, s, e int) {
		if i := slices.IndexFunc(terms, func(t string) bool { return sameStem(string(tok), t) }); i >= 0 {
			ms = append(ms, match{s, e, i})
		}
	})
	from := 0
	if len(ms) > 0 {
		// Two pointers over the matches: the window [ms[i].start, +width).
		counts := make([]int, len(terms))
		distinct, bestDistinct, bestTotal, j := 0, -1, 0, 0
		for i := range ms {
			for j < len(ms) && ms[j].end <= ms[i].start+snippetBytes {
				if counts[ms[j].term] == 0 {
					distinct++
				}
				counts[ms[j].term]++
				j++
			}
			if total := j - i; distinct > bestDistinct || distinct == bestDistinct && total > bestTotal {
				bestDistinct, bestTotal, from = distinct, total, ms[i].start
			}
			counts[ms[i].term]--
			if counts[ms[i].term] == 0 {
				distinct--
			}
		}
		// Some context before the match, from a word boundary.
		if from > 40 {
			s := from - 40
			if k := bytes.IndexAny(body[s:from], " \t\n"); k >= 0 {
				s += k + 1
			}
			from = s
		} else {
			from = 0
		}
	}
	end := min(len(body), from+snippetBytes)
	if end < len(body) {
		if k := bytes.LastIndexAny(body[from:end], " \t\n"); k > snippetBytes/2 {
			end = from + k
		}
	}
	for from < end && !utf8.RuneStart(body[from]) {
		from++
	}
	for end < len(body) && end > from && !utf8.RuneStart(body[end]) {
		end--
	}
	s := strings.Join(strings.Fields(string(body[from:end])), " ")
	if from > 0 {
		s = "…" + s
	}
	if end < len(body) && strings.TrimSpace(string(body[end:])) != "" {
		s += "…"
	}
	return s
}
