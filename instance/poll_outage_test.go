package instance_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/instance"
)

// outageEvents is fakeEvents behind a store that does not answer its first
// down reads (their errors match [instance.ErrUnavailable]).
type outageEvents struct {
	*fakeEvents
	mu   sync.Mutex
	down int
}

func (o *outageEvents) Events(ctx context.Context, id string, after int64) ([]*instance.Event, error) {
	o.mu.Lock()
	if o.down > 0 {
		o.down--
		o.mu.Unlock()
		return nil, fmt.Errorf("postgres store postgres://db/x: connection refused (%w)", instance.ErrUnavailable)
	}
	o.mu.Unlock()
	return o.fakeEvents.Events(ctx, id, after)
}

func (o *outageEvents) Transient(err error) bool { return errors.Is(err, instance.ErrUnavailable) }

// TestPollerWaitsOutAnOutage: a wait outlives a store that stops
// answering for a while (a database restart): it tries again with backoff,
// says when the outage begins and ends, and still returns the status
// waited for; an error that is not an outage still ends it at once.
func TestPollerWaitsOutAnOutage(t *testing.T) {
	src := &outageEvents{fakeEvents: &fakeEvents{batches: [][]*instance.Event{{ev(1, instance.StatusRunning)}, {ev(2, instance.StatusDone)}}, existsPolls: 100}, down: 3}
	var outages []error
	c := &ticks{}
	p := &instance.Poller{Source: src, After: c.after, Outage: func(err error) { outages = append(outages, err) }}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := p.Wait(ctx, "i1", instance.StatusDone)
	if err != nil || e.Seq != 2 {
		t.Fatalf("Wait = %v, %v; want the done event", e, err)
	}
	if len(outages) != 2 || !errors.Is(outages[0], instance.ErrUnavailable) || outages[1] != nil {
		t.Errorf("outage reports %v, want the outage's error and then nil", outages)
	}

	// Not an outage: the wait ends with it.
	bad := &outageEvents{fakeEvents: &fakeEvents{err: errors.New("no such table: events")}}
	p = &instance.Poller{Source: bad, After: c.after}
	if _, err := p.Wait(ctx, "i1", instance.StatusDone); err == nil || errors.Is(err, instance.ErrUnavailable) {
		t.Errorf("Wait on a broken store = %v, want its error", err)
	}

	// Following events waits an outage out too.
	src = &outageEvents{fakeEvents: &fakeEvents{batches: [][]*instance.Event{{ev(1, instance.StatusRunning)}, nil, {ev(3, instance.StatusBlocked)}}, existsPolls: 100}, down: 0}
	p = &instance.Poller{Source: src, After: c.after}
	n := 0
	for e, err := range p.Events(ctx, "i1", true) {
		if err != nil {
			t.Fatalf("Events: %v", err)
		}
		n++
		if e.Seq == 3 {
			break
		}
		src.mu.Lock()
		src.down = 2
		src.mu.Unlock()
	}
	if n != 2 {
		t.Errorf("followed %d events, want 2", n)
	}
	if src.down != 0 {
		t.Errorf("the follow ended with %d failed reads left", src.down)
	}
}
