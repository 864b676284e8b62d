package serving

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver/httpserve"
)

// serveMCP is /instances/{id}/mcp: the token, then the instance, then its
// endpoint (built on first use).
func (d *Daemon) serveMCP(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !httpserve.Authorize(w, r, d.o.Checker, id, d.log) {
		return
	}
	d.mu.RLock()
	stopping := d.closed
	d.mu.RUnlock()
	if stopping && r.Header.Get("Mcp-Session-Id") == "" {
		// While it stops, the sessions under way go on (an answer to the
		// question a call asked comes as a request of its own); no new one
		// starts.
		w.Header().Set("Retry-After", "5")
		http.Error(w, "Service Unavailable: agentctl serve is stopping; it takes no new session", http.StatusServiceUnavailable)
		return
	}
	e, status, err := d.acquire(r.Context(), id)
	if err != nil {
		if status == http.StatusInternalServerError {
			d.log.Error("the instance cannot be served", "instance", id, "error", err)
		}
		http.Error(w, http.StatusText(status)+": "+err.Error(), status)
		return
	}
	defer d.release(e)
	e.h.ServeHTTP(w, r)
}

// acquire returns the instance's entry, building its endpoint if this is
// its first request, and holds it until [Daemon.release]; on failure, the
// HTTP status that says why.
func (d *Daemon) acquire(ctx context.Context, id string) (*entry, int, error) {
	// The endpoint is usually built: a read lock finds it.
	d.mu.RLock()
	e, status, err := d.refuse(id)
	if err == nil && e != nil {
		e.users.Add(1)
	}
	d.mu.RUnlock()
	if err != nil {
		return nil, status, err
	}
	building := false
	if e == nil {
		d.mu.Lock()
		if e, status, err = d.refuse(id); err != nil {
			d.mu.Unlock()
			return nil, status, err
		}
		building = e == nil
		if building {
			e = &entry{id: id, ready: make(chan struct{})}
			d.entries[id] = e
		}
		e.users.Add(1)
		d.mu.Unlock()
	}

	if building {
		// Others may wait for this build: the first caller hanging up
		// does not cancel it.
		e.s, e.h, e.err = d.build(context.WithoutCancel(ctx), id)
		close(e.ready)
	} else {
		select {
		case <-e.ready:
		case <-ctx.Done():
			d.release(e)
			return nil, http.StatusServiceUnavailable, ctx.Err()
		}
	}
	if e.err != nil {
		d.release(e)
		d.mu.Lock()
		if d.entries[id] == e {
			delete(d.entries, id) // the next request tries again
		}
		d.mu.Unlock()
		var nf *instance.NotFoundError
		if errors.As(e.err, &nf) {
			return nil, http.StatusNotFound, fmt.Errorf("no instance %s: the URL takes an instance's full id (agentctl instance list)", id)
		}
		return nil, http.StatusInternalServerError, fmt.Errorf("instance %s cannot be served: %v", id, e.err)
	}
	return e, 0, nil
}

// build reads the record and builds the endpoint and its HTTP handler.
func (d *Daemon) build(ctx context.Context, id string) (*served, *httpserve.Handler, error) {
	rec, err := getExactly(ctx, d.o.Store, id)
	if err != nil {
		return nil, nil, err
	}
	logger := d.log.With("instance", id)
	s, err := buildEndpoint(ctx, d.o.Store, rec, d.o.Endpoint, logger)
	if err != nil {
		return nil, nil, err
	}
	qt := time.Duration(rec.QuestionTimeout)
	if qt <= 0 {
		qt = httpserve.DefaultRequestTimeout
	}
	h := httpserve.NewHandler(s.ep.Server(), httpserve.Options{
		MaxBodyBytes: d.o.MaxBodyBytes,
		BodyTimeout:  d.o.BodyTimeout,
		// A question expires (and says so) before its request times out.
		RequestTimeout: qt + time.Minute,
		SessionTimeout: d.o.SessionTimeout,
		Logger:         logger,
	})
	logger.Info("serving", "agent", rec.Agent, "tools", len(s.ep.Registry().Names()))
	return s, h, nil
}

func (d *Daemon) release(e *entry) { e.users.Add(-1) }

