package guard

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/agentctl/agentctl/mcpserver/internal/wire"
)

// The client's requests and cancellations, as the guard notes them and
// hands them on: to the taker first, then to the SDK under the guard's ids
// (see ids.go).

// offerToTaker offers the request m to take, and reports whether it took
// it. The request is noted as the taker's while it is offered.
func (g *Guard) offerToTaker(m *wire.Message, take Taker) bool {
	g.mu.Lock()
	o := &g.offer
	o.active, o.answered = !g.closed, false
	if o.active {
		g.seq++
		o.seq = g.seq
		o.key = append(o.key[:0], m.Key...)
		o.id = append(o.id[:0], m.ID...)
		g.waiting++
	}
	g.mu.Unlock()
	took := take(m)
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

// requestToSDK notes the request m, handed to the SDK, and appends it to
// dst as the SDK gets it. A 2026-07-28 client's subscriptions/listen is a
// stream of notifications, answered only when it is torn down, so it is not
// waited for.
func (g *Guard) requestToSDK(dst []byte, m *wire.Message) []byte {
	mapToken := m.Token != nil && !tokenCarried(m.Token)
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return append(dst, m.Line...)
	}
	g.seq++
	seq := g.seq
	r := sdkRequest{id: string(m.ID), wait: string(m.Name) != "subscriptions/listen", initialize: string(m.Name) == "initialize"}
	if mapToken {
		r.token = string(m.Token)
		g.tokens++
	}
	g.sdk[seq] = r
	if r.wait {
		g.waiting++
	}
	g.mu.Unlock()
	return appendToSDK(dst, m, seq, mapToken)
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
// to dst once for each, with the request's guard id.
func (g *Guard) cancelToSDK(dst []byte, m *wire.Message) []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, seq := range g.sdkWithKeyLocked(m.Key) {
		r := g.sdk[seq]
		r.cancelled = true
		g.sdk[seq] = r
		if r.wait {
			g.doneLocked(1)
		}
		dst = withID(dst, m.Line, m.RequestID, seq)
	}
	return dst
}

// sdkWithKeyLocked are the guard ids of the requests handed to the SDK,
// not cancelled, whose ids have the given key, in the order they came.
func (g *Guard) sdkWithKeyLocked(key []byte) []uint64 {
	var seqs []uint64
	var buf [32]byte
	for seq, r := range g.sdk {
		if k, ok := wire.AppendIDKey(buf[:0], []byte(r.id)); ok && !r.cancelled && bytes.Equal(k, key) {
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
	var m wire.Message
	for _, msg := range batch {
		switch m.Parse(msg); m.Kind {
		case wire.Request:
			out = append(out, g.requestToSDK(nil, &m))
		case wire.Cancellation:
			g.cancelTakers(m.Key)
			for l := range bytes.Lines(g.cancelToSDK(nil, &m)) {
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
