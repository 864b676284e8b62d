package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentctl/agentctl/internal/testkit"
)

// TestServeStopsServers: when the endpoint ends (end of input, SIGTERM,
// or even SIGKILL) no external server process is left behind, and the
// servers' stderr went to the instance's log file, not to stdout. (After a
// SIGKILL the test server exits on its closed stdin; the kernel's
// parent-death signal, set for every stdio server, also covers servers that
// ignore their stdin, which this test does not separately show.)
func TestServeStopsServers(t *testing.T) {
	t.Parallel()
	bin := realBinary(t)
	up := serverBin(t)
	for _, how := range []string{"eof", "sigterm", "sigkill"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pidfile := filepath.Join(dir, "pid")
			env := append(os.Environ(), "AGENTCTL_STATE_DIR="+filepath.Join(dir, "state"), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "cfg"))
			create := exec.Command(bin, "instance", "create", "--agent", "codex", "--workspace", dir,
				"--mcp", "up="+up+" -pidfile "+pidfile+" -stderr 'hello from the server'")
			create.Env = env
			out, err := create.Output()
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			id := strings.TrimSpace(string(out))

			serve := exec.Command(bin, "mcp", "serve", "--instance", id)
			serve.Env = env
			stdin, _ := serve.StdinPipe()
			stdout, _ := serve.StdoutPipe()
			if err := serve.Start(); err != nil {
				t.Fatal(err)
			}
			io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"+
				`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
				`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n")
			lines := bufio.NewScanner(stdout)
			lines.Buffer(make([]byte, 1<<20), 1<<20)
			var list string
			for lines.Scan() {
				if strings.Contains(lines.Text(), `"id":2`) {
					list = lines.Text()
					break
				}
				if strings.Contains(lines.Text(), "hello from the server") {
					t.Fatal("the server's stderr on the endpoint's stdout")
				}
			}
			// The first tools/list waits for the server's first start.
			if !strings.Contains(list, `"name":"echo"`) {
				t.Fatalf("tools/list: %s", list)
			}
			pid := testkit.WaitPID(t, pidfile)
			switch how {
			case "eof":
				stdin.Close()
			case "sigterm":
				serve.Process.Signal(syscall.SIGTERM)
			case "sigkill":
				serve.Process.Signal(syscall.SIGKILL)
			}
			err = serve.Wait()
			if how != "sigkill" && err != nil {
				t.Fatalf("serve exited with %v", err)
			}
			testkit.Eventually(t, fmt.Sprintf("server %d to exit with the endpoint (%s)", pid, how), func() bool { return !testkit.Alive(pid) })
			if how != "sigkill" {
				logData, _ := os.ReadFile(filepath.Join(dir, "state", "instances", id, "upstreams.log"))
				if !strings.Contains(string(logData), "[up] hello from the server") {
					t.Fatalf("the server's stderr not in the instance's log file: %q", logData)
				}
			}
		})
	}
}
