package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/cmd/internal/notify"
	"github.com/agentctl/agentctl/instance"
)

// receiver is a webhook receiver: it records each request, verifies its
// signature, and answers with the statuses it is given in turn (then 200).
type receiver struct {
	*httptest.Server
	secret string

	mu       sync.Mutex
	reqs     []received
	statuses []int
	hold     time.Duration
	got      chan struct{}
}

type received struct {
	delivery, event, signature, contentType string
	body                                    []byte
	signedOK                                bool
}

func newReceiver(t *testing.T, secret string, statuses ...int) *receiver {
	r := &receiver{secret: secret, statuses: statuses, got: make(chan struct{}, 100)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		rc := received{delivery: req.Header.Get(notify.HeaderDelivery), event: req.Header.Get(notify.HeaderEvent),
			signature: req.Header.Get(notify.HeaderSignature), contentType: req.Header.Get("Content-Type"), body: body}
		rc.signedOK = secret != "" && rc.signature == notify.Sign(secret, body)
		r.mu.Lock()
		r.reqs = append(r.reqs, rc)
		status := http.StatusOK
		if len(r.statuses) > 0 {
			status, r.statuses = r.statuses[0], r.statuses[1:]
		}
		hold := r.hold
		r.mu.Unlock()
		r.got <- struct{}{}
		if hold > 0 {
			select {
			case <-time.After(hold):
			case <-req.Context().Done():
			}
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, http.StatusText(status))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

// waitFor waits until cond holds of the store's outbox.
func waitFor(t *testing.T, st *instance.Store, what string, cond func([]*instance.OutboxRow) bool) []*instance.OutboxRow {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		rows, err := st.Outbox(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if cond(rows) {
			return rows
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: never; the outbox: %+v", what, rows)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// newStore opens a store whose notifications d delivers, with an instance.
func newStore(t *testing.T, d *notify.Deliverer) (*instance.Store, *instance.Record) {
	t.Helper()
	ctx := context.Background()
	st, err := instance.Open(ctx, t.TempDir(), instance.WithNotify(d.Notify("https://agents.example.com")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cat, err := agents.Load(agents.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	def, err := cat.Lookup("auggie")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.CreateInstance(ctx, instance.CreateOptions{Definition: def, Name: "fix-login", Workspace: t.TempDir(), Executable: "/opt/agentctl"})
	if err != nil {
		t.Fatal(err)
	}
	return st, rec
}

// fast are options for tests: short waits, but a write waits long for its
// own deliveries, as a loaded machine may need (they end as soon as sent).
func fast() notify.Options {
	return notify.Options{Backoff: 20 * time.Millisecond, Poll: 20 * time.Millisecond, Lease: 500 * time.Millisecond, Wait: 15 * time.Second}
}

// TestNotifySignature: a question's notification is sent at once by the
// process that stored it, signed: the receiver verifies the HMAC of the
// body it got, and the delivery id is the body's.
func TestNotifySignature(t *testing.T) {
	const secret = "s3cret"
	r := newReceiver(t, secret)
	d := notify.New([]notify.Target{{URL: r.URL + "/hook?token=abc", Format: notify.FormatJSON, Secret: secret}}, fast())
	st, rec := newStore(t, d)
	asked := time.Now()
	q, err := st.AddQuestion(context.Background(), rec.ID, "Ship it?", []string{"yes", "no"})
	if err != nil {
		t.Fatal(err)
	}
	// No Run loop: AddQuestion delivered before it returned (the count
	// below); how long that took is only logged, as a machine may be slow.
	if took := time.Since(asked); took > time.Second {
		t.Logf("the question took %s to store and deliver", took)
	}
	reqs := r.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	got := reqs[0]
	if !got.signedOK {
		t.Errorf("signature %q does not verify", got.signature)
	}
	if !strings.HasPrefix(got.signature, "sha256=") || got.contentType != "application/json" || got.event != instance.NotifyQuestion {
		t.Errorf("headers: %+v", got)
	}
	var n instance.Notification
	if err := json.Unmarshal(got.body, &n); err != nil {
		t.Fatal(err)
	}
	if n.ID != got.delivery || n.Event != "question" || n.Question == nil || n.Question.ID != q.ID || n.Question.Text != "Ship it?" ||
		n.Instance.Name != "fix-login" || n.Link != "https://agents.example.com/ui/instances/"+rec.ID {
		t.Errorf("body %s", got.body)
	}
	if got.signature == notify.Sign("wrong", got.body) {
		t.Error("a wrong secret verifies")
	}
	rows := waitFor(t, st, "delivered", func(rows []*instance.OutboxRow) bool {
		return len(rows) == 1 && rows[0].Status == instance.OutboxDelivered
	})
	if rows[0].ID != got.delivery || rows[0].Attempts != 1 {
		t.Errorf("row %+v", rows[0])
	}
}

// TestNotifyRetryAfter500: a receiver that fails twice gets the
// notification a third time, with the same delivery id; the attempts are
// recorded, and the last error until it is delivered.
func TestNotifyRetryAfter500(t *testing.T) {
	r := newReceiver(t, "k", 500, 503)
	d := notify.New([]notify.Target{{URL: r.URL, Format: notify.FormatJSON, Secret: "k"}}, fast())
	st, rec := newStore(t, d)
	if _, err := st.AddQuestion(context.Background(), rec.ID, "?", nil); err != nil {
		t.Fatal(err)
	}
	rows, _ := st.Outbox(context.Background(), 0)
	if len(rows) != 1 || rows[0].Status != instance.OutboxPending || rows[0].Attempts != 1 || !strings.Contains(rows[0].LastError, "HTTP 500") {
		t.Fatalf("after the first attempt: %+v", rows)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx, st) }()
	defer func() { cancel(); <-done }()
	rows = waitFor(t, st, "delivered", func(rows []*instance.OutboxRow) bool { return rows[0].Status == instance.OutboxDelivered })
	if rows[0].Attempts != 3 || rows[0].LastError != "" || rows[0].DeliveredAt == nil {
		t.Errorf("delivered row %+v", rows[0])
	}
	reqs := r.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for _, q := range reqs {
		if q.delivery != rows[0].ID || !q.signedOK || string(q.body) != string(reqs[0].body) {
			t.Errorf("attempt %+v differs from the first", q)
		}
	}
}

// TestNotifyGivesUp: a receiver that never answers 2xx gets tries until
// the bound, then the row is failed with the last error.
func TestNotifyGivesUp(t *testing.T) {
	r := newReceiver(t, "", 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500)
	o := fast()
	o.GiveUp = 1500 * time.Millisecond // room for two tries on a loaded machine
	d := notify.New([]notify.Target{{URL: r.URL, Format: notify.FormatJSON}}, o)
	st, rec := newStore(t, d)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx, st) }()
	defer func() { cancel(); <-done }()
	if _, err := st.AddQuestion(context.Background(), rec.ID, "?", nil); err != nil {
		t.Fatal(err)
	}
	rows := waitFor(t, st, "failed", func(rows []*instance.OutboxRow) bool {
		return len(rows) == 1 && rows[0].Status == instance.OutboxFailed
	})
	if !strings.Contains(rows[0].LastError, "gave up after") || !strings.Contains(rows[0].LastError, "HTTP 500") || rows[0].Attempts < 2 {
		t.Errorf("failed row %+v", rows[0])
	}
	if r.requests()[0].signature != "" {
		t.Error("signed without a secret")
	}
}

// TestNotifyOnlyEventsAsked: nothing is sent, or stored, for an event the
// target does not take.
func TestNotifyOnlyEventsAsked(t *testing.T) {
	r := newReceiver(t, "")
	d := notify.New([]notify.Target{{URL: r.URL, Format: notify.FormatJSON, Events: []string{instance.NotifyFailed}}}, fast())
	st, rec := newStore(t, d)
	ctx := context.Background()
	q, _ := st.AddQuestion(ctx, rec.ID, "?", nil)
	if _, err := st.Answer(ctx, rec.ID, q.ID, "x", false); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecordProgress(ctx, rec.ID, "report_progress_agentctl", instance.StatusDone, "ok", nil); err != nil {
		t.Fatal(err)
	}
	if rows, _ := st.Outbox(ctx, 0); len(rows) != 0 || len(r.requests()) != 0 {
		t.Fatalf("sent %d, outbox %+v", len(r.requests()), rows)
	}
	if _, err := st.RecordProgress(ctx, rec.ID, "report_progress_agentctl", instance.StatusFailed, "broke", nil); err != nil {
		t.Fatal(err)
	}
	if reqs := r.requests(); len(reqs) != 1 || reqs[0].event != instance.NotifyFailed {
		t.Fatalf("requests %+v", reqs)
	}
}

// TestNotifyLeaseRetrySameDelivery: a deliverer that sent but died before
// recording leaves the row to another once the lease runs out, which sends
// it again under the same delivery id: a receiver that dedups by id has
// it once. (The binary's test kills a real process: see cmd/agentctl.)
func TestNotifyLeaseRetrySameDelivery(t *testing.T) {
	r := newReceiver(t, "k")
	target := notify.Target{URL: r.URL, Format: notify.FormatJSON, Secret: "k"}
	// The first "process" stores without delivering (no Notifier), then
	// claims and sends, and dies before recording.
	st, rec := newStore(t, notify.New([]notify.Target{target}, fast()))
	n := st.Notifying()
	instance.WithNotify(&instance.Notify{Targets: n.Targets, BaseURL: n.BaseURL})(st)
	ctx := context.Background()
	if _, err := st.AddQuestion(ctx, rec.ID, "?", nil); err != nil {
		t.Fatal(err)
	}
	claimed, err := st.ClaimOutbox(ctx, instance.ClaimOptions{Targets: []string{r.URL}, Lease: 300 * time.Millisecond})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %+v", err, claimed)
	}
	if _, err := (notify.Sender{}).Send(ctx, target, claimed[0].ID, claimed[0].Event, claimed[0].Payload); err != nil {
		t.Fatal(err)
	}
	// The second process delivers the due rows.
	d2 := notify.New([]notify.Target{target}, fast())
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); d2.Run(runCtx, st) }()
	defer func() { cancel(); <-done }()
	rows := waitFor(t, st, "delivered", func(rows []*instance.OutboxRow) bool { return rows[0].Status == instance.OutboxDelivered })
	reqs := r.requests()
	distinct := map[string]bool{}
	for _, q := range reqs {
		distinct[q.delivery] = true
	}
	if len(reqs) != 2 || len(distinct) != 1 || !distinct[rows[0].ID] || rows[0].Attempts != 2 {
		t.Fatalf("requests %+v; row %+v", reqs, rows[0])
	}
}

// TestNotifyWaitIsBounded: a write waits for its own deliveries at most
// Options.Wait, then leaves the row in the outbox, due again.
func TestNotifyWaitIsBounded(t *testing.T) {
	r := newReceiver(t, "")
	r.hold = 10 * time.Second
	o := fast()
	o.Wait = 200 * time.Millisecond
	d := notify.New([]notify.Target{{URL: r.URL, Format: notify.FormatJSON}}, o)
	st, rec := newStore(t, d)
	start := time.Now()
	if _, err := st.AddQuestion(context.Background(), rec.ID, "?", nil); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the write waited %s", took)
	}
	rows, _ := st.Outbox(context.Background(), 0)
	if len(rows) != 1 || rows[0].Status != instance.OutboxPending || !strings.Contains(rows[0].LastError, "stopped waiting") {
		t.Fatalf("outbox %+v", rows)
	}
}

// runUntil starts d's Run loop on st, and returns once it takes the rows
// this process enqueues; stop ends it and returns when Run did.
func runUntil(t *testing.T, d *notify.Deliverer, st *instance.Store) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx, st) }()
	for deadline := time.Now().Add(15 * time.Second); d.Running() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Run never started")
		}
	}
	return func() { cancel(); <-done }
}

