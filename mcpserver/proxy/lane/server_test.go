package lane

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStopAsTheSDKDoes pins the lane's copy of go-sdk's stdio shutdown
// (processStdin.stop, from go-sdk v1.8.0 pipeRWC.Close): the same servers
// stopped by the lane's transport and by mcp.CommandTransport end the same
// way: on their closed input; on SIGTERM when they ignore it; killed when
// they ignore SIGTERM too.
func TestStopAsTheSDKDoes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("signals")
	}
	t.Parallel()
	const grace = 100 * time.Millisecond
	type outcome struct {
		err  string // what Close returns
		term bool   // the server got SIGTERM
	}
	servers := []struct {
		what, script string
		want         outcome
	}{
		{"reads its input", `cat >/dev/null`, outcome{"<nil>", false}},
		{"ignores its closed input", `trap 'echo term > "$1"; exit 0' TERM; exec 0</dev/null; while :; do sleep 0.02; done`, outcome{"<nil>", true}},
		{"ignores SIGTERM too", `trap 'echo term > "$1"' TERM; exec 0</dev/null; while :; do sleep 0.02; done`, outcome{"signal: killed", true}},
	}
	for _, s := range servers {
		t.Run(s.what, func(t *testing.T) {
			t.Parallel()
			stop := func(sdk bool) outcome {
				marker := filepath.Join(t.TempDir(), "term")
				cmd := exec.Command("/bin/sh", "-c", s.script, "sh", marker)
				var tr mcp.Transport
				if sdk {
					tr = &mcp.CommandTransport{Command: cmd, TerminateDuration: grace}
				} else {
					tr = &commandTransport{lane: New(Options{}), cmd: cmd, server: "s", terminate: grace}
				}
				conn, err := tr.Connect(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				_, statErr := os.Stat(marker)
				return outcome{fmt.Sprint(conn.Close()), func() bool { _, err := os.Stat(marker); return err == nil }() && statErr != nil}
			}
			lane, sdk := stop(false), stop(true)
			if lane != sdk || lane != s.want {
				t.Fatalf("stopped by the lane: %+v; by go-sdk: %+v; want %+v", lane, sdk, s.want)
			}
		})
	}
}
