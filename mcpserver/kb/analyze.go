package kb

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// maxTokenBytes: longer tokens (hashes, base64) are not searched for.
	maxTokenBytes = 64
	// MaxQueryTerms is how many of a query's different words a search
	// looks for at most: the rarest (see [Base.Search]).
	MaxQueryTerms = 64
	// MaxQueryWords is how many different words a query may have; a
	// longer one is refused.
	MaxQueryWords = 256
)

// indexedText splits a concept into what the index holds: its title (front
// matter title, else first # heading; at most 512 bytes) and its body (the
// text after the front matter).
func indexedText(data []byte) (title string, body []byte) {
	title, body, _ = splitFrontMatter(data)
	if title == "" {
		title = headingTitle(body)
	}
	if len(title) > 512 {
		title = strings.ToValidUTF8(title[:512], "")
	}
	return title, body
}

// tokens calls fn for each token of text: a maximal run of letters, digits
// and marks, lower-cased, with its byte offsets in text. Tokens longer than
// maxTokenBytes are skipped. buf is scratch space, returned for reuse.
func tokens(text, buf []byte, fn func(tok []byte, start, end int)) []byte {
	buf = buf[:0]
	start := -1
	emit := func(end int) {
		if start >= 0 && len(buf) <= maxTokenBytes {
			fn(buf, start, end)
		}
		buf, start = buf[:0], -1
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			switch {
			case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
			case 'A' <= c && c <= 'Z':
				c += 'a' - 'A'
			default:
				emit(i)
				i++
				continue
			}
			if start < 0 {
				start = i
			}
			if len(buf) <= maxTokenBytes { // longer is skipped anyway
				buf = append(buf, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(text[i:])
		if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) {
			if start < 0 {
				start = i
			}
			if len(buf) <= maxTokenBytes {
				buf = utf8.AppendRune(buf, unicode.ToLower(r))
			}
		} else {
			emit(i)
		}
		i += size
	}
	emit(len(text))
	return buf
}

// queryTerms returns the distinct tokens of a query, in order, and whether
// there were more than MaxQueryWords (then the first MaxQueryWords+1).
func queryTerms(query string) (terms []string, tooMany bool) {
	seen := map[string]bool{}
	tokens([]byte(query), nil, func(tok []byte, _, _ int) {
		if len(terms) <= MaxQueryWords && !seen[string(tok)] {
			seen[string(tok)] = true
			terms = append(terms, string(tok))
		}
	})
	if len(terms) > MaxQueryWords {
		return terms, true
	}
	return terms, false
}
