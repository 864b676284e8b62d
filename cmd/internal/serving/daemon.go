// Package serving is the room above both the record (instance) and the
// endpoint (mcpserver): it builds an instance's endpoint configuration from
// its record alone ([EndpointConfig]), for stdio and HTTP alike, and serves
// the instances of a store over streamable HTTP from one process: `agentctl
// serve`, and `agentctl mcp serve --http` for one instance.
//
// Each instance is served at /instances/{id}/mcp (its id, never a label or
// prefix), with the same endpoint `mcp serve` gives it on stdio. Its
// endpoint is built from the record on its first authorized request, and
// stopped (its external servers with it) once it has had no session and no
// request for [Options.IdleStop]. The daemon polls the store every
// [Options.PollInterval]: an instance created meanwhile is served on its
// first request without a restart; an instance deleted meanwhile has its
// calls in flight answered with an error saying so, its sessions closed,
// and its URL answers 404 from then on; a token no longer valid (rotated)
// has the sessions and requests it opened ended.
//
// Every /instances/{id}/... request carries the instance's bearer token,
// checked by a [httpserve.TokenChecker] before anything else: a caller
// without it gets 401 whether or not the instance exists.
//
//	d := serving.New(serving.Options{Store: st, Checker: checker, Listen: addr})
//	err := d.Serve(ctx, listener) // until ctx is done, then a graceful stop
package serving

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentctl/agentctl/cmd/internal/webui"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
	"github.com/agentctl/agentctl/mcpserver/httpserve"
)

// Defaults of [Options].
const (
	DefaultIdleStop     = 10 * time.Minute
	DefaultPollInterval = time.Second
	DefaultGrace        = 30 * time.Second
)

// Options configure a [Daemon].
type Options struct {
	Store *instance.Store
	// Checker checks each request's bearer token.
	Checker httpserve.TokenChecker
	// Listen is the address served (for the Host check: see
	// [httpserve.ProtectOptions]); AllowedHosts are more names clients may
	// use for it.
	Listen       string
	AllowedHosts []string
	// Only, if set, is the one instance id served (`mcp serve --http`);
	// every other id answers 404 (after the token check).
	Only string
	// MaxBodyBytes caps a request's body (0: 4 MiB).
	MaxBodyBytes int64
	// BodyTimeout bounds reading a request's body, on every route: a
	// client that sends it slowly has its connection closed then (0:
	// [httpserve.DefaultBodyTimeout]).
	BodyTimeout time.Duration
	// IdleStop stops an instance's endpoint, and its external servers, once
	// it has had no session and no request for this long (0:
	// [DefaultIdleStop]; negative: never).
	IdleStop time.Duration
	// PollInterval is how often the store is read for deleted instances
	// (0: [DefaultPollInterval]).
	PollInterval time.Duration
	// Grace is how long calls in flight may take to finish when the daemon
	// stops (0: [DefaultGrace]).
	Grace time.Duration
	// SessionTimeout closes a session that made no request for this long
	// (0: never).
	SessionTimeout time.Duration
	// Endpoint: the endpoints' settings.
	Endpoint EndpointOptions
	// Logger receives the daemon's logs (never a token); nil discards.
	Logger *slog.Logger
	// UI, when set, serves the web page (see [webui]) at / and /ui/ (with
	// /login and /logout), behind the same Host and Origin checks as the
	// MCP URLs; its Store and Live are the daemon's. Nil: those paths
	// answer 404.
	UI *webui.Options
}

// Daemon serves a store's instances over HTTP.
type Daemon struct {
	o     Options
	log   *slog.Logger
	guard http.Handler
	ui    *webui.UI // nil without the web page

	// mu guards entries, deleted and closed: read-locked by each
	// request's look-up, so that requests do not queue behind one another.
	mu      sync.RWMutex
	entries map[string]*entry
	deleted map[string]bool
	closed  bool

	// storeDown is the janitor's own (one goroutine): the store did not
	// answer its last poll, which was said once.
	storeDown bool
}

// entry is one instance's endpoint while it is being built or served.
type entry struct {
	id    string
	ready chan struct{} // closed once built (or failed)
	err   error
	s     *served
	h     *httpserve.Handler
	// users counts the requests holding the entry: incremented under
	// Daemon.mu (read-locked), so that [Daemon.stopIdle], which reads it
	// under the write lock, never stops an entry a request just took.
	users atomic.Int64
}

