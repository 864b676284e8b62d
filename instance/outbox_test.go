package instance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/agentctl/agentctl/mcpserver/mount"
)

// recordingNotifier remembers the ids each write enqueued.
type recordingNotifier struct {
	mu  sync.Mutex
	ids [][]string
}

func (n *recordingNotifier) Enqueued(_ *instance.Store, ids []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ids = append(n.ids, ids)
}

func (n *recordingNotifier) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Concat(n.ids...)
}

const plantedSecret = "plantedSecretValue-4711"

// notifyScenario runs the writes that make every event against st, whose
// targets are "all" (every event), "runs" (run_started, run_ended) and
// "failures" (failed), and checks what each target's outbox rows say.
func notifyScenario(t *testing.T, st *instance.Store, rec *instance.Record, rn *recordingNotifier) {
	t.Helper()
	ctx := context.Background()
	q, err := st.AddQuestion(ctx, rec.ID, "Ship it?", []string{"yes", "no"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Answer(ctx, rec.ID, q.ID, "YES", false); err != nil {
		t.Fatal(err)
	}
	free, _ := st.AddQuestion(ctx, rec.ID, "Password?", nil)
	// Through AnswerRef, as `instance answer` answers: free text to a
	// question, which it would answer in one statement if nobody were
	// notified of answers.
	if _, err := st.AnswerRef(ctx, rec.ID, free.ID, "hunter2", true); err != nil {
		t.Fatal(err)
	}
	// A run that fails by its exit code.
	run := instance.Run{ID: st.NewRunID(), Program: "claude", Mode: instance.RunHeadless, PID: 42, StartedAt: time.Now().UTC()}
	seq, err := st.StartRun(ctx, rec.ID, run, instance.Event{Tool: instance.RunTool, Status: instance.StatusRunning, Message: "started claude"})
	if err != nil {
		t.Fatal(err)
	}
	end, code := time.Now().UTC(), 3
	run.EndedAt, run.ExitCode = &end, &code
	if _, err := st.EndRun(ctx, rec.ID, seq, run, instance.Event{Tool: instance.RunTool, Status: instance.StatusFailed, Message: "claude exited with code 3"}); err != nil {
		t.Fatal(err)
	}
	// A run whose model reports its own failure, then exits 0: its word stands.
	run2 := instance.Run{ID: st.NewRunID(), Program: "claude", Mode: instance.RunHeadless, StartedAt: time.Now().UTC()}
	seq2, err := st.StartRun(ctx, rec.ID, run2, instance.Event{Tool: instance.RunTool, Status: instance.StatusRunning, Message: "started claude"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecordProgress(ctx, rec.ID, "report_progress_agentctl", instance.StatusRunning, "half way", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecordProgress(ctx, rec.ID, "report_progress_agentctl", instance.StatusFailed, "the tests do not pass", nil); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordUnanswered(ctx, rec.ID, "ask_user_question_agentctl", "nobody answered"); err != nil {
		t.Fatal(err)
	}
	zero := 0
	run2.EndedAt, run2.ExitCode = &end, &zero
	if added, err := st.EndRun(ctx, rec.ID, seq2, run2, instance.Event{Tool: instance.RunTool, Status: instance.StatusDone, Message: "claude exited with code 0"}); err != nil || added {
		t.Fatalf("end of run 2: added %v, %v", added, err)
	}

	rows, err := st.Outbox(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(rows) // oldest first
	byTarget := map[string][]string{}
	payloads := map[string][]instance.Notification{}
	for _, r := range rows {
		if r.Status != instance.OutboxPending || r.Attempts != 0 || r.InstanceID != rec.ID {
			t.Errorf("new row %+v", r)
		}
		var n instance.Notification
		if err := json.Unmarshal(r.Payload, &n); err != nil {
			t.Fatal(err)
		}
		if n.ID != r.ID || n.Event != r.Event || n.Instance.ID != rec.ID || n.Instance.Agent != rec.Agent || n.Instance.Name != rec.Name ||
			n.Instance.Host != rec.Host || n.Instance.Workspace != rec.Workspace {
			t.Errorf("row %s: payload %s", r.ID, r.Payload)
		}
		if n.Link != "https://agents.example.com/ui/instances/"+rec.ID {
			t.Errorf("link %q", n.Link)
		}
		if strings.Contains(string(r.Payload), plantedSecret) || strings.Contains(string(r.Payload), "hunter2") ||
			(rec.NewToken() != "" && strings.Contains(string(r.Payload), rec.NewToken())) {
			t.Errorf("payload carries a secret: %s", r.Payload)
		}
		byTarget[r.Target] = append(byTarget[r.Target], r.Event)
		payloads[r.Target] = append(payloads[r.Target], n)
	}
	want := map[string][]string{
		"https://all.example/hook":      {"question", "answered", "question", "answered", "run_started", "failed", "run_started", "failed", "run_ended"},
		"https://runs.example/hook":     {"run_started", "run_ended", "run_started", "run_ended"},
		"https://failures.example/hook": {"failed", "failed"},
	}
	for target, events := range want {
		if !slices.Equal(byTarget[target], events) {
			t.Errorf("%s got %v, want %v", target, byTarget[target], events)
		}
	}
	if t.Failed() {
		return
	}
	all := payloads["https://all.example/hook"]
	if q := all[0].Question; q == nil || q.Text != "Ship it?" || !slices.Equal(q.Choices, []string{"yes", "no"}) || q.Answer != "" {
		t.Errorf("question: %+v", q)
	}
	if q := all[1].Question; q == nil || q.Answer != "yes" || q.AnsweredAt == nil {
		t.Errorf("answered with a choice: %+v", q)
	}
	if q := all[3].Question; q == nil || q.Answer != "" || q.Text != "Password?" {
		t.Errorf("answered in free text: %+v", q)
	}
	if r := all[4].Run; r == nil || r.ID != run.ID || r.Mode != instance.RunHeadless || r.Status != instance.StatusRunning || r.StartedAt == nil {
		t.Errorf("run_started: %+v", r)
	}
	if r := all[5].Run; r == nil || r.ID != run.ID || r.Status != instance.StatusFailed || r.ExitCode == nil || *r.ExitCode != 3 || r.Message != "claude exited with code 3" {
		t.Errorf("failed run: %+v", r)
	}
	if p := all[7].Progress; p == nil || p.Message != "the tests do not pass" || all[7].Run == nil || all[7].Run.ID != run2.ID {
		t.Errorf("failure reported: %+v %+v", p, all[7].Run)
	}
	if r := all[8].Run; r == nil || r.Status != instance.StatusFailed || r.Message != "the tests do not pass" || *r.ExitCode != 0 {
		t.Errorf("end of a run whose model reported failed: %+v", r)
	}
	if runs := payloads["https://runs.example/hook"]; runs[1].Run.Status != instance.StatusFailed {
		t.Errorf("run_ended of a failed run to a target without failed: %+v", runs[1].Run)
	}
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	got := rn.all()
	slices.Sort(got)
	slices.Sort(ids)
	if !slices.Equal(got, ids) {
		t.Errorf("the notifier was told of %v, the outbox has %v", got, ids)
	}
}

// notifyTargets are the scenario's targets.
func notifyTargets(rn *recordingNotifier) *instance.Notify {
	return &instance.Notify{BaseURL: "https://agents.example.com/", Notifier: rn, Targets: []instance.NotifyTarget{
		{URL: "https://all.example/hook"},
		{URL: "https://runs.example/hook", Events: []string{instance.NotifyRunStarted, instance.NotifyRunEnded}},
		{URL: "https://failures.example/hook", Events: []string{instance.NotifyFailed}},
	}}
}

func withSecretMount(o *instance.CreateOptions) {
	o.Name = "fix-login"
	o.Mounts = []mount.Resolved{{Mount: mount.Mount{Kind: mount.KindServer, Name: "web", Command: "/bin/true",
		Env: map[string]string{"API_KEY": plantedSecret}, Headers: nil}, EffectivePrefix: "web"}}
}

// TestOutboxNotifyEvents: each write that makes an event enqueues, with it,
// one row per target that takes the event, saying what the event was and
// nothing secret; a failed run is one notification per target.
func TestOutboxNotifyEvents(t *testing.T) {
	rn := &recordingNotifier{}
	st, err := instance.Open(context.Background(), t.TempDir(), instance.WithNotify(notifyTargets(rn)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec := create(t, st, "claude-code", withSecretMount)
	notifyScenario(t, st, rec, rn)
}

// TestOutboxNotifyNothingWithoutTargets: a store without targets enqueues
// nothing.
func TestOutboxNotifyNothingWithoutTargets(t *testing.T) {
	st := openStore(t)
	if st.Notifying() != nil {
		t.Fatal("a store without WithNotify notifies")
	}
	instance.WithNotify(&instance.Notify{})(st) // no targets: nothing
	if st.Notifying() != nil {
		t.Fatal("a store without targets notifies")
	}
	rec := create(t, st, "auggie", nil)
	ctx := context.Background()
	q, _ := st.AddQuestion(ctx, rec.ID, "?", nil)
	if _, err := st.Answer(ctx, rec.ID, q.ID, "x", false); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecordProgress(ctx, rec.ID, "t", instance.StatusFailed, "no", nil); err != nil {
		t.Fatal(err)
	}
	if rows, _ := st.Outbox(ctx, 0); len(rows) != 0 {
		t.Fatalf("outbox %+v", rows)
	}
}

// TestOutboxNotifyNotForAFailedWrite: a write that fails enqueues nothing.
func TestOutboxNotifyNotForAFailedWrite(t *testing.T) {
	rn := &recordingNotifier{}
	st, err := instance.Open(context.Background(), t.TempDir(), instance.WithNotify(notifyTargets(rn)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if _, err := st.AddQuestion(ctx, "01jnosuchinstance0000000000", "?", nil); err == nil {
		t.Fatal("a question for no instance was stored")
	}
	rec := create(t, st, "auggie", nil)
	q, _ := st.AddQuestion(ctx, rec.ID, "?", []string{"a"})
	if _, err := st.Answer(ctx, rec.ID, q.ID, "b", false); err == nil {
		t.Fatal("a wrong choice was taken")
	}
	rows, _ := st.Outbox(ctx, 0)
	if len(rows) != 1 || rows[0].Event != instance.NotifyQuestion || len(rn.all()) != 1 {
		t.Fatalf("outbox %+v, told %v", rows, rn.all())
	}
}

// TestOutboxClaimLease: a claimed row is nobody else's until its lease
// runs out, then due again under the same id; delivered and given-up rows
// are never claimed again, and a late failure does not undo a delivery.
func TestOutboxClaimLease(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	rn := &recordingNotifier{}
	n := &instance.Notify{Notifier: rn, Targets: []instance.NotifyTarget{{URL: "https://a.example/"}, {URL: "https://b.example/"}}}
	st, err := instance.Open(context.Background(), t.TempDir(), instance.WithClock(clock), instance.WithNotify(n))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	rec := create(t, st, "auggie", nil)
	if _, err := st.AddQuestion(ctx, rec.ID, "?", nil); err != nil {
		t.Fatal(err)
	}
	ids := rn.all()
	if len(ids) != 2 {
		t.Fatalf("ids %v", ids)
	}
	a := []string{"https://a.example/"}
	claim := func(o instance.ClaimOptions) []*instance.OutboxRow {
		t.Helper()
		o.Lease = time.Minute
		rows, err := st.ClaimOutbox(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	got := claim(instance.ClaimOptions{IDs: ids, Targets: a})
	if len(got) != 1 || got[0].Target != a[0] || got[0].Attempts != 1 || !got[0].NextAt.Equal(now.Add(time.Minute)) {
		t.Fatalf("claim of a's rows: %+v", got)
	}
	id := got[0].ID
	if again := claim(instance.ClaimOptions{IDs: ids, Targets: a}); len(again) != 0 {
		t.Fatalf("claimed twice within the lease: %+v", again)
	}
	if due, _ := st.OutboxDue(ctx, a); due {
		t.Fatal("due within the lease")
	}
	advance(time.Minute)
	again := claim(instance.ClaimOptions{Targets: a})
	if len(again) != 1 || again[0].ID != id || again[0].Attempts != 2 {
		t.Fatalf("after the lease: %+v", again)
	}
	if err := st.OutboxRetry(ctx, id, now.Add(10*time.Second), "HTTP 500"); err != nil {
		t.Fatal(err)
	}
	advance(10 * time.Second)
	if due, _ := st.OutboxDue(ctx, a); !due {
		t.Fatal("not due after its backoff")
	}
	third := claim(instance.ClaimOptions{Targets: a})
	if len(third) != 1 || third[0].Attempts != 3 || third[0].LastError != "HTTP 500" {
		t.Fatalf("the retry: %+v", third)
	}
	if err := st.OutboxDelivered(ctx, id); err != nil {
		t.Fatal(err)
	}
	// A late deliverer's failure does not undo the delivery.
	if err := st.OutboxRetry(ctx, id, now, "late"); err != nil {
		t.Fatal(err)
	}
	advance(time.Hour)
	if got := claim(instance.ClaimOptions{Targets: a}); len(got) != 0 {
		t.Fatalf("a delivered row was claimed: %+v", got)
	}
	rows, _ := st.Outbox(ctx, 0)
	for _, r := range rows {
		if r.ID == id && (r.Status != instance.OutboxDelivered || r.DeliveredAt == nil || r.LastError != "" || r.Attempts != 3) {
			t.Errorf("delivered row %+v", r)
		}
	}
	// b's row: nobody delivered it; it is given up, then pruned.
	if n, err := st.ExpireOutbox(ctx, now.Add(-30*time.Minute), "nobody"); err != nil || n != 1 {
		t.Fatalf("expire: %d %v", n, err)
	}
	rows, _ = st.Outbox(ctx, 0)
	for _, r := range rows {
		if r.Target == "https://b.example/" && (r.Status != instance.OutboxFailed || r.LastError != "nobody") {
			t.Errorf("expired row %+v", r)
		}
	}
	if n, err := st.PruneOutbox(ctx, now.Add(time.Second)); err != nil || n != 2 {
		t.Fatalf("prune: %d %v", n, err)
	}
}

// supersedeScenario: a question's notification whose question was
// answered, expired or cancelled, or whose instance was deleted, before it
// was sent is superseded, and no longer claimed; an open question's is
// sent, as is every other event's.
func supersedeScenario(t *testing.T, st *instance.Store) {
	t.Helper()
	ctx := context.Background()
	rec := create(t, st, "auggie", nil)
	gone := create(t, st, "auggie", nil)
	ask := func(rec *instance.Record, text string) *instance.Question {
		t.Helper()
		q, err := st.AddQuestion(ctx, rec.ID, text, nil)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	answered, expired, cancelled, open, deleted := ask(rec, "answered?"), ask(rec, "expired?"), ask(rec, "cancelled?"), ask(rec, "open?"), ask(gone, "deleted?")
	if _, err := st.Answer(ctx, rec.ID, answered.ID, "yes", false); err != nil {
		t.Fatal(err)
	}
	if ok, err := st.ExpireQuestion(ctx, rec.ID, expired.ID); err != nil || !ok {
		t.Fatalf("expire: %v %v", ok, err)
	}
	if ok, err := st.CancelQuestion(ctx, rec.ID, cancelled.ID); err != nil || !ok {
		t.Fatalf("cancel: %v %v", ok, err)
	}
	if _, err := st.Delete(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	rows, err := st.Outbox(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ // question id → why
		answered.ID: "the question was answered", expired.ID: "the question expired", cancelled.ID: "the question was cancelled",
		deleted.ID: "instance was deleted", open.ID: "",
	}
	superseded := map[string]bool{}
	for _, r := range rows {
		if r.InstanceID != rec.ID && r.InstanceID != gone.ID {
			continue // an earlier scenario's
		}
		var n instance.Notification
		if err := json.Unmarshal(r.Payload, &n); err != nil {
			t.Fatal(err)
		}
		why, err := st.OutboxSupersede(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if r.Event != instance.NotifyQuestion {
			if why != "" {
				t.Errorf("%s row superseded: %s", r.Event, why)
			}
			continue
		}
		w := want[n.Question.ID]
		if (w == "") != (why == "") || !strings.Contains(why, w) {
			t.Errorf("question %q: superseded %q, want %q", n.Question.Text, why, w)
		}
		if why != "" {
			superseded[r.ID] = true
		}
	}
	if len(superseded) != 4 {
		t.Errorf("%d rows superseded, want 4", len(superseded))
	}
	// A late delivery does not undo it; nobody claims it again.
	for id := range superseded {
		if err := st.OutboxDelivered(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	claimed, err := st.ClaimOutbox(ctx, instance.ClaimOptions{Targets: []string{"https://all.example/hook"}, Limit: 100, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range claimed {
		if superseded[r.ID] {
			t.Errorf("a superseded row was claimed: %+v", r)
		}
	}
	rows, _ = st.Outbox(ctx, 0)
	for _, r := range rows {
		if superseded[r.ID] && (r.Status != instance.OutboxSuperseded || !strings.HasPrefix(r.LastError, "not sent: ") || r.DeliveredAt != nil) {
			t.Errorf("superseded row %+v", r)
		}
	}
}

// TestOutboxQuestionSuperseded: see supersedeScenario.
func TestOutboxQuestionSuperseded(t *testing.T) {
	st, err := instance.Open(context.Background(), t.TempDir(), instance.WithNotify(notifyTargets(&recordingNotifier{})))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	supersedeScenario(t, st)
}

// claimRace has many claimers (stores: processes) take a store's due rows
// at once, and checks that each row was claimed exactly once.
func claimRace(t *testing.T, stores []*instance.Store, rec *instance.Record, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		if _, err := stores[0].AddQuestion(ctx, rec.ID, fmt.Sprint("q", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	targets := []string{"https://a.example/"}
	var mu sync.Mutex
	claimed := map[string]int{}
	var wg sync.WaitGroup
	for w := range 8 {
		st := stores[w%len(stores)]
		wg.Go(func() {
			for {
				rows, err := st.ClaimOutbox(ctx, instance.ClaimOptions{Targets: targets, Limit: 3, Lease: time.Hour})
				if err != nil {
					t.Error(err)
					return
				}
				if len(rows) == 0 {
					return
				}
				mu.Lock()
				for _, r := range rows {
					claimed[r.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(claimed) != n {
		t.Errorf("%d rows claimed, want %d", len(claimed), n)
	}
	for id, c := range claimed {
		if c != 1 {
			t.Errorf("row %s claimed %d times", id, c)
		}
	}
}

func TestOutboxConcurrentClaims(t *testing.T) {
	dir := t.TempDir()
	n := &instance.Notify{Targets: []instance.NotifyTarget{{URL: "https://a.example/"}}}
	var stores []*instance.Store
	for range 3 {
		st, err := instance.Open(context.Background(), dir, instance.WithNotify(n))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		stores = append(stores, st)
	}
	claimRace(t, stores, create(t, stores[0], "auggie", nil), 40)
}

// TestOutboxNotifyPostgres: the same on PostgreSQL: the events' rows, and
// claims by several stores (as by several hosts) at once.
func TestOutboxNotifyPostgres(t *testing.T) {
	p := testkit.SharedPostgres(t)
	url := instance.StoreURL(p.NewDatabase(t))
	rn := &recordingNotifier{}
	st, err := instance.Open(context.Background(), t.TempDir(), instance.WithStore(url), instance.WithNotify(notifyTargets(rn)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec := create(t, st, "claude-code", withSecretMount)
	notifyScenario(t, st, rec, rn)

	n := &instance.Notify{Targets: []instance.NotifyTarget{{URL: "https://a.example/"}}}
	var stores []*instance.Store
	for range 3 {
		s, err := instance.Open(context.Background(), t.TempDir(), instance.WithStore(url), instance.WithNotify(n))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores = append(stores, s)
	}
	claimRace(t, stores, rec, 40)
	supersedeScenario(t, st)
}
