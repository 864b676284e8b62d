package notify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/agentctl/agentctl/instance"
)

// Options tune a [Deliverer]; the zero value is the defaults.
type Options struct {
	// Sender sends the bodies (default: [NewClient] with [DefaultTimeout]).
	Sender Sender
	// Log gets what goes wrong (default: nowhere).
	Log *slog.Logger
	// Lease is how long a claimed row is this process's to deliver
	// (default 1 min, past the send's timeout); a process that dies
	// leaves it due again then.
	Lease time.Duration
	// Backoff is the wait after a first failed attempt, doubled after each
	// later one (default 5 s), up to MaxBackoff (default 10 min).
	Backoff, MaxBackoff time.Duration
	// GiveUp is how long after a row was made it is tried (default 1 h);
	// then it is marked failed.
	GiveUp time.Duration
	// Wait bounds how long a write waits for its own deliveries when no
	// [Deliverer.Run] runs in the process (default 2 s): a CLI command
	// waits that long at most, and leaves the rest in the outbox.
	Wait time.Duration
	// Poll is how often [Deliverer.Run] looks for due rows (default 5 s,
	// with some jitter).
	Poll time.Duration
	// Retain is how long delivered and failed rows are kept (default 7
	// days); [Deliverer.Run] deletes older ones.
	Retain time.Duration
	// PauseAfterSend (tests only) waits after each POST before recording
	// its outcome: a process killed then has sent but not recorded.
	PauseAfterSend time.Duration
}

// The defaults of [Options].
const (
	DefaultLease      = time.Minute
	DefaultBackoff    = 5 * time.Second
	DefaultMaxBackoff = 10 * time.Minute
	DefaultGiveUp     = time.Hour
	DefaultWait       = 2 * time.Second
	DefaultPoll       = 5 * time.Second
	DefaultRetain     = 7 * 24 * time.Hour
)

func (o *Options) fill() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Lease, DefaultLease)
	def(&o.Backoff, DefaultBackoff)
	def(&o.MaxBackoff, DefaultMaxBackoff)
	def(&o.GiveUp, DefaultGiveUp)
	def(&o.Wait, DefaultWait)
	def(&o.Poll, DefaultPoll)
	def(&o.Retain, DefaultRetain)
	if o.Sender.Client == nil {
		o.Sender.Client = NewClient(DefaultTimeout)
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// Deliverer delivers the outbox rows of its targets. It is the
// [instance.Notifier] of the stores it is given to ([Deliverer.Notify]).
type Deliverer struct {
	list    []Target          // as given
	targets map[string]Target // by URL
	urls    []string          // the URLs of the targets it can deliver to
	o       Options

	mu      sync.Mutex
	running int           // Run loops taking kicks, under mu
	kick    chan []string // rows just enqueued, for a Run loop
}

// New is a deliverer of targets. A target without its secret here
// ([Target.SecretErr]) is left to other processes.
func New(targets []Target, o Options) *Deliverer {
	o.fill()
	d := &Deliverer{list: targets, targets: map[string]Target{}, o: o, kick: make(chan []string, 64)}
	for _, t := range targets {
		d.targets[t.URL] = t
		if t.SecretErr == nil {
			d.urls = append(d.urls, t.URL)
		}
	}
	return d
}

// Notify is the [instance.Notify] that makes a store enqueue for d's
// targets and tell d, with base the base_url its links start with.
func (d *Deliverer) Notify(base string) *instance.Notify {
	n := &instance.Notify{BaseURL: base, Notifier: d}
	for _, t := range d.list {
		n.Targets = append(n.Targets, instance.NotifyTarget{URL: t.URL, Events: t.Events})
	}
	return n
}

// Enqueued delivers the rows a write of st just committed: through the Run
// loop when one runs in this process, without holding the write up; else
// here, waiting at most [Options.Wait], leaving what is not done by then
// in the outbox.
func (d *Deliverer) Enqueued(st *instance.Store, ids []string) {
	d.mu.Lock()
	if d.running > 0 {
		select {
		case d.kick <- ids:
		default: // the loop finds them due at its next look
		}
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), d.o.Wait)
	defer cancel()
	d.claimAndSend(ctx, st, instance.ClaimOptions{IDs: ids})
}

// Run delivers due rows, of every instance, until ctx ends: those this
// process enqueues at once, the others (retries, rows of processes that
// could not deliver them, or died) within [Options.Poll]. It gives up rows
// past [Options.GiveUp] that nobody could deliver, and deletes delivered
// and failed rows past [Options.Retain]. When ctx ends, the rows this
// process enqueued, and the deliveries under way, get [Options.Wait] more,
// as a CLI command's own rows do (a headless run's mcp serve ends right
// after the report that made one); it waits for them before it returns.
func (d *Deliverer) Run(ctx context.Context, st *instance.Store) {
	d.mu.Lock()
	d.running++
	d.mu.Unlock()
	for _, t := range d.list {
		if t.SecretErr != nil {
			d.o.Log.Warn("notifications to this target are left to a process that has its secret", "target", Redact(t.URL), "err", t.SecretErr)
		}
	}
	// sending is the context of the claims and sends: it ends Options.Wait
	// after ctx does.
	sending, stopSending := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSending()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { // this process's own rows, at once
		for {
			select {
			case ids := <-d.kick:
				wg.Go(func() { d.claimAndSend(sending, st, instance.ClaimOptions{IDs: ids}) })
				continue
			case <-ctx.Done():
			}
			time.AfterFunc(d.o.Wait, stopSending)
			// No kick comes once running is down (Enqueued then
			// delivers itself); those sent before are taken here.
			d.mu.Lock()
			d.running--
			d.mu.Unlock()
			for {
				select {
				case ids := <-d.kick:
					wg.Go(func() { d.claimAndSend(sending, st, instance.ClaimOptions{IDs: ids}) })
				default:
					return
				}
			}
		}
	})
	timer := time.NewTimer(0)
	defer timer.Stop()
	var lastSweep time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if ctx.Err() == nil && time.Since(lastSweep) >= 10*time.Minute {
			lastSweep = time.Now()
			d.sweep(ctx, st)
		}
		for ctx.Err() == nil {
			due, err := st.OutboxDue(ctx, d.urls)
			if err != nil {
				if ctx.Err() == nil {
					d.o.Log.Warn("could not read the notifications' outbox", "err", err)
				}
				break
			}
			if !due || d.claimAndSend(sending, st, instance.ClaimOptions{}) == 0 {
				break
			}
		}
		// Jitter: many endpoints sharing a store do not look in step.
		timer.Reset(d.o.Poll/2 + rand.N(d.o.Poll))
	}
}