// TestNotifyRunStopDeliversOwnRows: a notification enqueued just before
// the Run loop stops is sent all the same, within Options.Wait, as a CLI
// command's is: a headless run's mcp serve ends right after the model
// reports failed, and no other process may run to send it. Past the wait
// the stop does not wait longer, and the row stays in the outbox.
func TestNotifyRunStopDeliversOwnRows(t *testing.T) {
	r := newReceiver(t, "")
	r.hold = 300 * time.Millisecond // the send is under way at the stop
	d := notify.New([]notify.Target{{URL: r.URL, Format: notify.FormatJSON}}, fast())
	st, rec := newStore(t, d)
	stop := runUntil(t, d, st)
	if _, err := st.RecordProgress(context.Background(), rec.ID, "report_progress_agentctl", instance.StatusFailed, "broke", nil); err != nil {
		t.Fatal(err)
	}
	stop()
	rows, _ := st.Outbox(context.Background(), 0)
	if reqs := r.requests(); len(rows) != 1 || rows[0].Status != instance.OutboxDelivered || len(reqs) != 1 || reqs[0].event != instance.NotifyFailed {
		t.Fatalf("after the stop: %d requests, outbox %s; want the failed notification delivered", len(reqs), outboxText(rows))
	}

	r2 := newReceiver(t, "")
	r2.hold = time.Minute
	o := fast()
	o.Wait = 200 * time.Millisecond
	d = notify.New([]notify.Target{{URL: r2.URL, Format: notify.FormatJSON}}, o)
	st, rec = newStore(t, d)
	stop = runUntil(t, d, st)
	if _, err := st.RecordProgress(context.Background(), rec.ID, "report_progress_agentctl", instance.StatusFailed, "broke", nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	stop()
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the stop waited %s for a receiver that does not answer; want about Options.Wait", took)
	}
	rows, _ = st.Outbox(context.Background(), 0)
	if len(rows) != 1 || rows[0].Status != instance.OutboxPending {
		t.Fatalf("outbox %s; want the row pending", outboxText(rows))
	}
}

