package main

// A misbehaving external stdio server, on both paths (the fast lane and
// --fast-lane=false), which must answer alike: the built binary in front
// of testdata/upstream -misbehave, spoken to in raw JSON-RPC lines so that
// the answers' bytes can be checked.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rawServe is `agentctl mcp serve` spoken to a line at a time.
type rawServe struct {
	t      *testing.T
	stdin  io.WriteCloser
	lines  chan map[string]any
	raw    map[string]string // each answer's line, by its id
	seen   []map[string]any  // lines read while awaiting others
	stderr *lockedBuffer
	dir    string // the instance's directory
	nextID int
}

// startRawServe creates an instance whose one external server is the test
// upstream with -misbehave and the given mount JSON members (e.g.
// `"call_timeout":"200ms"`), serves it with the fast lane on or off and
// initializes a session.
func startRawServe(t *testing.T, mountJSON string, lane bool) *rawServe {
	t.Helper()
	return startRawServeArgs(t, nil, mountJSON, lane)
}

// startRawServeArgs is startRawServe with more arguments for the upstream.
func startRawServeArgs(t *testing.T, args []string, mountJSON string, lane bool) *rawServe {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	t.Cleanup(cancel)
	e := newRCEnv(t)
	argsJSON, _ := json.Marshal(append([]string{"-misbehave", "-tools", "1"}, args...))
	spec := fmt.Sprintf(`{"command":%q,"args":%s%s}`, serverBin(t), argsJSON, mountJSON)
	rec := e.create(ctx, "--agent", "codex", "--workspace", e.work, "--mcp-json", "up="+spec)
	cmd := exec.CommandContext(ctx, e.bin, "mcp", "serve", "--instance", rec.ID, "--fast-lane="+strconv.FormatBool(lane))
	cmd.Env, cmd.Dir = e.cliEnv(), e.work
	s := &rawServe{t: t, lines: make(chan map[string]any, 64), raw: map[string]string{}, stderr: &lockedBuffer{}, dir: rec.Dir, nextID: 100}
	cmd.Stderr = s.stderr
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rawLines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			rawLines <- sc.Text()
		}
		close(rawLines)
	}()
	go func() {
		for line := range rawLines {
			var m map[string]any
			dec := json.NewDecoder(strings.NewReader(line))
			dec.UseNumber() // 1e400 is no float64
			if err := dec.Decode(&m); err != nil {
				m = map[string]any{"unparsable": line}
			}
			m["_line"] = line
			s.lines <- m
		}
		close(s.lines)
	}()
	t.Cleanup(func() {
		s.stdin.Close()
		if err := cmd.Wait(); err != nil && ctx.Err() == nil {
			t.Errorf("mcp serve: %v\nstderr:\n%s", err, s.stderr)
		}
	})
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	s.answer(1)
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`) // waits for the server's first connection
	s.answer(2)
	return s
}

func (s *rawServe) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		s.t.Fatalf("write to mcp serve: %v", err)
	}
}

// call sends a tools/call and returns its id.
func (s *rawServe) call(name, args string) int {
	s.t.Helper()
	s.nextID++
	s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, s.nextID, name, args))
	return s.nextID
}

// await returns the first line (read now or before) that match accepts.
func (s *rawServe) await(what string, match func(map[string]any) bool) map[string]any {
	s.t.Helper()
	for i, m := range s.seen {
		if match(m) {
			s.seen = append(s.seen[:i], s.seen[i+1:]...)
			return m
		}
	}
	deadline := time.After(rcTimeout) // a backstop: every awaited line comes
	for {
		select {
		case m, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("mcp serve ended before %s\nstderr:\n%s", what, s.stderr)
			}
			if match(m) {
				return m
			}
			s.seen = append(s.seen, m)
		case <-deadline:
			s.t.Fatalf("no %s\nstderr:\n%s", what, s.stderr)
		}
	}
}

// forget drops the notifications of method read so far.
func (s *rawServe) forget(method string) {
	kept := s.seen[:0]
	for _, m := range s.seen {
		if m["method"] != method {
			kept = append(kept, m)
		}
	}
	s.seen = kept
}

// answer awaits the answer to id.
func (s *rawServe) answer(id int) map[string]any {
	s.t.Helper()
	return s.await(fmt.Sprintf("answer to %d", id), func(m map[string]any) bool {
		got, ok := m["id"].(json.Number)
		return ok && got.String() == strconv.Itoa(id) && m["method"] == nil
	})
}

// toolText is the text of a call's result and whether it is a tool error;
// it fails the test on a protocol error.
func (s *rawServe) toolText(id int) (string, bool) {
	s.t.Helper()
	m := s.answer(id)
	res, ok := m["result"].(map[string]any)
	if !ok {
		s.t.Fatalf("call %d: no result: %s", id, m["_line"])
	}
	content, _ := res["content"].([]any)
	if len(content) != 1 {
		s.t.Fatalf("call %d: content %v", id, content)
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	isErr, _ := res["isError"].(bool)
	return text, isErr
}

// result is a call's text, failing the test unless it succeeded.
func (s *rawServe) result(id int) string {
	s.t.Helper()
	text, isErr := s.toolText(id)
	if isErr {
		s.t.Fatalf("call %d: tool error %q", id, text)
	}
	return text
}

// pid is the upstream's process id, which changes if it is restarted.
func (s *rawServe) pid() string {
	s.t.Helper()
	return s.result(s.call("pid", "{}"))
}

// serverLog awaits text in the instance's upstreams.log (the servers'
// stderr and agentctl's reports about them).
func (s *rawServe) serverLog(text string) {
	s.t.Helper()
	file := filepath.Join(s.dir, "upstreams.log")
	deadline := time.Now().Add(rcTimeout) // a backstop: the line comes
	for {
		b, _ := os.ReadFile(file)
		if strings.Contains(string(b), text) {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s never held %q; it holds:\n%s", file, text, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBothPathsSkipsABrokenLine: a server's line cut short fails the call
// it answers (its id is read from what is there) and nothing else: a call
// in flight meanwhile is answered, later calls are, tools/list_changed
// still arrives, the server is not restarted, and the problem is reported
// in the log and by get_instance (the server's "error" while it is up). Before, go-sdk's stream decoder waited
// for the server's next output and then failed every call in flight.
func TestBothPathsSkipsABrokenLine(t *testing.T) {
	for _, lane := range []bool{false, true} {
		t.Run(pathName(lane), func(t *testing.T) {
			t.Parallel()
			s := startRawServe(t, "", lane)
			pid := s.pid()
			slow := s.call("slow", `{"ms":300}`)
			cut := s.call("truncate_answer", "{}")
			garbage := s.call("garbage_line", "{}") // a cut-short line without an id, then its answer
			text, isErr := s.toolText(cut)
			if want := `MCP server "up" sent a line that is not JSON; agentctl skipped it, so this call failed (the server keeps running)`; !isErr || text != want {
				t.Fatalf("the cut-short answer: isError %v, %q", isErr, text)
			}
			if got := s.result(garbage); got != "garbage written" {
				t.Fatalf("the call after an id-less broken line: %q", got)
			}
			if got := s.result(slow); got != "slow: done after 300ms" {
				t.Fatalf("the call in flight meanwhile: %q", got)
			}
			s.forget("notifications/tools/list_changed") // the one of the server's start
			changed := s.call("change_tools", "{}")
			s.result(changed)
			s.await("tools/list_changed", func(m map[string]any) bool { return m["method"] == "notifications/tools/list_changed" })
			s.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
			if line := s.answer(3)["_line"].(string); !strings.Contains(line, `"name":"tool_new"`) {
				t.Fatalf("tools/list after the change: %s", line)
			}
			if got := s.pid(); got != pid {
				t.Fatalf("the server was restarted: pid %s, then %s", pid, got)
			}
			info := s.result(s.call("get_instance_agentctl", "{}"))
			var inst struct {
				Servers []struct {
					State, Error string
				} `json:"mcp_servers"`
			}
			if err := json.Unmarshal([]byte(info), &inst); err != nil || len(inst.Servers) != 1 {
				t.Fatalf("get_instance: %v\n%s", err, info)
			}
			if st := inst.Servers[0]; st.State != "up" || !strings.Contains(st.Error, "of its output was a line that is not JSON") {
				t.Fatalf("get_instance's server: %+v", st)
			}
			s.serverLog("of its output was a line that is not JSON")
			if !strings.Contains(s.stderr.String(), "MCP server wrote output agentctl could not read") {
				t.Fatalf("no report on stderr:\n%s", s.stderr)
			}
		})
	}
}

// TestBothPathsForwardsServerErrors: a server's JSON-RPC error is its
// answer, forwarded with its code, message and data, whatever the code,
// including those go-sdk uses for its own transport failures (-32001,
// -32003, -32004), which used to restart the server.
func TestBothPathsForwardsServerErrors(t *testing.T) {
	for _, lane := range []bool{false, true} {
		t.Run(pathName(lane), func(t *testing.T) {
			t.Parallel()
			s := startRawServe(t, "", lane)
			pid := s.pid()
			for _, code := range []int{-32001, -32003, -32004, -32603, 7} {
				id := s.call("rpc_error", fmt.Sprintf(`{"code":%d}`, code))
				line := s.answer(id)["_line"].(string)
				want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":{"code":%d,"message":"upstream error %d","data":{"detail":"kept"}}}`, id, code, code)
				if line != want {
					t.Fatalf("code %d:\n got %s\nwant %s", code, line, want)
				}
			}
			if got := s.pid(); got != pid {
				t.Fatalf("the server was restarted: pid %s, then %s", pid, got)
			}
		})
	}
}

