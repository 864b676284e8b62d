package mcpserver

import (
	"context"
	"sync"
	"time"
)

// How long a client's first tools/list waits for the external servers.
//
// A client that lists once and never again ([Config.ToolsListChanged]
// false) must see every server that comes up within its connect timeout in
// its first tools/list, or it never sees that server's tools: its first
// tools/list waits for the pool's first round ([proxy.Pool.FirstRound]),
// as it always did. A client that follows notifications/tools/list_changed
// gets its first tools/list after at most [Config.FirstListWait] from the
// endpoint's start, with the tools that are ready by then; each server that
// comes up later changes the registry, which makes go-sdk send
// notifications/tools/list_changed, and the client lists again. Both paths
// (the fast lane's tools/list and the SDK's) wait on the same gate.

// DefaultFirstListWait is [Config.FirstListWait]'s default: long enough for
// a local server that is already installed (a compiled binary, a cached
// package) to be in the first list, so that the usual start sends no
// notification at all; short enough that a person does not notice it.
const DefaultFirstListWait = 300 * time.Millisecond

// firstList is the gate in front of a client's first tools/list.
type firstList struct {
	once  sync.Once
	ready chan struct{} // closed when a tools/list may be answered
}

// startFirstList opens the gate when the first round ends or, for a
// client that follows tools/list_changed, when [Config.FirstListWait] has
// passed since now, whichever comes first. It runs once, from [Endpoint.Start].
func (e *Endpoint) startFirstList() {
	e.first.once.Do(func() {
		if !e.cfg.ToolsListChanged {
			return // the first round is the gate (firstListGate)
		}
		round := e.pool.FirstRound()
		if e.cfg.FirstListWait <= 0 {
			close(e.first.ready)
			return
		}
		// Ends by itself: at the latest when the timer fires.
		go func() {
			t := time.NewTimer(e.cfg.FirstListWait)
			defer t.Stop()
			select {
			case <-round:
			case <-t.C:
				e.log.Debug("answering the first tools/list before every external server had its first attempt",
					"first_list_wait", e.cfg.FirstListWait)
			}
			close(e.first.ready)
		}()
	})
}

// firstListGate is closed once a tools/list may be answered: the end of
// the first round always opens it (also for an endpoint never started,
// whose pool has no servers); the wait, only for a following client.
func (e *Endpoint) firstListGate() (round, waited <-chan struct{}) {
	if !e.cfg.ToolsListChanged {
		return e.pool.FirstRound(), nil // nil: never ready
	}
	return e.pool.FirstRound(), e.first.ready
}

// awaitFirstList holds a tools/list until the gate opens or ctx is done.
func (e *Endpoint) awaitFirstList(ctx context.Context) {
	round, waited := e.firstListGate()
	select {
	case <-round:
	case <-waited:
	case <-ctx.Done():
	}
}

// firstListReady reports whether a tools/list may be answered now (the
// fast lane answers it only then; else the SDK path waits).
func (e *Endpoint) firstListReady() bool {
	round, waited := e.firstListGate()
	select {
	case <-round:
		return true
	case <-waited:
		return true
	default:
		return false
	}
}