// outboxText is rows as a failure shows them.
func outboxText(rows []*instance.OutboxRow) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "[%s %s attempts %d: %s]", r.Event, r.Status, r.Attempts, r.LastError)
	}
	return b.String()
}

// TestNotifyAnsweredQuestionNotSent: a question's notification that
// waits for a retry (its receiver failed) is not sent once the question
// is answered: the receiver got the answer, and would get, after it, a
// question nobody need answer. notify log says why.
func TestNotifyAnsweredQuestionNotSent(t *testing.T) {
	r := newReceiver(t, "", http.StatusServiceUnavailable)
	d := notify.New([]notify.Target{{URL: r.URL, Format: notify.FormatJSON}}, fast())
	st, rec := newStore(t, d)
	ctx := context.Background()
	q, err := st.AddQuestion(ctx, rec.ID, "Ship it?", nil) // 503: due again
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Answer(ctx, rec.ID, q.ID, "yes", false); err != nil {
		t.Fatal(err)
	}
	stop := runUntil(t, d, st)
	defer stop()
	rows := waitFor(t, st, "the question's row done with", func(rows []*instance.OutboxRow) bool {
		return len(rows) == 2 && rows[1].Status != instance.OutboxPending
	})
	reqs := r.requests()
	if len(reqs) != 2 || reqs[0].event != instance.NotifyQuestion || reqs[1].event != instance.NotifyAnswered ||
		rows[1].Event != instance.NotifyQuestion || rows[1].Status != instance.OutboxSuperseded || !strings.Contains(rows[1].LastError, "answered") {
		var events []string
		for _, q := range reqs {
			events = append(events, q.event)
		}
		t.Fatalf("the receiver got %v; outbox %s; want question (503), answered, and the question's row superseded", events, outboxText(rows))
	}
}

