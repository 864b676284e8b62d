package kb

import (
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// maxTokenBytes: longer tokens (hashes, base64) are not indexed.
	maxTokenBytes = 64
	maxQueryTerms = 32
)

// analysis is what the index keeps of a document.
type analysis struct {
	title    string
	bodyLen  uint32
	titleLen uint16
	terms    []termFreq
}

type termFreq struct {
	term        string
	body, title uint32
}

// analyzer tokenises documents, reusing its scratch space.
type analyzer struct {
	pos map[string]int
	buf []byte
}

func newAnalyzer() *analyzer { return &analyzer{pos: map[string]int{}} }

func (a *analyzer) analyze(data []byte) analysis {
	title, body, _ := splitFrontMatter(data)
	if title == "" {
		title = headingTitle(body)
	}
	if len(title) > 512 {
		title = strings.ToValidUTF8(title[:512], "")
	}
	var out analysis
	clear(a.pos)
	count := func(tok []byte, isTitle bool) {
		i, ok := a.pos[string(tok)]
		if !ok {
			i = len(out.terms)
			t := string(tok)
			a.pos[t] = i
			out.terms = append(out.terms, termFreq{term: t})
		}
		if isTitle {
			out.terms[i].title++
		} else {
			out.terms[i].body++
		}
	}
	var n int
	a.buf = tokens([]byte(title), a.buf, func(tok []byte, _, _ int) {
		count(tok, true)
		n++
	})
	out.titleLen = uint16(min(n, math.MaxUint16))
	n = 0
	a.buf = tokens(body, a.buf, func(tok []byte, _, _ int) {
		count(tok, false)
		n++
	})
	out.bodyLen = uint32(n)
	out.title = title
	return out
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

// queryTerms returns the distinct tokens of a query.
func queryTerms(query string) []string {
	var terms []string
	tokens([]byte(query), nil, func(tok []byte, _, _ int) {
		if len(terms) < maxQueryTerms && !slices.Contains(terms, string(tok)) {
			terms = append(terms, string(tok))
		}
	})
	return terms
}