// sweep gives up the rows nobody delivered in time and deletes old ones.
func (d *Deliverer) sweep(ctx context.Context, st *instance.Store) {
	now := time.Now()
	why := fmt.Sprintf("not delivered within %s: no process with this target (and its secret) in its configuration tried it", d.o.GiveUp)
	if n, err := st.ExpireOutbox(ctx, now.Add(-d.o.GiveUp-d.o.Lease), why); err != nil {
		if ctx.Err() == nil {
			d.o.Log.Warn("could not expire old notifications", "err", err)
		}
	} else if n > 0 {
		d.o.Log.Warn("notifications given up: not delivered in time", "count", n)
	}
	if _, err := st.PruneOutbox(ctx, now.Add(-d.o.Retain)); err != nil && ctx.Err() == nil {
		d.o.Log.Warn("could not delete old notifications", "err", err)
	}
}

// claimAndSend claims the rows o says, sends them at once, and records
// the outcomes; it returns how many it claimed.
func (d *Deliverer) claimAndSend(ctx context.Context, st *instance.Store, o instance.ClaimOptions) int {
	if ctx.Err() != nil {
		return 0
	}
	o.Targets, o.Lease = d.urls, d.o.Lease
	// The claim does not end with ctx: one cancelled after its UPDATE
	// committed, before its rows were read, would leave them claimed and
	// unsent for the lease. The sends end with ctx.
	claim, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	rows, err := st.ClaimOutbox(claim, o)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			d.o.Log.Warn("could not claim notifications; they stay in the outbox", "err", err)
		}
		return 0
	}
	var wg sync.WaitGroup
	for _, r := range rows {
		wg.Go(func() { d.attempt(ctx, st, r) })
	}
	wg.Wait()
	return len(rows)
}

// attempt sends row r once and records the outcome: delivered, due again
// after a backoff, or failed once past [Options.GiveUp]. A question's
// notification whose question is no longer open is not sent
// ([instance.Store.OutboxSupersede]).
func (d *Deliverer) attempt(ctx context.Context, st *instance.Store, r *instance.OutboxRow) {
	if why, err := st.OutboxSupersede(ctx, r); err != nil {
		// Sent all the same: a question nobody hears of waits for nothing.
		if ctx.Err() == nil {
			d.o.Log.Warn("could not look whether the notification's question is still open; sending it", "id", r.ID, "err", err)
		}
	} else if why != "" {
		d.o.Log.Info("notification superseded", "id", r.ID, "event", r.Event, "target", Redact(r.Target), "why", why)
		return
	}
	t := d.targets[r.Target]
	body, err := Body(t, r.Payload)
	if err == nil {
		_, err = d.o.Sender.Send(ctx, t, r.ID, r.Event, body)
	}
	if d.o.PauseAfterSend > 0 {
		time.Sleep(d.o.PauseAfterSend)
	}
	// Recorded even when ctx has ended (a CLI command's wait ran out):
	// otherwise the row would wait out its lease.
	rec, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err == nil {
		if err := st.OutboxDelivered(rec, r.ID); err != nil {
			d.o.Log.Warn("notification delivered, but not recorded so: it may be sent again, under the same delivery id", "id", r.ID, "err", err)
		}
		return
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		err = fmt.Errorf("%w (stopped waiting after %s; it stays in the outbox)", err, d.o.Wait)
	case ctx.Err() != nil:
		err = fmt.Errorf("%w (the process stopped; it stays in the outbox)", err)
	}
	next := time.Now().Add(d.backoff(r.Attempts))
	log := d.o.Log.With("id", r.ID, "event", r.Event, "target", Redact(r.Target), "attempt", r.Attempts, "err", err)
	if next.After(r.CreatedAt.Add(d.o.GiveUp)) {
		log.Warn("notification failed: given up")
		err = fmt.Errorf("gave up after %d attempts over %s: %w", r.Attempts, d.o.GiveUp, err)
		if rerr := st.OutboxGiveUp(rec, r.ID, err.Error()); rerr != nil {
			log.Warn("could not record the notification failed", "record_err", rerr)
		}
		return
	}
	log.Warn("notification not delivered; it will be tried again", "next", next.UTC().Format(time.RFC3339))
	if rerr := st.OutboxRetry(rec, r.ID, next, err.Error()); rerr != nil {
		log.Warn("could not record the failed attempt; the row is due again when its lease runs out", "record_err", rerr)
	}
}

// backoff is the wait after the attempts-th failed attempt.
func (d *Deliverer) backoff(attempts int) time.Duration {
	w := d.o.Backoff
	for i := 1; i < attempts && w < d.o.MaxBackoff; i++ {
		w *= 2
	}
	return min(w, d.o.MaxBackoff)
}
