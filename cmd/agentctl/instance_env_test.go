package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstanceEnvEvalSafe: instance env's output is what its help says to
// eval; a workspace whose path holds a line break (and a command after
// it) made the rest of its comment a command that eval ran.
func TestInstanceEnvEvalSafe(t *testing.T) {
	e := newRCEnv(t)
	ctx := context.Background()
	marker := filepath.Join(t.TempDir(), "ran")
	ws := filepath.Join(t.TempDir(), "nl\ntouch "+marker+" #")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	rec := e.create(ctx, "--agent", "claude-code", "--workspace", ws)
	out := e.mustRun(ctx, "instance", "env", rec.ID)
	if err := exec.Command("sh", "-c", "eval \"$1\"", "sh", out).Run(); err != nil {
		t.Fatalf("eval: %v\n%s", err, out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("eval of instance env ran a command from the workspace's path:\n%s", out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, "export ") && !strings.HasPrefix(line, "#") {
			t.Errorf("a line neither export nor comment: %q", line)
		}
	}
}