// TestNotifyRunStoppedLogsNothing: a Run loop whose context has ended
// neither sweeps nor warns (a short mcp serve logged two "context
// canceled" warnings as it ended).
func TestNotifyRunStoppedLogsNothing(t *testing.T) {
	var logs strings.Builder
	o := fast()
	o.Log = slog.New(slog.NewTextHandler(&logs, nil))
	d := notify.New([]notify.Target{{URL: "http://127.0.0.1:1/hook", Format: notify.FormatJSON}}, o)
	st, _ := newStore(t, d)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 20 { // Run's first look and the end are ready at once
		d.Run(ctx, st)
	}
	if logs.Len() > 0 {
		t.Errorf("Run on an ended context logged:\n%s", logs.String())
	}
}

// TestNotifySecretMissingLeavesRows: a process without a target's secret
// claims none of its rows.
func TestNotifySecretMissingLeavesRows(t *testing.T) {
	r := newReceiver(t, "")
	d := notify.New([]notify.Target{{URL: r.URL, Format: notify.FormatJSON, SecretErr: errors.New("NOTIFY_KEY is not set")}}, fast())
	st, rec := newStore(t, d)
	if _, err := st.AddQuestion(context.Background(), rec.ID, "?", nil); err != nil {
		t.Fatal(err)
	}
	rows, _ := st.Outbox(context.Background(), 0)
	if len(rows) != 1 || rows[0].Status != instance.OutboxPending || rows[0].Attempts != 0 || len(r.requests()) != 0 {
		t.Fatalf("outbox %+v, %d requests", rows, len(r.requests()))
	}
}

