package lane

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"testing"
)

// readServerLines runs readServer on out and returns what went to the SDK's
// session.
func readServerLines(t *testing.T, l *Lane, link *serverLink, out string, max int) []string {
	t.Helper()
	pr, pw := io.Pipe()
	got := make(chan []string)
	go func() {
		var lines []string
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		got <- lines
	}()
	err := l.readServer(link, strings.NewReader(out), pw, max)
	pw.CloseWithError(err)
	if err != nil {
		t.Fatalf("readServer: %v", err)
	}
	return <-got
}

// TestLaneRecoversFromABrokenServerLine: a line cut short fails only the
// call its id names (the lane's with a tool error to the client, the SDK's
// with an error answer to its session), and the lines after it, a
// notification and the answer to another call, go where they belong.
func TestLaneRecoversFromABrokenServerLine(t *testing.T) {
	t.Parallel()
	var client syncBuffer
	l, link := laneWithTool(t, io.Discard, &client)
	for _, id := range []string{`1`, `2`} {
		if !l.FromClient([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)) {
			t.Fatal("the lane did not take the call")
		}
	}
	out := `{"jsonrpc":"2.0","id":"agentctl-call-1","result":{"content":[{"type":"te` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n" +
		`{"jsonrpc":"2.0","id":7,"result":{"cont` + "\n" +
		`this is not JSON` + "\n" +
		`{"jsonrpc":"2.0","id":"agentctl-call-2","result":{"content":[{"type":"text","text":"two"}]}}` + "\n"
	sdk := readServerLines(t, l, link, out, 0)
	answers := strings.Split(strings.TrimSpace(client.String()), "\n")
	if len(answers) != 2 ||
		!strings.Contains(answers[0], `"id":1,`) || !strings.Contains(answers[0], `MCP server \"up\" sent a line that is not JSON; agentctl skipped it, so this call failed (the server keeps running)`) || !strings.Contains(answers[0], `"isError":true`) ||
		!strings.Contains(answers[1], `"id":2,`) || !strings.Contains(answers[1], `"text":"two"`) {
		t.Fatalf("the client got:\n%s", client.String())
	}
	if len(sdk) != 2 || sdk[0] != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` ||
		!strings.Contains(sdk[1], `"id":7`) || !strings.Contains(sdk[1], `"code":-32603`) || !strings.Contains(sdk[1], `MCP server \"up\" sent a line that is not JSON`) {
		t.Fatalf("the SDK got:\n%s", strings.Join(sdk, "\n"))
	}
	if s := l.Stats(); s.InFlight != 0 {
		t.Fatalf("%d calls still in flight", s.InFlight)
	}
}

// TestLaneFailsAnAnswerOverTheLimit: an answer longer than the limit fails
// its call with an error naming the server and the limit, is never held
// whole, and reading goes on.
func TestLaneFailsAnAnswerOverTheLimit(t *testing.T) {
	t.Parallel()
	var client syncBuffer
	l, link := laneWithTool(t, io.Discard, &client)
	for _, id := range []string{`1`, `2`} {
		if !l.FromClient([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)) {
			t.Fatal("the lane did not take the call")
		}
	}
	const max = 256 << 10
	huge := `{"jsonrpc":"2.0","id":"agentctl-call-1","result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 4*max) + `"}]}}`
	out := huge + "\n" + `{"jsonrpc":"2.0","id":"agentctl-call-2","result":{"content":[{"type":"text","text":"two"}]}}` + "\n"
	readServerLines(t, l, link, out, max)
	answers := strings.Split(strings.TrimSpace(client.String()), "\n")
	want := fmt.Sprintf(`MCP server \"up\" sent an answer of %d bytes, over the limit of %d (ask the tool for less); agentctl skipped it, so this call failed (the server keeps running)`, len(huge)+1, max)
	if len(answers) != 2 || !strings.Contains(answers[0], `"id":1,`) || !strings.Contains(answers[0], want) ||
		!strings.Contains(answers[1], `"text":"two"`) {
		t.Fatalf("the client got:\n%.2000s\nwant the first to say %s", client.String(), want)
	}
}

// TestLaneSkipsALineThatIsNoJSONRPCMessage: JSON that go-sdk cannot read as
// a JSON-RPC message (an answer without an id, an error whose code is no
// integer, a line of two values) is skipped as on the SDK path, never
// handed to the SDK's session (whose reader it would end), and fails the
// lane call whose id it names; the calls after it are answered.
func TestLaneSkipsALineThatIsNoJSONRPCMessage(t *testing.T) {
	t.Parallel()
	var client syncBuffer
	l, link := laneWithTool(t, io.Discard, &client)
	for _, id := range []string{`1`, `2`, `3`} {
		if !l.FromClient([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)) {
			t.Fatal("the lane did not take the call")
		}
	}
	out := `{"jsonrpc":"2.0","result":{"content":[]}}` + "\n" +
		`{"jsonrpc":"2.0","id":"agentctl-call-1","error":{"code":1.5,"message":"x"}}` + "\n" +
		`{"jsonrpc":"2.0","id":"agentctl-call-2","result":{"content":[]}}0` + "\n" +
		`{"jsonrpc":"2.0","id":"agentctl-call-3","error":{"code":-32602,"message":"bad","data":{"n":12345678901234567890},"x":1}}` + "\n"
	if sdk := readServerLines(t, l, link, out, 0); len(sdk) != 0 {
		t.Fatalf("the SDK got:\n%s", strings.Join(sdk, "\n"))
	}
	answers := strings.Split(strings.TrimSpace(client.String()), "\n")
	if len(answers) != 3 ||
		!strings.Contains(answers[0], `"id":1,`) || !strings.Contains(answers[0], `sent a line that is not a JSON-RPC message`) ||
		!strings.Contains(answers[1], `"id":2,`) || !strings.Contains(answers[1], `sent a line that is not JSON`) ||
		answers[2] != `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad","data":{"n":12345678901234567890}}}` {
		t.Fatalf("the client got:\n%s", client.String())
	}
}
