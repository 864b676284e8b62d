//go:build unix

package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/mcpserver/kb"
)

// writeNotifier is an io.Writer that hands each write to a channel.
type writeNotifier chan string

func (w writeNotifier) Write(p []byte) (int, error) {
	w <- string(p)
	return len(p), nil
}

// TestKBIndexWaitsForLock: kb index waiting for another process building
// the same index says so on stderr, and stops when its context is
// cancelled (what Ctrl-C does).
func TestKBIndexWaitsForLock(t *testing.T) {
	f := newTestFactory(t)
	dir := filepath.Join(f.dir, "kb")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.md"), []byte("alpha"), 0o644); err != nil {
		t.Fatal(err)
	}
	index, err := kb.IndexPath(kbIndexDir(f.Config.StateDir()), dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(index), 0o700); err != nil {
		t.Fatal(err)
	}
	// Another process's lock: flock locks of two open files exclude each
	// other within one process too.
	lock, err := os.OpenFile(index+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	stderr := make(writeNotifier, 16)
	f.IOStreams.ErrOut = stderr
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- kbIndexRun(ctx, &KBIndexOptions{IO: f.IOStreams, StateDir: f.Config.StateDir, Dir: dir, Output: formatTable})
	}()
	var msg string
	select {
	case msg = <-stderr:
	case <-time.After(time.Minute): // a backstop: it says so after half a second
		t.Fatal("kb index said nothing while it waited for the lock")
	}
	if !strings.Contains(msg, "Waiting for another process that is building or updating the search index of "+dir) {
		t.Errorf("stderr while waiting: %q", msg)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("kb index cancelled while waiting: %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute): // a backstop: it returns at once
		t.Fatal("kb index went on waiting after its context was cancelled")
	}
}
