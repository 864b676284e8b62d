package mcpserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/agentctl/agentctl/mcpserver/proxy"
)

// plantedStdioSecret is in a stdio server's env, which the server prints.
const plantedStdioSecret = "plantedStdioSecret"

// instanceServers is get_instance's mcp_servers, from its text (the JSON
// a model reads) and its structured content, which must agree.
func instanceServers(t *testing.T, p *proxyEnv) []proxy.ServerStatus {
	t.Helper()
	r, err := p.call(t, "get_instance", nil)
	if err != nil || r.IsError {
		t.Fatalf("get_instance: %v %+v", err, r)
	}
	text := resultText(r)
	if strings.Contains(text, plantedStdioSecret) {
		t.Fatalf("get_instance shows the secret:\n%s", text)
	}
	var fromText, fromStructured InstanceOutput
	if err := json.Unmarshal([]byte(text), &fromText); err != nil {
		t.Fatalf("get_instance's text is not JSON: %v\n%s", err, text)
	}
	b, _ := json.Marshal(r.StructuredContent)
	if err := json.Unmarshal(b, &fromStructured); err != nil || !slices.EqualFunc(fromText.MCPServers, fromStructured.MCPServers, func(a, b proxy.ServerStatus) bool {
		return a.State == b.State && slices.Equal(a.StderrTail, b.StderrTail)
	}) {
		t.Fatalf("get_instance's structured content %s differs from its text %s (%v)", b, text, err)
	}
	return fromText.MCPServers
}

// TestFailedServerShowsItsStderr: a server that fails at start, or crashes
// later, is shown down with the last lines of its stderr, by get_instance
// and the health, on both paths; its secrets are taken out, bytes that are
// not UTF-8 replaced, control characters kept for JSON to escape. While it
// is up the tail is not shown.
func TestFailedServerShowsItsStderr(t *testing.T) {
	forEachPath(t, func(t *testing.T, path servePath) {
		dir := t.TempDir()
		flag, pidfile := filepath.Join(dir, "fail"), filepath.Join(dir, "pid")
		m := withBin(t, mcpMount("up", "-stderr-env", "API_TOKEN", "-stderr-quoted", `"\x1b[31mred\xff\n"`,
			"-stderr", "upstream: starting", "-flag-file", flag, "-pidfile", pidfile))
		m.Env = map[string]string{"API_TOKEN": plantedStdioSecret}
		p := startProxyOn(t, path, mount.PrefixModeMountName, m)
		testkit.Eventually(t, "the server's tools", func() bool { return p.ep.Registry().Has("echo") })
		if st := instanceServers(t, p)[0]; st.State != proxy.StateUp || st.StderrTail != nil {
			t.Fatalf("an up server: %+v", st)
		}
		pid := testkit.WaitPID(t, pidfile)
		// It crashes, and its restarts fail at start.
		if err := os.WriteFile(flag, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if r, err := p.call(t, "crash", nil); err != nil || !r.IsError {
			t.Fatalf("crash: %v %+v", err, r)
		}
		testkit.Eventually(t, "the restart that fails", func() bool { return testkit.WaitPID(t, pidfile) != pid })
		// The first process's lines, then each failed restart's.
		first := []string{"API_TOKEN=<redacted>", "\x1b[31mred\uFFFD", "upstream: starting", "upstream: crash tool called"}
		restart := first[:3]
		var st proxy.ServerStatus
		testkit.Eventually(t, "the server down, its stderr shown", func() bool {
			st = instanceServers(t, p)[0]
			return st.State == proxy.StateDown && len(st.StderrTail) > len(first)
		})
		if tail := st.StderrTail; !slices.Equal(tail[:4], first) || !slices.Equal(tail[len(tail)-3:], restart) {
			t.Fatalf("stderr_tail:\n%q\nwant\n%q, then %q for each restart", tail, first, restart)
		}
		h, _ := json.Marshal(p.ep.Health())
		if !strings.Contains(string(h), `"stderr_tail":["API_TOKEN=\u003credacted\u003e","\u001b[31mred`) || strings.Contains(string(h), plantedStdioSecret) {
			t.Fatalf("health: %s", h)
		}
	})
}

// TestSDKPathServerNotReadingItsInput: on the SDK path, a call that a
// server does not take (it stopped reading its input, its pipe is full)
// fails after the write bound with the fast lane's words; the call it had
// taken fails as after a crash; the endpoint answers meanwhile, and the
// server is restarted and answers again. Before, the call, and every later
// one to the server, hung for ever.
func TestSDKPathServerNotReadingItsInput(t *testing.T) {
	t.Parallel()
	pidfile := filepath.Join(t.TempDir(), "pid")
	m := withBin(t, mcpMount("up", "-stop-reading", "-pidfile", pidfile))
	p := startProxyWith(t, viaSDK, func(c *Config) { c.ServerWriteTimeout = 300 * time.Millisecond }, mount.PrefixModeMountName, m)
	testkit.Eventually(t, "the server's tools", func() bool { return p.ep.Registry().Has("echo") })
	pid := testkit.WaitPID(t, pidfile)

	type answer struct {
		text  string
		isErr bool
		err   error
	}
	callAsync := func(text string) chan answer {
		ch := make(chan answer, 1)
		go func() {
			r, err := p.call(t, "echo", map[string]any{"text": text})
			if err != nil {
				ch <- answer{err: err}
				return
			}
			ch <- answer{text: resultText(r), isErr: r.IsError}
		}()
		return ch
	}
	deaf := callAsync("STOP-READING")
	testkit.Eventually(t, "the server to stop reading", func() bool { return strings.Contains(p.log.String(), "[up] upstream: no longer reading stdin") })
	stuck := callAsync(strings.Repeat("x", 4<<20)) // far more than a pipe holds
	// The endpoint answers meanwhile.
	if r, err := p.call(t, "get_instance", nil); err != nil || r.IsError {
		t.Fatalf("get_instance meanwhile: %v %+v", err, r)
	}
	wait := func(ch chan answer) answer {
		select {
		case a := <-ch:
			return a
		case <-time.After(time.Minute):
			t.Fatal("a call to a server that does not read its input never ended")
		}
		return answer{}
	}
	a := wait(stuck)
	if want := `MCP server "up" did not get the call: it is not reading its input (a message waited 300ms for it); agentctl is restarting it`; a.err != nil || !a.isErr || a.text != want {
		t.Fatalf("the call the server did not take: %+v\nwant the tool error %q", a, want)
	}
	a = wait(deaf)
	if want := `MCP server "up" failed during the call: agentctl stopped it: it is not reading its input (a message waited 300ms for it); agentctl is restarting it`; a.err != nil || !a.isErr || a.text != want {
		t.Fatalf("the call the server had taken: %+v\nwant the tool error %q", a, want)
	}
	testkit.Eventually(t, "a restarted server", func() bool {
		return testkit.WaitPID(t, pidfile) != pid && p.ep.Registry().Has("echo") && p.ep.ServerStatuses()[0].State == proxy.StateUp
	})
	r, err := p.call(t, "echo", map[string]any{"text": "again"})
	if err != nil || r.IsError || resultText(r) != "again" {
		t.Fatalf("after the restart: %v %+v", err, r)
	}
	if !strings.Contains(p.stderr.String(), "MCP server is not reading its input; stopping it, to start it again") {
		t.Fatalf("the endpoint's log:\n%s", p.stderr)
	}
	if testkit.Alive(pid) {
		t.Fatalf("the server that stopped reading (%s) is still running", strconv.Itoa(pid))
	}
}
