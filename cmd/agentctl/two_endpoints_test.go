package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Two endpoints serve one instance (two clients, or a client and the
// daemon), each with a question waiting: answering one leaves the instance
// blocked while the other waits, and it is running again once neither
// does. Before, each endpoint counted only its own questions, and the
// first answer made the instance "running" with a question still waiting.
func TestBlockedWhileAnyEndpointWaits(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	rec := e.create(ctx, "--agent", "claude-code", "--question-timeout", "10m")

	status := func() (string, int) {
		var shown struct {
			Status        string `json:"status"`
			OpenQuestions int    `json:"open_questions"`
		}
		if err := json.Unmarshal([]byte(e.mustRun(ctx, "instance", "show", rec.ID, "-o", "json")), &shown); err != nil {
			t.Fatal(err)
		}
		return shown.Status, shown.OpenQuestions
	}
	ask := func(question string) <-chan error {
		cmd := exec.Command(e.bin, "mcp", "serve", "--instance", rec.ID)
		cmd.Env, cmd.Dir = e.cliEnv(), e.work
		client := mcp.NewClient(&mcp.Implementation{Name: "two-endpoints", Version: "1"}, nil)
		sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(func() { sess.Close() })
		done := make(chan error, 1)
		go func() {
			_, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user_question_agentctl", Arguments: map[string]any{"question": question}})
			done <- err
		}()
		return done
	}
	waitOpen := func(n int) []rcQuestion {
		for {
			if qs := e.questions(ctx, rec.ID, false); len(qs) == n {
				return qs
			}
			select {
			case <-ctx.Done():
				t.Fatalf("never %d open questions", n)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	first := ask("Which database?")
	waitOpen(1)
	second := ask("Which region?")
	qs := waitOpen(2)

	e.mustRun(ctx, "instance", "answer", rec.ID, qs[1].ID, "eu")
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if st, open := status(); st != "blocked" || open != 1 {
		t.Fatalf("one question answered, one waiting at another endpoint: status %q, %d open; want blocked, 1", st, open)
	}
	e.mustRun(ctx, "instance", "answer", rec.ID, qs[0].ID, "postgres")
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for {
		if st, open := status(); st == "running" && open == 0 {
			break
		}
		select {
		case <-ctx.Done():
			st, open := status()
			t.Fatalf("both answered: status %q, %d open; want running, 0", st, open)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
