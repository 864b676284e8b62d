//go:build unix

package instance_test

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/internal/testkit"
)

// TestConnectGivesUpOnAHeldLock: a program that holds its lock on the
// client's file (an editor, a stopped process) does not keep connect
// waiting without end: after a while it is a conflict (exit code 4) that
// names the file, and nothing was changed.
func TestConnectGivesUpOnAHeldLock(t *testing.T) {
	instance.SetConnectLockWait(t, 200*time.Millisecond)
	st := openStore(t)
	const body = `{"mcpServers": {}}`
	rec, path, o := clientFile(t, st, "cursor", ".cursor/mcp.json", body)
	holder, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := syscall.Flock(int(holder.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { _, err := instance.Connect(rec, o); errc <- err }()
	select {
	case err = <-errc:
	case <-time.After(testkit.Wait):
		t.Fatalf("connect still waits for the lock after %s", testkit.Wait)
	}
	if !errors.Is(err, instance.ErrConflict) || !strings.Contains(err.Error(), path+" is locked by another program") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("connect while another program holds the file's lock: %v; want a conflict naming the file", err)
	}
	if data, _ := os.ReadFile(path); string(data) != body {
		t.Errorf("the file changed: %q", data)
	}
}
