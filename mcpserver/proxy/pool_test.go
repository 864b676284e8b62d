package proxy

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctl/agentctl/mcpserver/mount"
)

// reconciles is a Namespace that counts the pool's calls.
type reconciles struct{ n atomic.Int64 }

func (r *reconciles) Reconcile() { r.n.Add(1) }

func server(name, command string) mount.Resolved {
	return mount.Resolved{Mount: mount.Mount{Kind: mount.KindServer, Name: name, Command: command}}
}

func TestPoolWithoutServersHasNoFirstRoundToWaitFor(t *testing.T) {
	t.Parallel()
	p := NewPool([]mount.Resolved{{Mount: mount.Mount{Kind: mount.KindKB, Name: "docs"}}}, &reconciles{}, Options{})
	select {
	case <-p.FirstRound():
	default:
		t.Fatal("no servers, yet a first round to wait for")
	}
	if len(p.Servers()) != 0 || len(p.Statuses()) != 0 {
		t.Fatal("a knowledge base is not the pool's")
	}
}

// TestPoolFirstRoundEndsOnAFailedStart: a server that cannot start ends
// its first attempt (down, saying why) without touching the namespace.
func TestPoolFirstRoundEndsOnAFailedStart(t *testing.T) {
	t.Parallel()
	ns := &reconciles{}
	p := NewPool([]mount.Resolved{server("gone", filepath.Join(t.TempDir(), "no-such-server"))}, ns, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	p.Start(ctx)
	select {
	case <-p.FirstRound():
	case <-time.After(time.Minute):
		t.Fatal("the first round never ended")
	}
	st := p.Statuses()[0]
	if st.Name != "gone" || st.State != StateDown || !strings.Contains(st.Error, "cannot start") {
		t.Fatalf("status %+v", st)
	}
	cancel()
	p.Wait()
	if ns.n.Load() != 0 || len(p.Servers()[0].Tools()) != 0 {
		t.Fatal("a server that never came up changed the namespace")
	}
}

// TestPoolStartsOnce: a second Start (Endpoint.Start, then Run) starts
// nothing more, and Stop stops what the first started, its ctx still live.
func TestPoolStartsOnce(t *testing.T) {
	t.Parallel()
	p := NewPool([]mount.Resolved{server("gone", filepath.Join(t.TempDir(), "no-such-server"))}, &reconciles{}, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.Start(ctx)
	p.Start(ctx)
	select {
	case <-p.FirstRound():
	case <-time.After(time.Minute):
		t.Fatal("the first round never ended")
	}
	p.Stop()
	p.Stop()
	stopped := make(chan struct{})
	go func() { p.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("Stop did not stop the servers")
	}
}

// TestStdioCommand: a stdio server runs in its own process group, with a
// parent-death signal on Linux, whoever reads its lines.
func TestStdioCommand(t *testing.T) {
	t.Parallel()
	s := NewPool([]mount.Resolved{server("up", "/bin/true")}, &reconciles{}, Options{}).Servers()[0]
	if cmd := s.command(); !ownProcessGroup(cmd) {
		t.Fatalf("process attributes %+v", cmd.SysProcAttr)
	}
}

// TestPoolRunsServersInDir: a stdio server's command runs in Options.Dir
// (the instance's workspace), whichever transport starts it; a Dir that is
// gone is named as the reason the server did not start, not its command.
func TestPoolRunsServersInDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := NewPool([]mount.Resolved{server("up", "/bin/true")}, &reconciles{}, Options{Dir: dir}).Servers()[0]
	if cmd := s.command(); cmd.Dir != dir {
		t.Fatalf("command's Dir %q, want %q", cmd.Dir, dir)
	}
	gone := filepath.Join(dir, "gone")
	p := NewPool([]mount.Resolved{server("up", "/bin/true")}, &reconciles{}, Options{Dir: gone})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.Start(ctx)
	select {
	case <-p.FirstRound():
	case <-time.After(time.Minute):
		t.Fatal("the first round never ended")
	}
	st := p.Statuses()[0]
	if want := `cannot start "/bin/true" in the instance's workspace ` + gone + ": no such file or directory"; st.State != StateDown || !strings.Contains(st.Error, want) {
		t.Fatalf("status %+v, want an error with %q", st, want)
	}
	cancel()
	p.Wait()
}

// TestPoolWaitOutlastsAnEmptySet: a pool whose every server was taken
// away (Set) has not ended: Wait returns only once it is stopped, and a
// server Set adds meanwhile runs and is stopped with it.
func TestPoolWaitOutlastsAnEmptySet(t *testing.T) {
	t.Parallel()
	ns := &reconciles{}
	p := NewPool([]mount.Resolved{server("a", filepath.Join(t.TempDir(), "no-such-server"))}, ns, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.Start(ctx)
	waited := make(chan struct{})
	go func() { p.Wait(); close(waited) }()
	if started, stopped := p.Set(nil); len(started) != 0 || len(stopped) != 1 {
		t.Fatalf("Set(nil): started %v, stopped %v", started, stopped)
	}
	time.Sleep(50 * time.Millisecond) // the removed server's goroutines end
	select {
	case <-waited:
		t.Fatal("Wait returned while the pool runs, its servers all removed")
	default:
	}
	if started, _ := p.Set([]mount.Resolved{server("b", filepath.Join(t.TempDir(), "no-such-server"))}); len(started) != 1 {
		t.Fatalf("Set(b): started %v", started)
	}
	deadline := time.Now().Add(time.Minute)
	for p.Statuses()[0].State != StateDown {
		if time.Now().After(deadline) {
			t.Fatalf("the added server never ran: %+v", p.Statuses())
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.Stop()
	select {
	case <-waited:
	case <-time.After(time.Minute):
		t.Fatal("Wait did not return after Stop")
	}
}

// TestPoolSetBeforeStart: a mount change before the pool starts (the
// endpoint follows its record from its build) neither closes the first
// round twice nor leaves it open: a pool that gains its first server, and
// one that loses every server, both end their first round.
func TestPoolSetBeforeStart(t *testing.T) {
	t.Parallel()
	gone := func(name string) mount.Resolved { return server(name, filepath.Join(t.TempDir(), "no-such-server")) }
	for name, c := range map[string]struct{ from, to []mount.Resolved }{
		"gains one": {nil, []mount.Resolved{gone("a")}},
		"loses all": {[]mount.Resolved{gone("a")}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := NewPool(c.from, &reconciles{}, Options{})
			p.Set(c.to)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p.Start(ctx)
			select {
			case <-p.FirstRound():
			case <-time.After(time.Minute):
				t.Fatal("the first round never ended")
			}
			cancel()
			p.Wait()
		})
	}
}