// TestNotifySlack: format slack sends a Slack message saying the same, its
// mrkdwn escaped, signed like any other.
func TestNotifySlack(t *testing.T) {
	r := newReceiver(t, "k")
	d := notify.New([]notify.Target{{URL: r.URL, Format: notify.FormatSlack, Secret: "k"}}, fast())
	st, rec := newStore(t, d)
	if _, err := st.AddQuestion(context.Background(), rec.ID, "Merge <main> & deploy?", []string{"yes", "no"}); err != nil {
		t.Fatal(err)
	}
	reqs := r.requests()
	if len(reqs) != 1 || !reqs[0].signedOK {
		t.Fatalf("requests %+v", reqs)
	}
	var msg map[string]string
	if err := json.Unmarshal(reqs[0].body, &msg); err != nil || len(msg) != 1 {
		t.Fatalf("slack body %s: %v", reqs[0].body, err)
	}
	for _, want := range []string{"*fix-login*", "Merge &lt;main&gt; &amp; deploy?", "yes · no", "agentctl instance answer " + rec.ID,
		"<https://agents.example.com/ui/instances/" + rec.ID + "|Open fix-login>"} {
		if !strings.Contains(msg["text"], want) {
			t.Errorf("slack text lacks %q:\n%s", want, msg["text"])
		}
	}
}

