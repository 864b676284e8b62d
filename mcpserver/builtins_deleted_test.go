package mcpserver

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// deletingStore is a fakeStore whose instance can be deleted: from then on
// every call fails as the instance store's do.
type deletingStore struct {
	*fakeStore
	deleted atomic.Bool
}

// errDeleted is what a store returns for a deleted instance.
type errDeleted struct{}

func (errDeleted) Error() string         { return `instance "inst1" was deleted` }
func (errDeleted) InstanceDeleted() bool { return true }

func (s *deletingStore) AskQuestion(ctx context.Context, id, text string, choices []string) (string, error) {
	if s.deleted.Load() {
		return "", errDeleted{}
	}
	return s.fakeStore.AskQuestion(ctx, id, text, choices)
}

func (s *deletingStore) PollAnswer(ctx context.Context, id, qid string) (string, string, error) {
	if s.deleted.Load() {
		return "", "", errDeleted{}
	}
	return s.fakeStore.PollAnswer(ctx, id, qid)
}

func (s *deletingStore) ExpireQuestion(ctx context.Context, id, qid string) (bool, error) {
	if s.deleted.Load() {
		return false, errDeleted{}
	}
	return s.fakeStore.ExpireQuestion(ctx, id, qid)
}

func (s *deletingStore) CancelQuestion(ctx context.Context, id, qid string) (bool, error) {
	if s.deleted.Load() {
		return false, errDeleted{}
	}
	return s.fakeStore.CancelQuestion(ctx, id, qid)
}

func (s *deletingStore) RecordProgress(ctx context.Context, id, tool, status, message string, percent *float64) (int64, error) {
	if s.deleted.Load() {
		return 0, errDeleted{}
	}
	return s.fakeStore.RecordProgress(ctx, id, tool, status, message, percent)
}

func (s *deletingStore) Exists(context.Context, string) (bool, error) { return !s.deleted.Load(), nil }

// callDeleted calls a tool and checks that the answer is a tool error (not a
// protocol error) saying the instance was deleted, what that meant, and to stop.
func callDeleted(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, consequence string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: a deleted instance is a tool error, not a protocol error: %v", name, err)
	}
	if !res.IsError || len(res.Content) != 1 {
		t.Fatalf("%s: want one text with isError, got %+v", name, res)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	for _, want := range []string{"instance inst1 was deleted", consequence, "Stop and tell the person."} {
		if !strings.Contains(text, want) {
			t.Errorf("%s: %q does not say %q", name, text, want)
		}
	}
}

func TestBuiltinsSayTheInstanceWasDeleted(t *testing.T) {
	st := &deletingStore{fakeStore: newFakeStore()}
	_, cs := connect(t, testConfig(agents.NamespacingSuffix, st), nil)
	ctx := context.Background()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_instance"}); err != nil || res.IsError {
		t.Fatalf("before the delete: %v %+v", err, res)
	}
	st.deleted.Store(true)
	callDeleted(t, cs, "report_progress", map[string]any{"message": "step 2"}, "nothing was recorded")
	callDeleted(t, cs, "ask_user_question", map[string]any{"question": "Which DB?"}, "the question was not asked")
	callDeleted(t, cs, "get_instance", nil, "nothing this endpoint does is recorded")
}

// TestAskUserQuestionEndsWhenTheInstanceIsDeleted: a question waiting for
// an answer ends with the deletion, not with the timeout.
func TestAskUserQuestionEndsWhenTheInstanceIsDeleted(t *testing.T) {
	st := &deletingStore{fakeStore: newFakeStore()}
	_, cs := connect(t, testConfig(agents.NamespacingPrefix, st), nil) // QuestionTimeout: the default 10 minutes
	go func() {
		<-st.asked
		st.deleted.Store(true)
	}()
	callDeleted(t, cs, "ask_user_question_agentctl", map[string]any{"question": "Which DB?"}, "the question was withdrawn")
}

