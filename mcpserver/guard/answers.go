package guard

import (
	"bytes"
	"encoding/json"

	"github.com/agentctl/agentctl/mcpserver/internal/wire"
)

// The endpoint's messages to the client: the SDK's, whose answers get the
// client's ids back (see ids.go), and the taker's; both settle requests.

// writeSDK writes one whole message of the SDK's to the client: an answer
// with the client's id put back, and settled (dropped if the client
// cancelled its request); a progress notification with the client's token
// put back. See [Guard.Write].
func (g *Guard) writeSDK(p []byte) (int, error) {
	g.wmu.Lock()
	defer g.wmu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return 0, ErrClosed
	}
	var err error
	if isBatch(p) {
		if msg := g.batchFromSDKLocked(p); msg != nil {
			_, err = g.out.Write(msg)
		}
	} else {
		var m wire.Message
		m.Envelope(p)
		if fixed := withoutCodeZero(&m); len(fixed) != len(p) {
			m.Envelope(fixed)
		}
		err = g.fromSDKLocked(&m)
	}
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// fromSDKLocked writes one message of the SDK's (not a batch), read into m.
func (g *Guard) fromSDKLocked(m *wire.Message) error {
	msg := m.Line
	var old []byte
	var with string
	switch {
	case m.Answer && m.Method == nil:
		seq, ok := guardSeq(m.ID)
		r, found := g.sdk[seq]
		if !ok || !found {
			break
		}
		g.settleSDKLocked(seq, r)
		if r.cancelled {
			return nil
		}
		if r.initialize {
			v := negotiatedVersion(msg)
			g.batches = v != "" && v < "2025-06-18"
		}
		old, with = m.ID, r.id
	case m.Token != nil && g.tokens > 0:
		if seq, ok := guardToken(m.Token); ok && g.sdk[seq].token != "" {
			old, with = m.Token, g.sdk[seq].token
		}
	}
	if old == nil {
		_, err := g.out.Write(msg)
		return err
	}
	// One write; a large message (a long tools/list) in two, around the
	// id, rather than copied whole.
	const copyUpTo = 16 << 10
	if len(msg) <= copyUpTo {
		g.wbuf = replaceAt(g.wbuf[:0], msg, old, with)
		_, err := g.out.Write(g.wbuf)
		return err
	}
	i := at(msg, old)
	g.wbuf = append(append(g.wbuf[:0], msg[:i]...), with...)
	if _, err := g.out.Write(g.wbuf); err != nil {
		return err
	}
	_, err := g.out.Write(msg[i+len(old):])
	return err
}

// batchFromSDKLocked is a batch of the SDK's answers (go-sdk answers a
// batch with one, in sessions before 2025-06-18) as the client gets it: the
// answers to cancelled requests left out (nil if none is left), the
// client's ids put back.
func (g *Guard) batchFromSDKLocked(p []byte) []byte {
	batch := decodeBatch(p)
	if batch == nil {
		return p
	}
	kept := batch[:0]
	var m wire.Message
	for _, msg := range batch {
		m.Envelope(msg)
		seq, ok := guardSeq(m.ID)
		r, found := g.sdk[seq]
		if !m.Answer || m.Method != nil || !ok || !found {
			kept = append(kept, msg)
			continue
		}
		g.settleSDKLocked(seq, r)
		if !r.cancelled {
			kept = append(kept, replaceAt(nil, msg, m.ID, r.id))
		}
	}
	if len(kept) == 0 {
		return nil
	}
	out, err := json.Marshal(kept)
	if err != nil {
		return p
	}
	return append(out, '\n')
}

// sdkSide is the client's output as the SDK holds it: through
// [Guard.writeSDK]; closing the session must not close stdout under the
// lane.
type sdkSide struct{ g *Guard }

func (s sdkSide) Write(p []byte) (int, error) { return s.g.writeSDK(p) }
func (sdkSide) Close() error                  { return nil }

// laneAnsweredLocked settles the taker's request whose key is key; true
// if the client cancelled it, so that its answer is dropped. (A client that
// used the id again after cancelling it, which MCP forbids, may lose the
// second request's answer instead of the first's.)
func (g *Guard) laneAnsweredLocked(key []byte) bool {
	if c := g.cancelled[string(key)]; c > 0 {
		if c == 1 {
			delete(g.cancelled, string(key))
		} else {
			g.cancelled[string(key)] = c - 1
		}
		return true
	}
	if e, ok := g.lane[string(key)]; ok {
		if e.n--; e.n == 0 {
			delete(g.lane, string(key))
		} else {
			g.lane[string(key)] = e
		}
		g.doneLocked(1)
	} else if o := &g.offer; o.active && !o.answered && bytes.Equal(o.key, key) {
		o.answered = true
		g.doneLocked(1)
	}
	return false
}

// settleSDKLocked forgets the request the SDK answered, r under the guard
// id seq.
func (g *Guard) settleSDKLocked(seq uint64, r sdkRequest) {
	delete(g.sdk, seq)
	if r.token != "" {
		g.tokens--
	}
	if r.wait && !r.cancelled {
		g.doneLocked(1)
	}
}

// doneLocked counts n requests answered, or no longer waited for.
func (g *Guard) doneLocked(n int) {
	g.waiting -= n
	if g.waiting <= 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}
