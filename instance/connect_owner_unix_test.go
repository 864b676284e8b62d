//go:build unix

package instance_test

import (
	"os"
	"syscall"
	"testing"

	"github.com/agentctl/agentctl/instance"
)

// TestConnectKeepsOwner: the file connect replaces keeps its owner and
// group: as root (CI), a file of another user's stays theirs.
func TestConnectKeepsOwner(t *testing.T) {
	st := openStore(t)
	rec, path, o := clientFile(t, st, "cursor", ".cursor/mcp.json", `{"mcpServers": {}}`)
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 { // as root (CI), a file of another user's stays theirs
		uid, gid = 65534, 65534
		if err := os.Chown(path, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := instance.Connect(rec, o); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if st, ok := fi.Sys().(*syscall.Stat_t); err != nil || !ok || int(st.Uid) != uid || int(st.Gid) != gid {
		t.Errorf("owner after connect: %+v, %v; want %d:%d", fi.Sys(), err, uid, gid)
	}
}
