package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestWALStaysBounded: commands exit without closing the state database,
// leaving their commits in its WAL; a new process forgets what was
// checkpointed, so the WAL was never restarted and grew by every write
// command (and every command's first read rebuilt its index from all of
// it). Many creates, each its own process, leave it bounded.
func TestWALStaysBounded(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	const creates = 60 // about 7 frames each: 400 and more without the trim
	for range creates {
		e.create(ctx, "--agent", "auggie")
	}
	e.mustRun(ctx, "instance", "list", "--limit", "1")
	fi, err := os.Stat(filepath.Join(e.state, "state.db-wal"))
	if err != nil {
		t.Fatal(err)
	}
	// The bound: walCheckpointPages frames, and what one command adds
	// before its exit trims them.
	const frame = 4096 + 24
	if frames := (fi.Size() - 32) / frame; frames > 100+20 {
		t.Errorf("after %d creates the WAL holds %d frames (%d bytes), want at most 120", creates, frames, fi.Size())
	}
	// Everything is still there.
	if n := len(e.listIDs(ctx)); n != creates {
		t.Errorf("%d instances listed, want %d", n, creates)
	}
}
