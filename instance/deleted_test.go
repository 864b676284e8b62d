package instance_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestEndpointCallsAfterDeleteSayDeleted is the bug where an endpoint whose
// instance was deleted passed "constraint failed: FOREIGN KEY constraint
// failed (787)" on to the model: every store call an endpoint makes returns
// a typed error that says the instance was deleted.
func TestEndpointCallsAfterDeleteSayDeleted(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	rec := create(t, st, "auggie", nil)
	qid, err := st.AskQuestion(ctx, rec.ID, "still there?", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Delete(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}

	check := func(call string, err error) {
		t.Helper()
		if !errors.Is(err, instance.ErrNotFound) || !errors.Is(err, instance.ErrDeleted) {
			t.Errorf("%s: want ErrNotFound and ErrDeleted, got %v", call, err)
		}
		if err == nil {
			return
		}
		if want := "instance \"" + rec.ID + "\" was deleted"; !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %q does not say %q", call, err, want)
		}
		if strings.Contains(err.Error(), "constraint") {
			t.Errorf("%s: %q leaks the database's error", call, err)
		}
		if !mcpserver.IsInstanceDeleted(err) {
			t.Errorf("%s: the endpoint does not recognise %v as a deletion", call, err)
		}
	}
	_, err = st.RecordProgress(ctx, rec.ID, "report_progress_agentctl", "running", "hello", nil)
	check("RecordProgress", err)
	_, err = st.AskQuestion(ctx, rec.ID, "anyone?", nil)
	check("AskQuestion", err)
	_, _, err = st.PollAnswer(ctx, rec.ID, qid)
	check("PollAnswer", err)
	_, err = st.ExpireQuestion(ctx, rec.ID, qid)
	check("ExpireQuestion", err)
	_, err = st.CancelQuestion(ctx, rec.ID, qid)
	check("CancelQuestion", err)

	// A question of a live instance that is simply unknown stays "question not found".
	live := create(t, st, "auggie", nil)
	if _, _, err := st.PollAnswer(ctx, live.ID, "nosuch"); !errors.Is(err, instance.ErrNotFound) || errors.Is(err, instance.ErrDeleted) {
		t.Errorf("unknown question: %v", err)
	}
	if closed, err := st.ExpireQuestion(ctx, live.ID, "nosuch"); closed || err != nil {
		t.Errorf("closing an unknown question of a live instance: %v, %v", closed, err)
	}
}

// askSignal tells when the endpoint has stored its question.
type askSignal struct {
	*instance.Store
	asked chan string
}

func (s *askSignal) AskQuestion(ctx context.Context, id, text string, choices []string) (string, error) {
	qid, err := s.Store.AskQuestion(ctx, id, text, choices)
	if err == nil {
		s.asked <- qid
	}
	return qid, err
}

// TestEndpointOfADeletedInstance drives a real endpoint on the real store
// through the SDK: once the instance is deleted, each built-in tool answers
// the model with a tool error that says so; a waiting question ends.
func TestEndpointOfADeletedInstance(t *testing.T) {
	st := openStore(t)
	rec := create(t, st, "auggie", nil)
	ctx := context.Background()
	sig := &askSignal{Store: st, asked: make(chan string, 1)}
	ep, err := mcpserver.New(mcpserver.Config{
		Instance:     mcpserver.Instance{ID: rec.ID, Agent: rec.Agent, Workspace: rec.Workspace},
		ServerName:   rec.ServerName,
		Naming:       rec.Capabilities.ToolNames,
		Store:        sig,
		PollInterval: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	sst, cst := mcp.NewInMemoryTransports()
	ss, err := ep.Server().Connect(ctx, sst, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, cst, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })

	call := func(name string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	if text, isErr := call("report_progress_agentctl", map[string]any{"message": "step 1"}); isErr {
		t.Fatalf("before the delete: %s", text)
	}

	go func() {
		<-sig.asked
		if _, err := st.Delete(context.Background(), rec.ID); err != nil {
			t.Error(err)
		}
	}()
	want := "instance " + rec.ID + " was deleted"
	for _, c := range []struct {
		name        string
		args        map[string]any
		consequence string
	}{
		{"ask_user_question_agentctl", map[string]any{"question": "Which DB?"}, "the question was withdrawn"},
		{"report_progress_agentctl", map[string]any{"message": "step 2"}, "nothing was recorded"},
		{"ask_user_question_agentctl", map[string]any{"question": "Still there?"}, "the question was not asked"},
		{"get_instance_agentctl", nil, "nothing this endpoint does is recorded"},
	} {
		text, isErr := call(c.name, c.args)
		if !isErr || !strings.Contains(text, want) || !strings.Contains(text, c.consequence) || !strings.Contains(text, "Stop and tell the person.") {
			t.Errorf("%s: isError=%v %q; want an error saying %q and %q", c.name, isErr, text, want, c.consequence)
		}
	}
}

// TestConcurrentDeletesDeleteOnce: of two deletes of one instance, the one
// that loses the race says not found instead of claiming the delete.
func TestConcurrentDeletesDeleteOnce(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	rec := create(t, st, "claude-code", nil)
	other, err := instance.Open(ctx, st.Dir())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	resolved, proceed := make(chan struct{}), make(chan struct{})
	other.SetAfterResolve(func() { close(resolved); <-proceed })
	got := make(chan error, 1)
	go func() {
		_, err := other.Delete(ctx, rec.ID)
		got <- err
	}()
	<-resolved
	if _, err := st.Delete(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	close(proceed)
	if err := <-got; !errors.Is(err, instance.ErrNotFound) {
		t.Fatalf("the second delete: want ErrNotFound, got %v", err)
	}
}
