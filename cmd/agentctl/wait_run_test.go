package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// runIDRE finds the run id in `instance run`'s narration.
var runIDRE = regexp.MustCompile(`agentctl: run ([0-9a-z]{26}) of instance `)

// bgWait is `agentctl instance wait args...` started in the background;
// its result comes on the channel once it ends.
func (e *rcEnv) bgWait(ctx context.Context, args ...string) <-chan rcResult {
	ch := make(chan rcResult, 1)
	go func() { ch <- e.run(ctx, append([]string{"instance", "wait"}, args...)...) }()
	return ch
}

// TestWaitIsAboutARun: every run gets an id, told as it starts and kept in
// last_run and in its events; `instance wait` is about the latest run (an
// earlier run's done never answers for a later one), --run about a given
// run, --next about the next one; -o json tells the run on stderr.
func TestWaitIsAboutARun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	rec := e.create(ctx, "--agent", "opencode")
	path := fakeClientOnPath(t, "opencode")

	// Run 1 ends done; its id is told on stderr and is last_run's.
	res, _ := e.runWithFake(ctx, path, nil, "instance", "run", rec.ID, "--prompt", "one")
	m := runIDRE.FindStringSubmatch(res.stderr)
	if res.code != 0 || m == nil {
		t.Fatalf("run 1: want exit 0 and its id on stderr\n%s", res)
	}
	run1 := m[1]
	var shown struct {
		LastRun struct {
			ID string `json:"id"`
		} `json:"last_run"`
	}
	if err := json.Unmarshal([]byte(e.mustRun(ctx, "instance", "show", rec.ID, "-o", "json")), &shown); err != nil || shown.LastRun.ID != run1 {
		t.Fatalf("instance show: last_run.id %q (%v), want %s", shown.LastRun.ID, err, run1)
	}
	// A run that ended before the wait is answered at once.
	if w := e.run(ctx, "instance", "wait", rec.ID, "--timeout", "2m"); w.code != 0 || !strings.Contains(w.stderr, "run "+run1+" ended done") {
		t.Fatalf("wait after run 1: want exit 0 naming run 1\n%s", w)
	}

	// Run 2 is under way, and will fail.
	cmd, _, stderr := startWaitingRun(ctx, t, e, path, rec.ID)
	waitRunStart(ctx, t, e, rec.ID, stderr)
	m = runIDRE.FindStringSubmatch(stderr.String())
	if m == nil || m[1] == run1 {
		t.Fatalf("run 2's id: %q\n%s", m, stderr.String())
	}
	run2 := m[1]
	latest := e.bgWait(ctx, rec.ID, "--timeout", "2m")
	byStatus := e.bgWait(ctx, rec.ID, "--status", "done", "--timeout", "2m")
	next := e.bgWait(ctx, rec.ID, "--next", "--timeout", "2m")
	// The earlier run is still answered for by its id, while run 2 runs.
	if w := e.run(ctx, "instance", "wait", rec.ID, "--run", run1); w.code != 0 || !strings.Contains(w.stderr, "run "+run1+" ended done") {
		t.Fatalf("wait --run run1 during run 2\n%s", w)
	}
	if w := e.run(ctx, "instance", "wait", rec.ID, "--run", "01k00000000000000000000000"); w.code != ExitNotFound || !strings.Contains(w.stderr, `run "01k00000000000000000000000" not found`) {
		t.Fatalf("wait --run of no run: want exit 3\n%s", w)
	}
	select {
	case w := <-latest:
		t.Fatalf("wait for the latest run returned while run 2 runs\n%s", w)
	case w := <-byStatus:
		t.Fatalf("wait --status done returned while run 2 runs\n%s", w)
	default:
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatalf("run 2 ended 0, want the client's 143\n%s", stderr.String())
	}
	for name, ch := range map[string]<-chan rcResult{"wait": latest, "wait --status done": byStatus} {
		if w := <-ch; w.code != ExitFailed || !strings.Contains(w.stderr, "reported failed") {
			t.Errorf("%s during run 2: want exit 6 once run 2 failed\n%s", name, w)
		}
	}
	if w := e.run(ctx, "instance", "wait", rec.ID, "--run", run2); w.code != ExitFailed || !strings.Contains(w.stderr, "(run "+run2+")") {
		t.Errorf("wait --run run2 after it: want exit 6 naming it\n%s", w)
	}

	// --next, started during run 2, is about run 3; -o json tells the run
	// on stderr as JSON, stdout staying the client's.
	res, _ = e.runWithFake(ctx, path, nil, "instance", "run", rec.ID, "--prompt", "three", "-o", "json")
	if res.code != 0 {
		t.Fatalf("run 3\n%s", res)
	}
	var started, ended struct {
		Event      string `json:"event"`
		InstanceID string `json:"instance_id"`
		Instance   string `json:"instance"`
		ID         string `json:"id"`
		PID        int    `json:"pid"`
		Status     string `json:"status"`
		ExitCode   *int   `json:"exit_code"`
	}
	var lines []string
	for _, l := range strings.Split(res.stderr, "\n") {
		if strings.HasPrefix(l, `{"event":`) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &started) != nil || json.Unmarshal([]byte(lines[1]), &ended) != nil {
		t.Fatalf("run -o json: want two JSON lines on stderr\n%s", res)
	}
	if started.Event != "started" || started.InstanceID != rec.ID || ended.InstanceID != rec.ID || started.Instance != rec.ID || started.ID == "" || started.ID == run2 || started.PID == 0 ||
		ended.Event != "ended" || ended.ID != started.ID || ended.Status != "done" || ended.ExitCode == nil || *ended.ExitCode != 0 {
		t.Fatalf("run -o json lines:\n%s", strings.Join(lines, "\n"))
	}
	if strings.Contains(res.stdout, `"event"`) {
		t.Errorf("run -o json wrote its JSON on stdout:\n%s", res.stdout)
	}
	if w := <-next; w.code != 0 || !strings.Contains(w.stderr, "run "+started.ID+" ended done") {
		t.Errorf("wait --next during run 2: want run 3's done\n%s", w)
	}

	// The events carry their run.
	byRun := map[string][]string{}
	for _, ev := range e.events(ctx, rec.ID) {
		byRun[ev.RunID] = append(byRun[ev.RunID], ev.Status)
	}
	for id, want := range map[string]string{run1: "running done", run2: "running failed", started.ID: "running done"} {
		if got := strings.Join(byRun[id], " "); got != want {
			t.Errorf("events of run %s: %q, want %q (all: %v)", id, got, want, byRun)
		}
	}
}
