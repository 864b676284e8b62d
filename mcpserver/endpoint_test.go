package mcpserver

import (
	"bufio"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeStore is an in-memory Store.
type fakeStore struct {
	mu        sync.Mutex
	questions map[string]*fakeQuestion
	events    []fakeEvent
	asked     chan string
	headless  bool // what HeadlessRun reports
}

type fakeQuestion struct {
	text, status, answer string
	choices              []string
}

type fakeEvent struct {
	tool, status, message string
	percent               *float64
}

func newFakeStore() *fakeStore {
	return &fakeStore{questions: map[string]*fakeQuestion{}, asked: make(chan string, 10)}
}

func (s *fakeStore) AskQuestion(_ context.Context, _, text string, choices []string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := "q" + string(rune('0'+len(s.questions)))
	s.questions[id] = &fakeQuestion{text: text, choices: choices, status: "open"}
	s.asked <- id
	return id, nil
}

func (s *fakeStore) PollAnswer(_ context.Context, _, id string) (string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.questions[id]
	return q.answer, q.status, nil
}

func (s *fakeStore) ExpireQuestion(ctx context.Context, instanceID, id string) (bool, error) {
	return s.closeQuestion(id, AskExpired)
}

func (s *fakeStore) CancelQuestion(ctx context.Context, instanceID, id string) (bool, error) {
	return s.closeQuestion(id, AskCancelled)
}

func (s *fakeStore) closeQuestion(id, status string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.questions[id]
	if q.status != "open" {
		return false, nil
	}
	q.status = status
	return true, nil
}

func (s *fakeStore) RecordProgress(_ context.Context, _, tool, status, message string, percent *float64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, fakeEvent{tool, status, message, percent})
	return int64(len(s.events)), nil
}

// Exists: the fake's instance is never deleted (builtins_deleted_test.go
// has a store whose instance is).
func (s *fakeStore) Exists(context.Context, string) (bool, error) { return true, nil }

func (s *fakeStore) HeadlessRun(context.Context, string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.headless, nil
}

// unansweredStatus is the status the fake records an unanswered question
// under.
const unansweredStatus = "unanswered"

func (s *fakeStore) RecordUnanswered(ctx context.Context, id, tool, message string) error {
	_, err := s.RecordProgress(ctx, id, tool, unansweredStatus, message, nil)
	return err
}

func (s *fakeStore) OpenQuestions(context.Context, string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, q := range s.questions {
		if q.status == "open" {
			n++
		}
	}
	return n, nil
}

func (s *fakeStore) answer(id, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.questions[id].status, s.questions[id].answer = "answered", text
}

var namings = map[agents.Namespacing]agents.ToolNaming{
	agents.NamespacingSuffix: {Namespacing: agents.NamespacingSuffix, Template: "{tool}_{server}", MaxLength: 64, Charset: agents.DefaultCharset},
	agents.NamespacingPrefix: {Namespacing: agents.NamespacingPrefix, Template: "mcp__{server}__{tool}", MaxLength: 64, Charset: agents.DefaultCharset},
	agents.NamespacingNone:   {Namespacing: agents.NamespacingNone, Template: "{tool}", MaxLength: 64, Charset: agents.DefaultCharset},
}

// connect starts an endpoint and an in-memory client session for it.
func connect(t testing.TB, cfg Config, opts *mcp.ClientOptions) (*Endpoint, *mcp.ClientSession) {
	t.Helper()
	ep, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ep, sessionFor(t, ep.Server(), opts)
}