// TestNotifyRedact: a target URL is shown without credentials, query,
// fragment or path (a Slack webhook's path is its secret); a short hash of
// the path keeps two targets on one host apart.
func TestNotifyRedact(t *testing.T) {
	slack := notify.Redact("https://hooks.slack.com/services/T000/B000/SLACKSECRETxyz123")
	for in, want := range map[string]string{
		"https://user:pw@hooks.example.com/a/b?token=x#f": "https://hooks.example.com/…",
		"http://h:8080/p":                                              "http://h:8080/…",
		"https://hooks.example.com/x?":                                 "https://hooks.example.com/…",
		"https://hooks.example.com":                                    "https://hooks.example.com",
		"https://hooks.example.com/":                                   "https://hooks.example.com/",
		"http://bad host/SECRET?x":                                     "http://bad host/…",
		"https://hooks.slack.com/services/T000/B000/SLACKSECRETxyz123": "https://hooks.slack.com/…",
		// Mistyped: no host for url.Parse, and the secret still hidden.
		"hooks.slack.com/services/T000/B000/XXXXSECRET":         "hooks.slack.com/…",
		"https:/hooks.slack.com/services/T000/B000/XXXXSECRET":  "https:/hooks.slack.com/…",
		"https//hooks.slack.com/services/T000/B000/XXXXSECRET":  "https//hooks.slack.com/…",
		"https:hooks.slack.com/services/T000/B000/XXXXSECRET":   "https:hooks.slack.com/…",
		"user:pw@hooks.slack.com/services/T000/B000/XXXXSECRET": "hooks.slack.com/…",
		"/services/T000/B000/XXXXSECRET":                        "/services/…",
	} {
		got := notify.Redact(in)
		if !strings.HasPrefix(got, want) || strings.Contains(got, "SECRET") || strings.Contains(got, "token") || strings.Contains(got, "pw") {
			t.Errorf("Redact(%q) = %q, want %q and a hash", in, got, want)
		}
	}
	if other := notify.Redact("https://hooks.slack.com/services/T000/B000/OTHER"); other == slack || other != notify.Redact("https://hooks.slack.com/services/T000/B000/OTHER") {
		t.Errorf("two webhooks on one host: %q and %q; want them apart, each always the same", slack, other)
	}
}

// TestNotifySendErrorHidesURLSecrets: an error of a send shows the URL
// without its query, credentials or path.
func TestNotifySendErrorHidesURLSecrets(t *testing.T) {
	target := notify.Target{URL: "http://user:pw@127.0.0.1:1/services/plantedPath?token=plantedToken"}
	_, err := (notify.Sender{Client: notify.NewClient(time.Second)}).Send(context.Background(), target, "id", "question", []byte("{}"))
	if err == nil || strings.Contains(err.Error(), "planted") || strings.Contains(err.Error(), "pw") || !strings.Contains(err.Error(), notify.Redact(target.URL)) {
		t.Fatalf("error %v", err)
	}
}

func TestNotifyTargetValidate(t *testing.T) {
	for _, tc := range []struct {
		t    notify.Target
		want string
	}{
		{notify.Target{}, "url is missing"},
		{notify.Target{URL: "hooks.example.com/x"}, "url"},
		{notify.Target{URL: "ftp://h/x"}, "http:// or https://"},
		{notify.Target{URL: "https://h/x", Events: []string{"questions"}}, `events: unknown event "questions"`},
		{notify.Target{URL: "https://h/x", Format: "xml"}, `format "xml"`},
	} {
		if err := tc.t.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.t, err, tc.want)
		}
	}
	// A mistyped Slack URL is refused without its secret, which every
	// command's error would otherwise show.
	for _, u := range []string{"hooks.slack.com/services/T000/B000/XXXXSECRET", "https:/hooks.slack.com/services/T000/B000/XXXXSECRET",
		"https//hooks.slack.com/services/T000/B000/XXXXSECRET"} {
		if err := (&notify.Target{URL: u}).Validate(); err == nil || strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), "hooks.slack.com/…") {
			t.Errorf("url %q: %v, want it refused naming hooks.slack.com/… without the secret", u, err)
		}
	}
	ok := notify.Target{URL: "https://h/x", Events: []string{"question", "failed"}}
	if err := ok.Validate(); err != nil || ok.Format != notify.FormatJSON {
		t.Errorf("%+v: %v", ok, err)
	}
}
