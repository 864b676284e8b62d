package kb

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/testkit"
)

// waitForSearch polls until check accepts the search's ids.
func waitForSearch(t *testing.T, kb *Base, query string, check func(ids []string) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var ids []string
	for time.Now().Before(deadline) {
		out, err := kb.Search(context.Background(), query, 50)
		if err != nil {
			t.Fatal(err)
		}
		ids = ids[:0]
		for _, r := range out.Results {
			ids = append(ids, r.ID)
		}
		if check(ids) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("search %q: still %v", query, ids)
}

func TestSearchFreshness(t *testing.T) {
	kb, dir := openTest(t, "docs", map[string]string{"a.md": "alpha beta", "sub/b.md": "beta"}, Options{RefreshInterval: 10 * time.Millisecond})
	has := func(want ...string) func([]string) bool {
		return func(ids []string) bool { return slices.Equal(ids, want) }
	}
	waitForSearch(t, kb, "alpha", has("a"))

	// Edits outside agentctl: added, changed (same size too), removed.
	testkit.WriteFiles(t, dir, map[string]string{"sub/new.md": "gamma", "a.md": "delta beta"})
	waitForSearch(t, kb, "gamma", has("sub/new"))
	waitForSearch(t, kb, "alpha", has())
	waitForSearch(t, kb, "delta", has("a"))
	testkit.WriteFiles(t, dir, map[string]string{"a.md": "omega beta"}) // same size, same second
	waitForSearch(t, kb, "omega", has("a"))
	if err := os.RemoveAll(filepath.Join(dir, "sub")); err != nil {
		t.Fatal(err)
	}
	waitForSearch(t, kb, "beta gamma", has("a"))

	// Writes through Write are searchable at once, without a refresh.
	kb2, _ := openTest(t, "docs", map[string]string{"a.md": "alpha"}, Options{RefreshInterval: time.Hour})
	ctx := context.Background()
	if s, _ := kb2.Search(ctx, "alpha", 10); len(s.Results) != 1 {
		t.Fatal(s)
	}
	for _, step := range []struct{ id, content, query, want string }{
		{"q/quokka", "# Quokka\nsmiling marsupial", "quokka", "q/quokka"},
		{"a", "now about wombats", "wombats", "a"},
		{"a", "now about wombats", "alpha", ""},
	} {
		if _, err := kb2.Write(ctx, step.id, step.content); err != nil {
			t.Fatal(err)
		}
		s, err := kb2.Search(ctx, step.query, 10)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if len(s.Results) > 0 {
			got = s.Results[0].ID
		}
		if got != step.want || len(s.Results) > 1 {
			t.Fatalf("after writing %s, search %q = %v", step.id, step.query, s.Results)
		}
	}
}

// fakeClock drives a base's refresh schedule (Base.now, Base.after): its
// time moves only when set is called, which fires the waits it passed.
type fakeClock struct {
	mu      sync.Mutex
	t       time.Time
	pending []fakeWait
	// waits gets the deadline of every wait asked for.
	waits chan time.Time
}

type fakeWait struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Now(), waits: make(chan time.Time, 64)}
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) after(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := fakeWait{at: c.t.Add(d), ch: make(chan time.Time, 1)}
	c.pending = append(c.pending, w)
	c.waits <- w.at
	return w.ch
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
	kept := c.pending[:0]
	for _, w := range c.pending {
		if w.at.After(t) {
			kept = append(kept, w)
			continue
		}
		w.ch <- t
	}
	c.pending = kept
}

// TestBackgroundRefreshSchedule: while searches come, the background
// refresher walks the folder one RefreshInterval after the last reconcile,
// by this process or another, and so at most once per interval; once
// searches stop, it does not walk. A fake clock drives it, so the test
// says exactly when it wakes and whether it walked.
func TestBackgroundRefreshSchedule(t *testing.T) {
	const every = time.Minute
	indexDir := t.TempDir()
	clk := newFakeClock()
	t0 := clk.now()
	kb, dir := openTest(t, "docs", map[string]string{"a.md": "alpha"}, Options{IndexDir: indexDir, RefreshInterval: every})
	kb.now, kb.after = clk.now, clk.after
	rounds := make(chan struct{})
	kb.refreshRound = func() { rounds <- struct{}{} }
	wantWait := func(want time.Time) {
		t.Helper()
		if got := <-clk.waits; !got.Equal(want) {
			t.Fatalf("the refresher waits until t0%+v, want t0%+v", got.Sub(t0), want.Sub(t0))
		}
	}
	wantWalks := func(n int64) {
		t.Helper()
		if got := kb.walks.Load(); got != n {
			t.Fatalf("%d walks of the folder, want %d", got, n)
		}
	}
	round := func(at time.Time) {
		t.Helper()
		clk.set(at)
		<-rounds
	}

	// The first search builds the index (a walk at t0) and starts the
	// refresher, which waits an interval.
	if ids := searchIDs(t, kb, "alpha", 5); !slices.Equal(ids, []string{"a"}) {
		t.Fatal(ids)
	}
	wantWalks(1)
	wantWait(t0.Add(every))
	// A search within the interval does not walk.
	clk.set(t0.Add(every / 2))
	searchIDs(t, kb, "alpha", 5)
	wantWalks(1)
	// An interval after the walk, the refresher walks (a search came).
	round(t0.Add(every))
	wantWalks(2)
	wantWait(t0.Add(2 * every))

	// Another process reconciles half an interval later: the refresher's
	// round finds the index fresh and waits for an interval after that one.
	other, err := Open("docs", dir, Options{IndexDir: indexDir, RefreshInterval: every})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.now = clk.now
	clk.set(t0.Add(3 * every / 2))
	if _, err := other.Index(context.Background(), IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	round(t0.Add(2 * every))
	wantWalks(2)
	wantWait(t0.Add(5 * every / 2))

	// Searches stop (the last was at t0+every/2): rounds come, walks do not.
	round(t0.Add(10 * every))
	wantWalks(2)
	wantWait(t0.Add(11 * every))
	round(t0.Add(11 * every))
	wantWalks(2)
	wantWait(t0.Add(12 * every))
	// A search comes: it finds the index stale, answers, and has the
	// refresher walk at once.
	searchIDs(t, kb, "alpha", 5)
	<-rounds
	wantWalks(3)
	wantWait(t0.Add(12 * every))
}
