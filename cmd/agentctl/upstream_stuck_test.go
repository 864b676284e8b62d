package main

// A failing external server's stderr, and a server that stops reading its
// input, through the built binary (issue 22, item 7), spoken to in raw
// JSON-RPC lines (rawServe, upstream_misbehave_test.go).

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBothPathsShowAFailedServersStderr: get_instance shows a server that
// crashed, and whose restarts fail, down with the last lines of its
// stderr, the secret it printed taken out.
func TestBothPathsShowAFailedServersStderr(t *testing.T) {
	const secret = "plantedServeToken"
	for _, lane := range []bool{false, true} {
		t.Run(pathName(lane), func(t *testing.T) {
			t.Parallel()
			flag := filepath.Join(t.TempDir(), "fail")
			s := startRawServeArgs(t, []string{"-stderr-env", "API_TOKEN", "-stderr", "upstream: starting", "-flag-file", flag},
				`,"env":{"API_TOKEN":"`+secret+`"}`, lane)
			s.pid()
			if err := os.WriteFile(flag, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, isErr := s.toolText(s.call("crash", "{}")); !isErr {
				t.Fatal("the crash was not a tool error")
			}
			deadline := time.Now().Add(rcTimeout) // a backstop: the restart fails at once
			for {
				id := s.call("get_instance_agentctl", "{}")
				line := s.answer(id)["_line"].(string)
				if strings.Contains(line, secret) {
					t.Fatalf("get_instance shows the secret: %s", line)
				}
				var inst struct {
					Servers []struct {
						State      string   `json:"state"`
						StderrTail []string `json:"stderr_tail"`
					} `json:"mcp_servers"`
				}
				var res struct {
					Result struct {
						Content []struct{ Text string } `json:"content"`
					} `json:"result"`
				}
				if err := json.Unmarshal([]byte(line), &res); err != nil || len(res.Result.Content) != 1 || json.Unmarshal([]byte(res.Result.Content[0].Text), &inst) != nil {
					t.Fatalf("get_instance: %v %s", err, line)
				}
				st := inst.Servers[0]
				// The first process's lines, its crash, then a restart's.
				if want := []string{"API_TOKEN=<redacted>", "upstream: starting", "upstream: crash tool called", "API_TOKEN=<redacted>", "upstream: starting"}; st.State == "down" && len(st.StderrTail) >= len(want) {
					if !slices.Equal(st.StderrTail[:len(want)], want) {
						t.Fatalf("stderr_tail %q, want it to start %q", st.StderrTail, want)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the server is never shown down with its stderr: %s", line)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// TestSDKPathServerStopsReading: with the fast lane off, a server that
// stops reading its input fails the call it does not take once the
// mount's timeout (10s by default) is over, with the lane's words, and
// the call it had taken as after a crash; the endpoint answers meanwhile
// and goes on, and the server is restarted. Before, the call waited for
// ever, and so did every later call to the server.
func TestSDKPathServerStopsReading(t *testing.T) {
	t.Parallel()
	s := startRawServeArgs(t, []string{"-stop-reading"}, "", false)
	pid := s.pid()
	deaf := s.call("echo", `{"text":"STOP-READING"}`)
	s.serverLog("[up] upstream: no longer reading stdin")
	stuck := s.call("echo", `{"text":"`+strings.Repeat("x", 4<<20)+`"}`) // far more than a pipe holds
	// The endpoint answers meanwhile.
	if text := s.result(s.call("get_instance_agentctl", "{}")); !strings.Contains(text, `"mcp_servers"`) {
		t.Fatalf("get_instance meanwhile: %s", text)
	}
	text, isErr := s.toolText(stuck)
	if want := `MCP server "up" did not get the call: it is not reading its input (a message waited 10s for it); agentctl is restarting it`; !isErr || text != want {
		t.Fatalf("the call the server did not take: isError %v, %q\nwant %q", isErr, text, want)
	}
	text, isErr = s.toolText(deaf)
	if want := `MCP server "up" failed during the call: agentctl stopped it: it is not reading its input (a message waited 10s for it); agentctl is restarting it`; !isErr || text != want {
		t.Fatalf("the call the server had taken: isError %v, %q\nwant %q", isErr, text, want)
	}
	deadline := time.Now().Add(rcTimeout) // a backstop: the restart is quick
	for {
		// While the server restarts its tools are unknown (-32602), or
		// it is not connected (a tool error).
		m := s.answer(s.call("pid", "{}"))
		if res, ok := m["result"].(map[string]any); ok && res["isError"] == nil {
			if text := res["content"].([]any)[0].(map[string]any)["text"]; text != pid {
				break // a new process answers
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server was not restarted: %s", m["_line"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(s.stderr.String(), "MCP server is not reading its input; stopping it, to start it again") {
		t.Fatalf("no report on stderr:\n%s", s.stderr)
	}
}
