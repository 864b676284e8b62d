package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Deleting an instance whose endpoint is running is refused unless forced;
// forced, the endpoint tells the model its instance was deleted (not a
// database error).
func TestDeleteWhileServing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	rec := e.create(ctx, "--agent", "claude-code")

	cmd := exec.Command(e.bin, "mcp", "serve", "--instance", rec.ID)
	cmd.Env, cmd.Dir = e.cliEnv(), e.work
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "delete-test", Version: "1"}, nil)
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	defer sess.Close()

	// The endpoint answered initialize, so it holds its instance.
	res := e.run(ctx, "instance", "delete", rec.ID)
	if res.code != ExitInvalid || !strings.Contains(res.stderr, "serving") || !strings.Contains(res.stderr, "--force") {
		t.Fatalf("delete of a served instance: want exit 4 naming --force\n%s", res)
	}
	if res := e.run(ctx, "instance", "show", rec.ID); res.code != 0 {
		t.Fatalf("the refused delete deleted the instance:\n%s", res)
	}

	if res := e.run(ctx, "instance", "delete", rec.ID, "--force"); res.code != 0 {
		t.Fatalf("delete --force:\n%s", res)
	}
	out, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "report_progress_agentctl",
		Arguments: map[string]any{"message": "still here", "status": "running"}})
	if err != nil {
		t.Fatalf("report_progress after the delete: a protocol error (%v), want a tool error saying the instance was deleted", err)
	}
	text := ""
	for _, c := range out.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if !out.IsError || !strings.Contains(text, "was deleted") || strings.Contains(text, "FOREIGN KEY") {
		t.Fatalf("report_progress after the delete: isError=%v %q", out.IsError, text)
	}
}