// refuse says, under d.mu (read or write), why id is not served now (and
// the HTTP status), or returns its entry (nil when none is built or being
// built).
func (d *Daemon) refuse(id string) (*entry, int, error) {
	switch {
	case d.closed && d.entries[id] == nil:
		return nil, http.StatusServiceUnavailable, errors.New("agentctl serve is stopping")
	case d.deleted[id]:
		return nil, http.StatusNotFound, deletedError(id)
	case d.o.Only != "" && id != d.o.Only:
		return nil, http.StatusNotFound, fmt.Errorf("this server serves instance %s only", d.o.Only)
	}
	return d.entries[id], 0, nil
}

// remove takes e out of the daemon's entries (if it is still there).
func (d *Daemon) remove(e *entry) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.entries[e.id] != e {
		return false
	}
	delete(d.entries, e.id)
	return true
}

func deletedError(id string) error {
	return fmt.Errorf("instance %s was deleted (agentctl instance delete); this URL serves nothing any more", id)
}

// janitor polls the store for deleted instances and for tokens no longer
// valid, and stops idle endpoints, until done is closed.
func (d *Daemon) janitor(done <-chan struct{}) {
	every := d.o.PollInterval
	if d.o.IdleStop > 0 && d.o.IdleStop/2 < every {
		every = max(d.o.IdleStop/2, 10*time.Millisecond)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	lastPoll := time.Time{}
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		if time.Since(lastPoll) >= d.o.PollInterval {
			lastPoll = time.Now()
			d.reapDeleted()
			d.recheckTokens()
		}
		if d.o.IdleStop > 0 {
			d.stopIdle()
		}
	}
}

// reapDeleted ends the endpoints of instances no longer in the store.
func (d *Daemon) reapDeleted() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ids, err := d.o.Store.IDs(ctx)
	if err != nil {
		d.storeFailed("reading the store for deleted instances failed; trying again at each poll, quietly until it answers", err)
		return
	}
	if d.storeDown {
		d.log.Info("the store answers again")
		d.storeDown = false
	}
	for _, e := range d.builtEntries() {
		if _, ok := ids[e.id]; ok {
			continue
		}
		d.mu.Lock()
		d.deleted[e.id] = true
		d.mu.Unlock()
		if !d.remove(e) {
			continue
		}
		d.log.Info("the instance was deleted; its sessions end", "instance", e.id)
		e.h.Interrupt(fmt.Errorf("instance %s was deleted (agentctl instance delete)", e.id))
		go func() {
			wait, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = e.h.WaitPosts(wait)
			e.h.CloseSessions()
			e.s.close()
		}()
	}
}

// storeFailed says, once an outage, that the janitor's poll of the store
// failed: while a store is down it fails every poll, and a line a second
// would bury the log.
func (d *Daemon) storeFailed(msg string, err error) {
	if !d.storeDown {
		d.log.Warn(msg, "error", err)
	}
	d.storeDown = true
}

// recheckTokens ends the sessions and requests whose token is no longer
// their instance's (`agentctl instance token rotate`, through this daemon
// or another process): each token an open session or a request in flight
// came with is checked again, past the checker's cache, once a poll, so
// that rotating a leaked token cuts off whoever holds it within a poll
// (the stream of the server's messages of a session it opened included),
// as a rotated token is refused within the cache's second. A store that
// does not answer leaves them to the next poll.
func (d *Daemon) recheckTokens() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, e := range d.builtEntries() {
		for _, token := range e.h.Tokens() {
			ok, err := httpserve.Recheck(ctx, d.o.Checker, e.id, token)
			if err != nil {
				d.storeFailed("checking the tokens of open sessions failed; trying again at each poll, quietly until the store answers", err)
				return
			}
			if ok {
				continue
			}
			sessions, requests := e.h.Revoke(token, fmt.Errorf("instance %s's token was replaced (agentctl instance token rotate): the old one opens nothing", e.id))
			d.log.Info("the instance's token changed; what the old one opened ends", "instance", e.id, "sessions", sessions, "requests", requests)
		}
	}
}

// stopIdle stops the endpoints that have had no session and no request
// for IdleStop; the next request builds them again.
func (d *Daemon) stopIdle() {
	var idle []*entry
	d.mu.Lock()
	for id, e := range d.entries {
		select {
		case <-e.ready:
		default:
			continue
		}
		if e.err != nil || e.users.Load() > 0 || e.h.Idle() < d.o.IdleStop {
			continue
		}
		delete(d.entries, id)
		idle = append(idle, e)
	}
	d.mu.Unlock()
	for _, e := range idle {
		d.log.Info("stopping the idle instance's endpoint and external servers", "instance", e.id, "idle_stop", d.o.IdleStop)
		e.s.close()
	}
}