// sessionFor connects an in-memory client session to s, closed at cleanup.
func sessionFor(t testing.TB, s *mcp.Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

func testConfig(style agents.Namespacing, st Store) Config {
	return Config{
		Instance:     Instance{ID: "inst1", Agent: "test", Workspace: "/w"},
		ServerName:   "agentctl",
		Naming:       namings[style],
		Store:        st,
		PollInterval: time.Millisecond,
	}
}

func listNames(t testing.TB, cs *mcp.ClientSession) []string {
	t.Helper()
	names := testkit.ToolNames(context.Background(), t, cs)
	slices.Sort(names)
	return names
}

// TestToolsListFollowsTheCapability is the consumer test: from the
// capability alone, tools/list shows what the client needs.
func TestToolsListFollowsTheCapability(t *testing.T) {
	full := []string{"ask_user_question_agentctl", "get_instance_agentctl", "report_progress_agentctl"}
	want := map[agents.Namespacing][]string{
		agents.NamespacingSuffix: {"ask_user_question", "get_instance", "report_progress"},
		agents.NamespacingPrefix: full,
		agents.NamespacingNone:   full,
	}
	for style, names := range want {
		t.Run(string(style), func(t *testing.T) {
			ep, cs := connect(t, testConfig(style, newFakeStore()), nil)
			if got := listNames(t, cs); !slices.Equal(got, names) {
				t.Fatalf("tools/list = %v, want %v", got, names)
			}
			// Listing again gives the same, and the registry still holds
			// canonical names: presentation copies, never mutates.
			if got := listNames(t, cs); !slices.Equal(got, names) {
				t.Fatalf("second tools/list = %v, want %v", got, names)
			}
			if got := ep.Registry().Names(); !slices.Equal(got, full) {
				t.Fatalf("registry = %v", got)
			}
		})
	}
}

// TestPresentListCopies: presentation renames copies; the SDK's own *Tool
// values (which tools/list returns) keep their canonical names.
func TestPresentListCopies(t *testing.T) {
	ep, err := New(testConfig(agents.NamespacingSuffix, newFakeStore()))
	if err != nil {
		t.Fatal(err)
	}
	orig := []*mcp.Tool{{Name: "ask_user_question_agentctl"}, {Name: "report_progress_agentctl"}, {Name: "other"}}
	in := &mcp.ListToolsResult{Tools: slices.Clone(orig), NextCursor: "c"}
	out := ep.presentList(in)
	if out == in || out.NextCursor != "c" {
		t.Fatal("the result must be a copy with the same cursor")
	}
	var names []string
	for _, tl := range out.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"ask_user_question", "report_progress", "other"}) {
		t.Fatalf("presented %v", names)
	}
	for i, tl := range orig {
		if in.Tools[i] != tl {
			t.Fatal("the input slice was modified")
		}
	}
	if orig[0].Name != "ask_user_question_agentctl" || orig[1].Name != "report_progress_agentctl" {
		t.Fatalf("the SDK's tools were renamed in place: %q %q", orig[0].Name, orig[1].Name)
	}
	if out.Tools[2] != orig[2] {
		t.Fatal("an unchanged tool need not be copied")
	}
}

func TestCallRoutesToCanonicalNames(t *testing.T) {
	for _, tc := range []struct {
		style agents.Namespacing
		name  string
	}{
		{agents.NamespacingSuffix, "report_progress"},
		{agents.NamespacingSuffix, "report_progress_agentctl"},
		{agents.NamespacingPrefix, "report_progress_agentctl"},
		{agents.NamespacingNone, "report_progress_agentctl"},
	} {
		t.Run(string(tc.style)+"/"+tc.name, func(t *testing.T) {
			st := newFakeStore()
			_, cs := connect(t, testConfig(tc.style, st), nil)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.name, Arguments: map[string]any{"message": "m", "status": "done", "percent": 100}})
			if err != nil || res.IsError {
				t.Fatalf("call: %v %+v", err, res)
			}
			if len(st.events) != 1 || st.events[0].tool != "report_progress_agentctl" || st.events[0].status != "done" || *st.events[0].percent != 100 {
				t.Fatalf("events must record the canonical name: %+v", st.events)
			}
		})
	}
}

func TestUnknownToolIsInvalidParams(t *testing.T) {
	for style := range namings {
		for _, name := range []string{"no_such_tool", "", "mcp__agentctl__report_progress_agentctl", "report_progress_agentctl_agentctl"} {
			_, cs := connect(t, testConfig(style, newFakeStore()), nil)
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
			var rpcErr *jsonrpc.Error
			if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
				t.Fatalf("%s %q: want -32602, got %v", style, name, err)
			}
		}
	}
	// A prefix client calling the suffix client's name gets a suggestion.
	_, cs := connect(t, testConfig(agents.NamespacingPrefix, newFakeStore()), nil)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_instance", Arguments: map[string]any{}})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Message != `unknown tool "get_instance"; did you mean "get_instance_agentctl"?` {
		t.Fatalf("got %v", err)
	}
}