// TestAskUserQuestionDeletedAtTheDeadline: the instance goes while the
// question expires: the close at the deadline says so too.
func TestAskUserQuestionDeletedAtTheDeadline(t *testing.T) {
	st := &closeDeletes{deletingStore{fakeStore: newFakeStore()}}
	cfg := testConfig(agents.NamespacingPrefix, st)
	cfg.QuestionTimeout = 1 // the deadline fires at the first select
	cfg.PollInterval = 1 << 62
	_, cs := connect(t, cfg, nil)
	callDeleted(t, cs, "ask_user_question_agentctl", map[string]any{"question": "Which DB?"}, "the question was withdrawn")
}

// closeDeletes deletes the instance just before the question is closed.
type closeDeletes struct{ deletingStore }

func (s *closeDeletes) ExpireQuestion(ctx context.Context, id, qid string) (bool, error) {
	s.deleted.Store(true)
	return s.deletingStore.ExpireQuestion(ctx, id, qid)
}

// outageStore is a fakeStore whose polls fail as a store that cannot be
// reached fails, until down is cleared.
type outageStore struct {
	*fakeStore
	down  atomic.Bool
	polls atomic.Int64 // the polls that failed
}

// errUnavailable is what the instance store returns while it cannot reach
// its database.
type errUnavailable struct{}

func (errUnavailable) Error() string {
	return "postgres store postgres://db/x: unexpected EOF (store unavailable)"
}
func (errUnavailable) StoreUnavailable() bool { return true }

func (s *outageStore) PollAnswer(ctx context.Context, id, qid string) (string, string, error) {
	if s.down.Load() {
		s.polls.Add(1)
		return "", "", errUnavailable{}
	}
	return s.fakeStore.PollAnswer(ctx, id, qid)
}

// TestAskUserQuestionWaitsOutAStoreOutage: a store that stops answering
// while a question waits (a PostgreSQL restart) does not end the call: the
// question stays open, and its answer, given once the store is back,
// reaches the agent.
func TestAskUserQuestionWaitsOutAStoreOutage(t *testing.T) {
	st := &outageStore{fakeStore: newFakeStore()}
	_, cs := connect(t, testConfig(agents.NamespacingPrefix, st), nil)
	go func() {
		id := <-st.asked
		st.down.Store(true)
		for st.polls.Load() < 3 {
			time.Sleep(time.Millisecond)
		}
		st.answer(id, "staging")
		st.down.Store(false)
	}()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_user_question_agentctl", Arguments: map[string]any{"question": "Which DB?"}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	if out := res.StructuredContent.(map[string]any); out["answer"] != "staging" {
		t.Fatalf("got %v", out)
	}
}

// statusOutageStore fails to record the status "running" failures times,
// as a store that cannot be reached does.
type statusOutageStore struct {
	*fakeStore
	failures atomic.Int64
}

func (s *statusOutageStore) RecordProgress(ctx context.Context, id, tool, status, message string, percent *float64) (int64, error) {
	if status == statusRunning && s.failures.Add(-1) >= 0 {
		return 0, errUnavailable{}
	}
	return s.fakeStore.RecordProgress(ctx, id, tool, status, message, percent)
}

