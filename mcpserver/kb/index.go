package kb

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"sync"
)

// BM25F parameters: body and title are scored as one field, with the title's
// term frequency weighted up and normalised by its own length.
const (
	k1          = 1.2
	bodyB       = 0.75
	titleB      = 0.5
	titleWeight = 3.0
)

// index is an inverted index. Documents are numbered in order of
// addition; a changed document is removed (a tombstone) and added again
// under a new number, so each posting list stays sorted and is appended to.
// Postings are delta-encoded varints: doc delta, then body tf << 1 | (title
// tf > 0), then title tf when present. Tombstones are skipped while scoring
// (so document frequencies count live documents only) and compacted away
// when they outnumber half the live documents.
type index struct {
	terms map[string]int32
	lists []postings
	docs  []document
	byID  map[string]int32

	live, dead              int
	bodyLenSum, titleLenSum int64

	// scratch holds *scratch for concurrent searches.
	scratch sync.Pool
}

// scratch is a search's working memory: a dense score per document, the
// documents touched (to reset them) and a term's live postings.
type scratch struct {
	scores  []float64
	touched []int32
	matches []posting
}

type postings struct {
	buf  []byte
	last int32 // last document number appended, -1 for none
}

type document struct {
	id, title   string
	size, mtime int64
	bodyLen     uint32
	titleLen    uint16
	live        bool
}

func newIndex() *index {
	return &index{terms: map[string]int32{}, byID: map[string]int32{}}
}

func (x *index) add(id string, size, mtime int64, a analysis) {
	x.remove(id)
	n := int32(len(x.docs))
	x.docs = append(x.docs, document{id: id, title: a.title, size: size, mtime: mtime, bodyLen: a.bodyLen, titleLen: a.titleLen, live: true})
	x.byID[id] = n
	x.live++
	x.bodyLenSum += int64(a.bodyLen)
	x.titleLenSum += int64(a.titleLen)
	for _, t := range a.terms {
		tid, ok := x.terms[t.term]
		if !ok {
			tid = int32(len(x.lists))
			x.terms[t.term] = tid
			x.lists = append(x.lists, postings{last: -1})
		}
		x.lists[tid].append(posting{doc: n, body: uint32(t.body), title: uint32(t.title)})
	}
}

func (x *index) remove(id string) {
	d, ok := x.byID[id]
	if !ok {
		return
	}
	doc := &x.docs[d]
	x.live--
	x.dead++
	x.bodyLenSum -= int64(doc.bodyLen)
	x.titleLenSum -= int64(doc.titleLen)
	delete(x.byID, id)
	*doc = document{} // free the strings; live is false
}

// posting is one decoded posting.
type posting struct {
	doc         int32
	body, title uint32
}

// append encodes one posting (documents in increasing order): the
// document as a delta, the body count shifted left with a title flag, and
// the title count when there is one. each decodes it.
func (p *postings) append(q posting) {
	p.buf = binary.AppendUvarint(p.buf, uint64(q.doc-p.last))
	p.last = q.doc
	v := uint64(q.body) << 1
	if q.title > 0 {
		v |= 1
	}
	p.buf = binary.AppendUvarint(p.buf, v)
	if q.title > 0 {
		p.buf = binary.AppendUvarint(p.buf, uint64(q.title))
	}
}

// each calls fn for every posting of p, tombstones included.
func (p *postings) each(fn func(posting)) {
	buf, doc := p.buf, int32(-1)
	for len(buf) > 0 {
		delta, n := binary.Uvarint(buf)
		buf = buf[n:]
		v, n := binary.Uvarint(buf)
		buf = buf[n:]
		var title uint64
		if v&1 != 0 {
			title, n = binary.Uvarint(buf)
			buf = buf[n:]
		}
		doc += int32(delta)
		fn(posting{doc: doc, body: uint32(v >> 1), title: uint32(title)})
	}
}

// maybeCompact drops tombstones once they outnumber half the live
// documents, renumbering the documents.
func (x *index) maybeCompact() {
	if x.dead < 1024 || x.dead*2 < x.live {
		return
	}
	renum := make([]int32, len(x.docs))
	docs := make([]document, 0, x.live)
	for i, d := range x.docs {
		renum[i] = -1
		if d.live {
			renum[i] = int32(len(docs))
			x.byID[d.id] = int32(len(docs))
			docs = append(docs, d)
		}
	}
	for i := range x.lists {
		old := x.lists[i]
		np := postings{last: -1}
		old.each(func(p posting) {
			n := renum[p.doc]
			if n < 0 {
				return
			}
			p.doc = n
			np.append(p)
		})
		x.lists[i] = np
	}
	x.docs, x.dead = docs, 0
}

// trim gives the posting lists back the slack of append's doubling.
func (x *index) trim() {
	for i := range x.lists {
		if b := x.lists[i].buf; cap(b)-len(b) > 8 {
			x.lists[i].buf = bytes.Clone(b)
		}
	}
	x.docs = slices.Clip(x.docs)
}

type hit struct {
	id, title string
	score     float64
}

// search scores the live documents containing any of terms and returns the
// best k, best first, ties broken by id.
func (x *index) search(terms []string, k int) []hit {
	if x.live == 0 {
		return nil
	}
	n := float64(x.live)
	avgBody := max(float64(x.bodyLenSum)/n, 1)
	avgTitle := max(float64(x.titleLenSum)/n, 1)
	sc, _ := x.scratch.Get().(*scratch)
	if sc == nil {
		sc = &scratch{}
	}
	defer x.scratch.Put(sc)
	if len(sc.scores) < len(x.docs) {
		sc.scores = make([]float64, len(x.docs)+len(x.docs)/4)
	}
	scores, matches := sc.scores, sc.matches[:0]
	touched := sc.touched[:0]
	for _, t := range terms {
		tid, ok := x.terms[t]
		if !ok {
			continue
		}
		matches = matches[:0]
		x.lists[tid].each(func(p posting) {
			if x.docs[p.doc].live {
				matches = append(matches, p)
			}
		})
		df := float64(len(matches))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range matches {
			d := &x.docs[p.doc]
			tf := float64(p.body) / (1 - bodyB + bodyB*float64(d.bodyLen)/avgBody)
			if p.title > 0 {
				tf += titleWeight * float64(p.title) / (1 - titleB + titleB*float64(d.titleLen)/avgTitle)
			}
			if scores[p.doc] == 0 {
				touched = append(touched, p.doc)
			}
			scores[p.doc] += idf * tf * (k1 + 1) / (tf + k1)
		}
	}
	sc.matches = matches
	better := func(a, b hit) bool {
		if a.score != b.score {
			return a.score > b.score
		}
		return a.id < b.id
	}
	// A small sorted top-k: k is at most 50.
	top := make([]hit, 0, k+1)
	for _, d := range touched {
		h := hit{score: scores[d], id: x.docs[d].id}
		scores[d] = 0
		if len(top) == k && !better(h, top[k-1]) {
			continue
		}
		i, _ := slices.BinarySearchFunc(top, h, func(a, b hit) int {
			if better(a, b) {
				return -1
			}
			return 1
		})
		top = slices.Insert(top, i, h)
		if len(top) > k {
			top = top[:k]
		}
	}
	sc.touched = touched
	for i := range top {
		top[i].title = x.docs[x.byID[top[i].id]].title
	}
	return top
}