func TestAskUserQuestionThroughTheStore(t *testing.T) {
	st := newFakeStore()
	_, cs := connect(t, testConfig(agents.NamespacingSuffix, st), nil)
	go func() {
		id := <-st.asked
		st.answer(id, "staging")
	}()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_user_question", Arguments: map[string]any{"question": "Which DB?", "choices": []string{"staging", "prod"}}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	out := res.StructuredContent.(map[string]any)
	if out["answered"] != true || out["answer"] != "staging" || out["status"] != "answered" {
		t.Fatalf("got %v", out)
	}
	if q := st.questions["q0"]; q.text != "Which DB?" || !slices.Equal(q.choices, []string{"staging", "prod"}) {
		t.Fatalf("stored %+v", q)
	}
}

// Choices a person could not pick (empty) or could not tell apart (case,
// spaces, Unicode form) are refused with a tool error saying which, and no
// question is asked.
func TestAskUserQuestionRefusesChoicesAPersonCannotPick(t *testing.T) {
	st := newFakeStore()
	_, cs := connect(t, testConfig(agents.NamespacingSuffix, st), nil)
	for _, tc := range []struct {
		choices []string
		want    string
	}{
		{[]string{"a", "  "}, "choice 2 is empty"},
		{[]string{"", "a"}, "choice 1 is empty"},
		{[]string{"Yes", "yes", "No"}, `choices "Yes" and "yes" look the same to a person`},
		{[]string{"caf\u00e9", "cafe\u0301 "}, "look the same to a person"},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_user_question", Arguments: map[string]any{"question": "Which?", "choices": tc.choices}})
		if err != nil || !res.IsError || !strings.Contains(resultText(res), tc.want) {
			t.Errorf("choices %q: %v %q, want a tool error saying %q", tc.choices, err, resultText(res), tc.want)
		}
	}
	if len(st.questions) != 0 {
		t.Errorf("questions were asked: %v", st.questions)
	}
}

func TestAskUserQuestionTimesOutWithANormalResult(t *testing.T) {
	st := newFakeStore()
	cfg := testConfig(agents.NamespacingPrefix, st)
	cfg.QuestionTimeout = 20 * time.Millisecond
	_, cs := connect(t, cfg, nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_user_question_agentctl", Arguments: map[string]any{"question": "Anyone?"}})
	if err != nil || res.IsError {
		t.Fatalf("a timeout is a normal result: %v %+v", err, res)
	}
	out := res.StructuredContent.(map[string]any)
	if out["answered"] != false || out["status"] != "expired" {
		t.Fatalf("got %v", out)
	}
	if st.questions["q0"].status != "expired" {
		t.Fatalf("question left %q", st.questions["q0"].status)
	}
}

// TestAskUserQuestionUsesElicitation: where a person may sit at the client
// (no headless run) and the client can ask, the question is asked through
// it, and a person's decline or cancel (one that took longer than reading
// the question does) reaches the model as such.
func TestAskUserQuestionUsesElicitation(t *testing.T) {
	for _, tc := range []struct {
		action, wantStatus string
		answered           bool
	}{
		{"accept", "answered", true},
		{"decline", "declined", false},
		{"cancel", "cancelled", false},
	} {
		t.Run(tc.action, func(t *testing.T) {
			st := newFakeStore()
			var got *mcp.ElicitParams
			opts := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				got = req.Params
				if tc.action == "accept" {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "prod"}}, nil
				}
				return &mcp.ElicitResult{Action: tc.action}, nil
			}}
			cfg := testConfig(agents.NamespacingSuffix, st)
			cfg.ReadingTime = time.Nanosecond // every answer took a person's time
			_, cs := connect(t, cfg, opts)
			out := callAsk(t, cs, "ask_user_question")
			if out["answered"] != tc.answered || out["status"] != tc.wantStatus {
				t.Fatalf("got %v", out)
			}
			if tc.answered && out["answer"] != "prod" {
				t.Fatalf("answer %v", out["answer"])
			}
			if got == nil || got.Message != "Which DB?" {
				t.Fatalf("elicitation %+v", got)
			}
			if len(st.questions) != 0 || len(st.events) != 0 {
				t.Fatalf("an elicited question must not be stored: questions %v events %v", st.questions, st.events)
			}
		})
	}
}