// TestBothPathsCallTimeout: a call the server does not answer within the
// mount's call_timeout fails with a tool error naming the server, the
// timeout and how to raise it; the server gets the cancellation and is
// kept.
func TestBothPathsCallTimeout(t *testing.T) {
	for _, lane := range []bool{false, true} {
		t.Run(pathName(lane), func(t *testing.T) {
			t.Parallel()
			s := startRawServe(t, `,"call_timeout":"200ms"`, lane)
			pid := s.pid()
			text, isErr := s.toolText(s.call("hang", "{}"))
			if !isErr || !strings.Contains(text, `MCP server "up" did not answer within 200ms`) || !strings.Contains(text, "call_timeout") {
				t.Fatalf("the call that never returns: isError %v, %q", isErr, text)
			}
			s.serverLog("[up] hang cancelled")
			if got := s.pid(); got != pid {
				t.Fatalf("the server was restarted: pid %s, then %s", pid, got)
			}
		})
	}
}

// TestBothPathsAnswerOverTheLimit: an answer over 16 MiB fails its call
// alone, with the sizes; the server is kept and answers the next call.
// Before, it ended the connection and restarted the server.
func TestBothPathsAnswerOverTheLimit(t *testing.T) {
	for _, lane := range []bool{false, true} {
		t.Run(pathName(lane), func(t *testing.T) {
			t.Parallel()
			s := startRawServe(t, "", lane)
			pid := s.pid()
			text, isErr := s.toolText(s.call("big", fmt.Sprintf(`{"bytes":%d}`, 17<<20)))
			if !isErr || !strings.Contains(text, `MCP server "up" sent an answer of `) || !strings.Contains(text, "over the limit of 16777216") {
				t.Fatalf("the huge answer: isError %v, %q", isErr, text)
			}
			if got := s.pid(); got != pid {
				t.Fatalf("the server was restarted: pid %s, then %s", pid, got)
			}
		})
	}
}

