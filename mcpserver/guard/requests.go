package guard

import (
	"bytes"
	"encoding/json"
	"slices"
)

// The client's requests and cancellations, as the guard notes them and
// hands them on: to the taker first, then to the SDK under the guard's ids
// (see ids.go).

// offerToTaker offers the request m (line) to take, and reports whether it
// took it. The request is noted as the taker's while it is offered.
func (g *Guard) offerToTaker(line []byte, m clientMessage, take func([]byte) bool) bool {
	g.mu.Lock()
	o := &g.offer
	o.active, o.answered = !g.closed, false
	if o.active {
		g.seq++
		o.seq = g.seq
		o.key = append(o.key[:0], m.key...)
		o.id = append(o.id[:0], m.id...)
		g.waiting++
	}
	g.mu.Unlock()
	took := take(line)
	g.mu.Lock()
	defer g.mu.Unlock()
	if o.active && !o.answered {
		if took {
			e, ok := g.lane[string(o.key)]
			if !ok {
				s := string(append(o.key, o.id...)) // one allocation for both
				e.seq, e.id = o.seq, s[len(o.key):]
				e.n = 1
				g.lane[s[:len(o.key)]] = e
			} else {
				e.n++
				g.lane[string(o.key)] = e
			}
		} else {
			g.doneLocked(1)
		}
	}
	o.active = false
	return took
}

// requestToSDK notes the request m (msg), handed to the SDK, and appends
// it to dst as the SDK gets it.
func (g *Guard) requestToSDK(dst, msg []byte, m clientMessage) []byte {
	mapToken := m.token != nil && !tokenCarried(m.token)
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return append(dst, msg...)
	}
	g.seq++
	seq := g.seq
	r := sdkRequest{id: string(m.id), wait: !m.listen, initialize: m.initialize}
	if mapToken {
		r.token = string(m.token)
		g.tokens++
	}
	g.sdk[seq] = r
	if r.wait {
		g.waiting++
	}
	g.mu.Unlock()
	return appendToSDK(dst, msg, m, seq, mapToken)
}

// cancelTakers notes the cancellation of the taker's requests with the
// given key: their answers are dropped, and not waited for.
func (g *Guard) cancelTakers(key []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e, ok := g.lane[string(key)]; ok {
		delete(g.lane, string(key))
		g.cancelled[string(key)] += e.n
		g.doneLocked(e.n)
	}
	if o := &g.offer; o.active && !o.answered && bytes.Equal(o.key, key) {
		o.answered = true
		g.cancelled[string(key)]++
		g.doneLocked(1)
	}
}

// cancelToSDK marks every request handed to the SDK whose id has the key of
// the cancellation m's requestId cancelled, and appends the cancellation
// msg to dst once for each, with the request's guard id.
func (g *Guard) cancelToSDK(dst, msg []byte, m clientMessage) []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, seq := range g.sdkWithKeyLocked(m.key) {
		r := g.sdk[seq]
		r.cancelled = true
		g.sdk[seq] = r
		if r.wait {
			g.doneLocked(1)
		}
		dst = withID(dst, msg, m.id, seq)
	}
	return dst
}

// sdkWithKeyLocked are the guard ids of the requests handed to the SDK,
// not cancelled, whose ids have the given key, in the order they came.
func (g *Guard) sdkWithKeyLocked(key []byte) []uint64 {
	var seqs []uint64
	var buf [32]byte
	for seq, r := range g.sdk {
		if k, ok := AppendIDKey(buf[:0], []byte(r.id)); ok && !r.cancelled && bytes.Equal(k, key) {
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	return seqs
}

// batchToSDK notes the requests and cancellations of a batch and returns
// it as the SDK gets it (see [Guard.route]); nil if nothing of it is left.
func (g *Guard) batchToSDK(line []byte) []byte {
	batch := decodeBatch(line)
	if batch == nil {
		return line
	}
	var out []json.RawMessage
	for _, msg := range batch {
		var buf [32]byte
		switch m := readClient(buf[:0], msg); m.kind {
		case request:
			out = append(out, g.requestToSDK(nil, msg, m))
		case cancellation:
			g.cancelTakers(m.key)
			for l := range bytes.Lines(g.cancelToSDK(nil, msg, m)) {
				out = append(out, bytes.TrimSuffix(l, []byte("\n")))
			}
		default:
			out = append(out, msg)
		}
	}
	if len(out) == 0 {
		return nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return line
	}
	return b
}