// TestAskUserQuestionUnblocksAfterAnOutage: the status "running" that ends
// a wait, refused by a store that does not answer, is recorded once it
// does: the instance is not left blocked.
func TestAskUserQuestionUnblocksAfterAnOutage(t *testing.T) {
	st := &statusOutageStore{fakeStore: newFakeStore()}
	st.failures.Store(3)
	_, cs := connect(t, testConfig(agents.NamespacingPrefix, st), nil)
	go func() { st.answer(<-st.asked, "staging") }()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_user_question_agentctl", Arguments: map[string]any{"question": "Which DB?"}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st.mu.Lock()
		last := st.events[len(st.events)-1]
		st.mu.Unlock()
		if last.status == statusRunning {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the last status is %q, 10s after the answer; want %s", last.status, statusRunning)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// answeredBeforeWatch is a store whose questions are answered as their
// watch begins, which never announces it.
type answeredBeforeWatch struct{ *fakeStore }

func (s answeredBeforeWatch) WatchAnswer(_ context.Context, id string) (<-chan struct{}, func()) {
	s.answer(id, "staging")
	return make(chan struct{}), func() {}
}

// TestAskUserQuestionReadsWhatWasAnsweredBeforeItsWatch: ask_user_question
// reads the answer once as soon as its watch has begun, since an answer
// given before then is not announced; its poll here never comes.
func TestAskUserQuestionReadsWhatWasAnsweredBeforeItsWatch(t *testing.T) {
	cfg := testConfig(agents.NamespacingPrefix, answeredBeforeWatch{newFakeStore()})
	cfg.PollInterval = 1 << 62
	_, cs := connect(t, cfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Wait)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user_question_agentctl", Arguments: map[string]any{"question": "Which DB?"}})
	if err != nil || res.IsError {
		t.Fatalf("an answer given before the watch began: %v %+v", err, res)
	}
	if out, _ := res.StructuredContent.(map[string]any); out["answer"] != "staging" {
		t.Fatalf("answered %+v, want staging", res.StructuredContent)
	}
}

// TestAskUserQuestionEndsWhenItsQuestionIsClosedElsewhere: a question
// another closed (the end of the run it was asked in cancels what is left
// open) ends the call at once, saying so, instead of waiting for an answer
// nobody can give; also when the deadline finds it closed already (the
// poll here never comes). It waited for ever, past the question timeout.
func TestAskUserQuestionEndsWhenItsQuestionIsClosedElsewhere(t *testing.T) {
	st := newFakeStore()
	cfg := testConfig(agents.NamespacingPrefix, st)
	cfg.PollInterval, cfg.QuestionTimeout = 1<<62, 300*time.Millisecond
	_, cs := connect(t, cfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Wait)
	defer cancel()
	go func() {
		if _, err := st.closeQuestion(<-st.asked, AskCancelled); err != nil {
			t.Error(err)
		}
	}()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user_question_agentctl", Arguments: map[string]any{"question": "Which DB?"}})
	if err != nil || res.IsError {
		t.Fatalf("a question closed elsewhere: %v %+v", err, res)
	}
	if out, _ := res.StructuredContent.(map[string]any); out["status"] != AskCancelled || out["answered"] == true {
		t.Fatalf("result %+v, want cancelled, unanswered", res.StructuredContent)
	}
}

// TestAskUserQuestionAnsweredAsItStops: an answer stored just before the
// call's end (a stopping endpoint's grace running out) is recorded
// answered, so it goes to the agent, not an error that says the endpoint
// stopped.
func TestAskUserQuestionAnsweredAsItStops(t *testing.T) {
	st := newFakeStore()
	cfg := testConfig(agents.NamespacingPrefix, st)
	cfg.PollInterval, cfg.QuestionTimeout = 1<<62, time.Hour
	ep, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		id := <-st.asked
		time.Sleep(50 * time.Millisecond) // its first read is done
		st.mu.Lock()
		st.questions[id].status, st.questions[id].answer = AskAnswered, "yes"
		st.mu.Unlock()
		cancel() // the stop, before any read of the answer
	}()
	res, out, err := ep.askThroughStore(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{}}, AskInput{Question: "Ship it?"}, false)
	if err != nil || res == nil || out.Answer != "yes" || out.Status != AskAnswered {
		t.Fatalf("answered as the call ended: %v, %+v, %v; want the answer", res, out, err)
	}
}

// TestAskUserQuestionAfterItsRunEnded: a question asked in a headless run
// whose wait ends after that run has ended (its client gone, the endpoint
// left behind) does not record the instance running again: the run's end
// is its status.
func TestAskUserQuestionAfterItsRunEnded(t *testing.T) {
	st := newFakeStore()
	st.headless = true
	cfg := testConfig(agents.NamespacingPrefix, st)
	cfg.PollInterval, cfg.QuestionTimeout = 10*time.Millisecond, time.Hour
	_, cs := connect(t, cfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Wait)
	defer cancel()
	go func() {
		id := <-st.asked
		st.mu.Lock()
		st.headless = false // the run ended, and closed what it left open
		st.mu.Unlock()
		if _, err := st.closeQuestion(id, AskCancelled); err != nil {
			t.Error(err)
		}
	}()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user_question_agentctl", Arguments: map[string]any{"question": "Which DB?"}}); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, e := range st.events {
		if e.status == "running" {
			t.Errorf("recorded %q after the run ended: %+v", e.status, st.events)
		}
	}
}