// New returns the daemon; [Daemon.Serve] or [Daemon.Handler] serve it.
func New(o Options) *Daemon {
	if o.IdleStop == 0 {
		o.IdleStop = DefaultIdleStop
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = httpserve.DefaultMaxBodyBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	d := &Daemon{o: o, log: o.Logger, entries: map[string]*entry{}, deleted: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", d.health)
	mux.HandleFunc("/instances/{id}/mcp", d.serveMCP)
	mux.HandleFunc("GET /instances/{id}/health", d.instanceHealth)
	if o.UI != nil {
		uo := *o.UI
		uo.Store, uo.Live = o.Store, d.live
		if uo.Logger == nil {
			uo.Logger = o.Logger
		}
		d.ui = webui.New(uo)
		d.ui.Register(mux)
	}
	d.guard = httpserve.Protect(mux, httpserve.ProtectOptions{Listen: o.Listen, AllowedHosts: o.AllowedHosts,
		MaxBodyBytes: o.MaxBodyBytes, BodyTimeout: o.BodyTimeout})
	return d
}

// Serve serves on ln until ctx is done, then stops gracefully (see
// [Daemon.Shutdown]) and returns nil; an error if serving failed.
func (d *Daemon) Serve(ctx context.Context, ln net.Listener) error {
	srv := httpserve.NewServer(d.guard, httpserve.ServerOptions{ErrorLog: d.log})
	done := make(chan struct{})
	defer close(done)
	go d.janitor(done)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		d.Shutdown(srv, errors.New("the listener failed"))
		return fmt.Errorf("serve on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	d.Shutdown(srv, context.Cause(ctx))
	return nil
}

// Shutdown stops srv gracefully: it lets the calls in flight finish for up
// to [Options.Grace], still taking the requests of the sessions under way
// (the answer to a question a call asked through the client comes as a
// request of its own; the web page's answers too) but no new session;
// answers those still running with an error ("server is closing: " and
// cause; an ask_user_question's question is then cancelled, never left
// open), closes the sessions and the listener, stops every endpoint's
// external servers and releases their serve locks.
func (d *Daemon) Shutdown(srv *http.Server, cause error) {
	if cause == nil || errors.Is(cause, context.Canceled) {
		cause = errors.New("agentctl is stopping")
	}
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	grace, cancel := context.WithTimeout(context.Background(), d.o.Grace)
	defer cancel()
	entries := d.builtEntries()
	for _, e := range entries {
		_ = e.h.WaitCalls(grace)
	}
	if d.ui != nil {
		d.ui.Close() // the pages' live streams end; the browsers retry
	}
	for _, e := range entries {
		e.s.ep.Stopping(cause) // the questions it interrupts say why
		e.h.Interrupt(cause)
	}
	// The answers of the interrupted calls are written on their POSTs;
	// then the sessions' streams may end.
	answered, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	for _, e := range entries {
		_ = e.h.WaitPosts(answered)
	}
	for _, e := range entries {
		e.h.CloseSessions()
	}
	shut, cancel3 := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel3()
	if srv.Shutdown(shut) != nil { // stops accepting; waits for idle connections
		_ = srv.Close()
	}
	for _, e := range entries {
		if d.remove(e) { // the janitor may have stopped it meanwhile
			e.s.close()
		}
	}
	// Endpoints whose build was under way when the daemon began to stop
	// (no request can start one now) are stopped too once built, so no
	// external server outlives the daemon.
	d.mu.Lock()
	var late []*entry
	for _, e := range d.entries {
		late = append(late, e)
	}
	d.mu.Unlock()
	for _, e := range late {
		select {
		case <-e.ready:
		case <-time.After(d.o.Grace):
			continue
		}
		if e.err == nil && d.remove(e) {
			e.h.Interrupt(cause)
			e.h.CloseSessions()
			e.s.close()
		}
	}
}

func (d *Daemon) builtEntries() []*entry {
	d.mu.RLock()
	defer d.mu.RUnlock()
	var out []*entry
	for _, e := range d.entries {
		select {
		case <-e.ready:
			if e.err == nil {
				out = append(out, e)
			}
		default:
		}
	}
	return out
}

// Health is what GET /health answers: the daemon is up, its version, how
// many instances it serves, and its store's kind and whether it answers;
// no instance's data.
type Health struct {
	// Status is "ok", or "degraded" (HTTP 503) while the store does not
	// answer: sessions already open go on, what needs the store fails.
	Status  string `json:"status"`
	Version string `json:"version"`
	// Instances is null while degraded: the store that counts them does
	// not answer (0 would say the fleet is empty).
	Instances *int   `json:"instances"`
	Store     string `json:"store"` // "sqlite" or "postgres"
	StoreOK   bool   `json:"store_ok"`
	// StoreError is why the store did not answer (without its password).
	StoreError string `json:"store_error,omitempty"`
}

// health is GET /health (see [Health]).
func (d *Daemon) health(w http.ResponseWriter, r *http.Request) {
	h := Health{Status: "ok", Version: d.o.Endpoint.Version, Store: d.o.Store.Kind(), StoreOK: true}
	n := 1
	var err error
	if d.o.Only == "" {
		n, err = d.o.Store.Count(r.Context())
	} else {
		err = d.o.Store.Ping(r.Context())
	}
	if err != nil {
		d.log.Error("health: the store does not answer", "error", err)
		h.Status, h.StoreOK, h.StoreError = "degraded", false, err.Error()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(h)
		return
	}
	h.Instances = &n
	writeJSON(w, h)
}

// InstanceHealth is what GET /instances/{id}/health answers.
type InstanceHealth struct {
	ID string `json:"id"`
	// Running says whether the endpoint is built (its external servers
	// started); when not, the servers are reported stopped.
	Running bool `json:"running"`
	mcpserver.Health
}

func (d *Daemon) instanceHealth(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !httpserve.Authorize(w, r, d.o.Checker, id, d.log) {
		return
	}
	rec, ok := d.lookup(w, r, id)
	if !ok {
		return
	}
	d.mu.RLock()
	e := d.entries[id]
	d.mu.RUnlock()
	if e != nil {
		select {
		case <-e.ready:
			if e.err == nil {
				writeJSON(w, InstanceHealth{ID: id, Running: true, Health: e.s.ep.Health()})
				return
			}
		default:
		}
	}
	h, err := recordHealth(rec)
	if err != nil {
		http.Error(w, fmt.Sprintf("instance %s cannot be served: %v", id, err), http.StatusInternalServerError)
		return
	}
	writeJSON(w, InstanceHealth{ID: id, Health: h})
}

// live runs fn with instance id's endpoint, if it is built, holding it
// (so that it is not stopped as idle meanwhile) until fn returns; it
// reports whether it did. The web page reads the endpoint's health and
// names through it.
func (d *Daemon) live(id string, fn func(webui.Endpoint)) bool {
	d.mu.RLock()
	e := d.entries[id]
	ok := false
	if e != nil && !d.closed {
		select {
		case <-e.ready:
			ok = e.err == nil
		default:
		}
	}
	if ok {
		e.users.Add(1)
	}
	d.mu.RUnlock()
	if !ok {
		return false
	}
	defer d.release(e)
	fn(e.s.ep)
	return true
}

// lookup reads the instance's record, answering 404 when it is not
// served (unknown, deleted, or not the one instance of --http).
func (d *Daemon) lookup(w http.ResponseWriter, r *http.Request, id string) (*instance.Record, bool) {
	d.mu.RLock()
	gone := d.deleted[id]
	d.mu.RUnlock()
	if gone {
		http.Error(w, "Not Found: "+deletedError(id).Error(), http.StatusNotFound)
		return nil, false
	}
	if d.o.Only != "" && id != d.o.Only {
		http.Error(w, fmt.Sprintf("Not Found: this server serves instance %s only", d.o.Only), http.StatusNotFound)
		return nil, false
	}
	rec, err := getExactly(r.Context(), d.o.Store, id)
	var nf *instance.NotFoundError
	switch {
	case errors.As(err, &nf):
		http.Error(w, fmt.Sprintf("Not Found: no instance %s: the URL takes an instance's full id (agentctl instance list)", id), http.StatusNotFound)
		return nil, false
	case err != nil:
		d.log.Error("reading an instance failed", "instance", id, "error", err)
		http.Error(w, fmt.Sprintf("Internal Server Error: instance %s could not be read from the store", id), http.StatusInternalServerError)
		return nil, false
	}
	return rec, true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.MarshalIndent(v, "", "  ")
	_, _ = w.Write(append(b, '\n'))
}

// getExactly reads the record of the instance whose id is exactly id:
// never a label or an id prefix, which Store.Get would also resolve.
func getExactly(ctx context.Context, st *instance.Store, id string) (*instance.Record, error) {
	if len(id) != idLength || id != strings.ToLower(id) {
		return nil, &instance.NotFoundError{What: "instance", Ref: id}
	}
	rec, err := st.Get(ctx, id)
	if err == nil && rec.ID != id {
		err = &instance.NotFoundError{What: "instance", Ref: id}
	}
	return rec, err
}

// idLength is the length of an instance id (a ULID).
const idLength = 26