// TestBothPathsKeepsNumbers: structuredContent reaches the client as the
// server wrote it: no number rounded to a float64 (12345678901234567890,
// 0.30000000000000004) nor refused (1e400).
func TestBothPathsKeepsNumbers(t *testing.T) {
	for _, lane := range []bool{false, true} {
		t.Run(pathName(lane), func(t *testing.T) {
			t.Parallel()
			s := startRawServe(t, "", lane)
			line := s.answer(s.call("numbers", "{}"))["_line"].(string)
			want := `"structuredContent":{"big":12345678901234567890,"huge":1e400,"tenth":0.1,"sum":0.30000000000000004}`
			if !strings.Contains(line, want) {
				t.Fatalf("got  %s\nwant it to hold %s", line, want)
			}
		})
	}
}

// TestSDKPathMisbehavingServerTSClient: what a real independent client
// (the TypeScript SDK) sees of a call past its call_timeout and of a
// server's error with a code go-sdk also uses for itself, lane off.
func TestSDKPathMisbehavingServerTSClient(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	// call_timeout bounds every call of the mount: long enough for the
	// calls that must answer on a loaded machine, short for the one that hangs.
	spec := fmt.Sprintf(`{"command":%q,"args":["-misbehave","-tools","0"],"call_timeout":"3s"}`, serverBin(t))
	rec := e.create(ctx, "--agent", "codex", "--workspace", e.work, "--mcp-json", "up="+spec)
	out := runTS(ctx, t, tsPlan{
		Command: e.bin, Args: []string{"mcp", "serve", "--instance", rec.ID, "--fast-lane=false"},
		Steps: []tsStep{
			{Op: "call", Name: "hang", Arguments: map[string]any{}},
			{Op: "call", Name: "rpc_error", Arguments: map[string]any{"code": -32003}},
			{Op: "call", Name: "echo", Arguments: map[string]any{"text": "still up"}},
		},
	}, e.work, e.cliEnv())
	hang := out.result(t, 0, "call")
	if hang.Result == nil || !hang.Result.IsError || !strings.Contains(hang.Result.String(), `did not answer within 3s`) {
		t.Fatalf("the call past its timeout: %s", hang)
	}
	wantCallError(t, out.result(t, 1, "call"), -32003)
	var echo struct{ Text string }
	structured(t, out.result(t, 2, "call"), &echo)
	if echo.Text != "still up" {
		t.Fatalf("echo after them: %+v", echo)
	}
}

// pathName names a test's path: the fast lane or the SDK path.
func pathName(lane bool) string {
	if lane {
		return "lane"
	}
	return "sdk"
}
