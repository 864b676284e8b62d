package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestWaitBlockedWhenTheAgentAsks: `instance wait --status blocked`
// returns once the agent asks a question that goes to the store, as its
// help says, and `instance list` shows the instance blocked while it
// waits; the answer makes it running again. Through the binary, with the
// TypeScript client as the agent's client (no elicitation: the question
// goes to the store).
func TestWaitBlockedWhenTheAgentAsks(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	rec := e.create(ctx, "--agent", "claude-code")
	waited := make(chan rcResult, 1)
	go func() { waited <- e.run(ctx, "instance", "wait", rec.ID, "--status", "blocked", "--timeout", "2m") }()
	ts := startTS(ctx, t, clientPlan(t, rec, ".mcp.json",
		tsStep{Op: "call", Name: "ask_user_question_agentctl", Arguments: map[string]any{"question": "Which region?"}}),
		otherDir(t), e.clientEnv())
	w := <-waited
	if w.code != 0 {
		t.Fatalf("instance wait --status blocked: %s", w)
	}
	if !strings.Contains(w.stdout+w.stderr, "blocked") || !strings.Contains(w.stdout+w.stderr, "Which region?") {
		t.Fatalf("instance wait --status blocked did not name the status and the question: %s", w)
	}
	var listed []struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(e.mustRun(ctx, "instance", "list", "-o", "json")), &listed); err != nil || len(listed) != 1 || listed[0].Status != "blocked" {
		t.Fatalf("instance list while the question waits: %v %+v", err, listed)
	}
	e.mustRun(ctx, "instance", "answer", rec.ID, "eu-west")
	out := ts.wait()
	if c := out.result(t, 0, "call"); c.Error != nil || c.Result == nil || !strings.Contains(c.Result.String(), "eu-west") {
		t.Fatalf("the agent's call: %s", c)
	}
	if err := json.Unmarshal([]byte(e.mustRun(ctx, "instance", "list", "-o", "json")), &listed); err != nil || listed[0].Status != "running" {
		t.Fatalf("instance list after the answer: %v %+v", err, listed)
	}
}