// callAsk calls the ask tool (by its transport name) with the usual
// question and returns its structured result.
func callAsk(t *testing.T, cs *mcp.ClientSession, name string) map[string]any {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"question": "Which DB?", "choices": []string{"staging", "prod"}}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	return res.StructuredContent.(map[string]any)
}

// answerWhenAsked answers the next question the store is given.
func answerWhenAsked(st *fakeStore, text string) {
	go func() { st.answer(<-st.asked, text) }()
}

// TestAskUserQuestionNobodyAtTheClient: a question is never declined on
// nobody's behalf. In a headless run it goes to the store without asking
// the client; where the policy says store it does too; and a decline or
// cancel faster than reading sends it to the store, where it is answered.
func TestAskUserQuestionNobodyAtTheClient(t *testing.T) {
	for _, tc := range []struct {
		name       string
		headless   bool
		policy     agents.Questions
		action     string // the client's answer to an elicitation
		wantElicit bool
	}{
		{name: "headless run", headless: true, action: "decline"},
		{name: "headless run, client policy, instant decline", headless: true, policy: agents.Questions{Headless: agents.AskViaClient}, action: "decline", wantElicit: true},
		{name: "interactive, store policy", policy: agents.Questions{Interactive: agents.AskViaStore}, action: "decline"},
		{name: "no run, instant decline", action: "decline", wantElicit: true},
		{name: "no run, instant cancel", action: "cancel", wantElicit: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newFakeStore()
			st.headless = tc.headless
			elicited := 0
			opts := &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				elicited++
				return &mcp.ElicitResult{Action: tc.action}, nil
			}}
			cfg := testConfig(agents.NamespacingPrefix, st)
			cfg.Questions = tc.policy
			_, cs := connect(t, cfg, opts)
			answerWhenAsked(st, "prod")
			out := callAsk(t, cs, "ask_user_question_agentctl")
			if out["answered"] != true || out["answer"] != "prod" || out["status"] != AskAnswered || out["question_id"] == "" {
				t.Fatalf("got %v, want the stored question answered", out)
			}
			if (elicited > 0) != tc.wantElicit {
				t.Fatalf("elicited %d times, want elicitation %v", elicited, tc.wantElicit)
			}
		})
	}
}

// TestAskUserQuestionUnansweredIsAnEvent: a question that ends without an
// answer leaves an event of status unanswered, naming the question,
// between the blocked of its asking and the running of the agent going on.
func TestAskUserQuestionUnansweredIsAnEvent(t *testing.T) {
	st := newFakeStore()
	cfg := testConfig(agents.NamespacingPrefix, st)
	cfg.QuestionTimeout = 20 * time.Millisecond
	_, cs := connect(t, cfg, nil)
	out := callAsk(t, cs, "ask_user_question_agentctl")
	if out["status"] != AskExpired {
		t.Fatalf("got %v", out)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.events) != 3 || st.events[1].status != unansweredStatus || st.events[1].tool != "ask_user_question_agentctl" ||
		!strings.Contains(st.events[1].message, "q0") || !strings.Contains(st.events[1].message, "Which DB?") {
		t.Fatalf("events %+v, want an unanswered event naming q0 and the question", st.events)
	}
	if st.events[0].status != "blocked" || st.events[2].status != "running" {
		t.Fatalf("events %+v, want blocked first and running last", st.events)
	}
}

// TestAskUserQuestionStatus: a question asked through the store makes the
// instance blocked until its answer comes, then running again.
func TestAskUserQuestionStatus(t *testing.T) {
	st := newFakeStore()
	cfg := testConfig(agents.NamespacingPrefix, st)
	_, cs := connect(t, cfg, nil)
	done := make(chan map[string]any, 1)
	go func() { done <- callAsk(t, cs, "ask_user_question_agentctl") }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st.mu.Lock()
		n := len(st.events)
		st.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no event while the question waits")
		}
		time.Sleep(5 * time.Millisecond)
	}
	st.mu.Lock()
	if ev := st.events[0]; ev.status != "blocked" || !strings.Contains(ev.message, "Which DB?") {
		t.Errorf("while waiting: %+v, want blocked naming the question", ev)
	}
	st.mu.Unlock()
	st.answer("q0", "postgres")
	if out := <-done; out["status"] != AskAnswered {
		t.Fatalf("got %v", out)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.events) != 2 || st.events[1].status != "running" || !strings.Contains(st.events[1].message, "answered") {
		t.Fatalf("events %+v, want running after the answer", st.events)
	}
}

