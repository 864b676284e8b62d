package lane

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStopAsTheSDKDoes pins the lane's copy of go-sdk's stdio shutdown
// (processStdin.stop, from go-sdk v1.8.0 pipeRWC.Close): the same servers
// stopped by the lane's transport and by mcp.CommandTransport end the same
// way, and that way shows the order: a server that reads its input ends
// when it is closed; one that does not is sent SIGTERM; one that ignores
// SIGTERM too is killed.
func TestStopAsTheSDKDoes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("signals")
	}
	t.Parallel()
	// How long each step waits for the server: a backstop, as these
	// servers end at once (or set their trap at once).
	const grace = time.Second
	servers := []struct {
		what, script, want string // want: what Close returns
	}{
		{"reads its input", `cat >/dev/null`, "<nil>"},
		{"ignores its closed input", `exec 0</dev/null; while :; do sleep 0.05; done`, "signal: terminated"},
		{"ignores SIGTERM too", `trap '' TERM; exec 0</dev/null; while :; do sleep 0.05; done`, "signal: killed"},
	}
	for _, s := range servers {
		for _, sdk := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/sdk=%v", s.what, sdk), func(t *testing.T) {
				t.Parallel()
				cmd := exec.Command("/bin/sh", "-c", s.script)
				var tr mcp.Transport = &commandTransport{lane: New(Options{}), cmd: cmd, server: "s", terminate: grace}
				if sdk {
					tr = &mcp.CommandTransport{Command: cmd, TerminateDuration: grace}
				}
				conn, err := tr.Connect(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if got := fmt.Sprint(conn.Close()); got != s.want {
					t.Fatalf("Close: %s, want %s", got, s.want)
				}
			})
		}
	}
}
