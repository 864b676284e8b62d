package instance

import (
	"context"
	"sync"
)

// watchSet is a process's watches on one store ([Store.WatchEvents] and
// the others), shared by every watch: its first watch starts run, which
// wakes the watchers of a key (channel NUL payload) when the store says
// it changed, or every watcher when the store cannot say what did. A
// watcher reads the state again when woken, so a spurious wake costs a
// read and a missed one must not happen.
//
// A watcher reads after it subscribes, not only when woken: what changed
// before the watch began is not announced.
type watchSet struct {
	run func(ctx context.Context, w *watchSet)

	mu      sync.Mutex
	subs    map[string]map[chan struct{}]struct{}
	cancel  context.CancelFunc
	done    chan struct{}
	stopped bool
}

func newWatchSet(run func(context.Context, *watchSet)) *watchSet {
	return &watchSet{run: run, subs: map[string]map[chan struct{}]struct{}{}}
}

// subscribe returns the channel that receives when key channel NUL
// payload may have changed, and the function that ends the watch; a nil
// channel once the set has stopped.
func (w *watchSet) subscribe(channel, payload string) (<-chan struct{}, func()) {
	key := channel + "\x00" + payload
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return nil, func() {}
	}
	if w.subs[key] == nil {
		w.subs[key] = map[chan struct{}]struct{}{}
	}
	w.subs[key][ch] = struct{}{}
	if w.cancel == nil {
		ctx, cancel := context.WithCancel(context.Background())
		w.cancel, w.done = cancel, make(chan struct{})
		go func() {
			defer close(w.done)
			w.run(ctx, w)
		}()
	}
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.subs[key], ch)
		if len(w.subs[key]) == 0 {
			delete(w.subs, key)
		}
	}
}

// stop ends run and waits for it; later watches get a nil channel (their
// callers poll).
func (w *watchSet) stop() {
	w.mu.Lock()
	w.stopped = true
	cancel, done := w.cancel, w.done
	w.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// wake wakes key's watchers, or every watcher when key is "".
func (w *watchSet) wake(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, subs := range w.subs {
		if key != "" && k != key {
			continue
		}
		for ch := range subs {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}