func TestGetInstanceListsNames(t *testing.T) {
	_, cs := connect(t, testConfig(agents.NamespacingSuffix, newFakeStore()), nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_instance", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	out := res.StructuredContent.(map[string]any)
	if out["id"] != "inst1" || out["namespacing"] != "suffix" {
		t.Fatalf("got %v", out)
	}
	tools := out["tools"].([]any)
	first := tools[0].(map[string]any)
	if first["canonical"] != "ask_user_question_agentctl" || first["transport"] != "ask_user_question" || first["model_visible"] != "ask_user_question_agentctl" {
		t.Fatalf("got %v", first)
	}
}

func TestReportProgressValidates(t *testing.T) {
	st := newFakeStore()
	_, cs := connect(t, testConfig(agents.NamespacingPrefix, st), nil)
	for _, args := range []map[string]any{
		{"message": "m", "status": "bogus"},
		{"message": "m", "percent": 101},
		{"status": "done"},
		{"message": "  "},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "report_progress_agentctl", Arguments: args})
		if err == nil && !res.IsError {
			t.Errorf("%v accepted", args)
		}
	}
	if len(st.events) != 0 {
		t.Fatalf("invalid calls recorded events: %+v", st.events)
	}
}

func TestRegistryRefusesCollisions(t *testing.T) {
	ep, err := New(testConfig(agents.NamespacingSuffix, newFakeStore()))
	if err != nil {
		t.Fatal(err)
	}
	err = ep.Registry().AddRawTool(Entry{Name: "get_instance_agentctl", Source: "kb docs", Kind: KindKB}, &mcp.Tool{Name: "get_instance_agentctl", InputSchema: map[string]any{"type": "object"}}, nil)
	var ce *CollisionError
	if !errors.As(err, &ce) || ce.First != "built-in" || ce.Second != "kb docs" {
		t.Fatalf("got %v", err)
	}
	if err := ep.Registry().AddRawTool(Entry{Name: "bad name", Source: "x", Kind: KindKB}, &mcp.Tool{Name: "bad name", InputSchema: map[string]any{"type": "object"}}, nil); err == nil {
		t.Fatal("invalid tool name accepted")
	}
}

// TestNullArgumentsDoNotCrash sends raw JSON-RPC, as a careless client
// would: go-sdk panics applying schema defaults to "arguments": null.
func TestNullArgumentsDoNotCrash(t *testing.T) {
	ep, err := New(testConfig(agents.NamespacingPrefix, newFakeStore()))
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- ep.Run(context.Background(), &mcp.IOTransport{Reader: inR, Writer: outW}) }()
	lines := bufio.NewScanner(outR)
	send := func(s string) {
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	lines.Scan()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"report_progress_agentctl","arguments":null}}`)
	if !lines.Scan() {
		t.Fatalf("no answer: %v", lines.Err())
	}
	if got := lines.Text(); !strings.Contains(got, `"id":2`) || !strings.Contains(got, `"isError":true`) {
		t.Fatalf("got %s", got)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestAskUserQuestionStatusAfterCancel: a question whose call the client
// cancels does not leave the instance blocked.
func TestAskUserQuestionStatusAfterCancel(t *testing.T) {
	st := newFakeStore()
	_, cs := connect(t, testConfig(agents.NamespacingPrefix, st), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user_question_agentctl", Arguments: map[string]any{"question": "Which DB?"}})
		done <- err
	}()
	statuses := func() []string {
		st.mu.Lock()
		defer st.mu.Unlock()
		var out []string
		for _, e := range st.events {
			out = append(out, e.status)
		}
		return out
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(statuses()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no blocked event")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	for {
		if s := statuses(); len(s) > 0 && s[len(s)-1] == "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("statuses after the cancel: %v, want running last", statuses())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
