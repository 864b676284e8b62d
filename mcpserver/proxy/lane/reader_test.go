package lane

import (
	"io"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestLaneFailsACallWhoseAnswerIsUnreadable: a lane call whose answer its
// server's connection could not read (a line cut short, over the limit,
// no JSON-RPC message: package proxy says which) fails alone, with the SDK
// path's words; an unreadable answer to a call of the SDK's is not the
// lane's; the calls after it are answered, an error as go-sdk read it.
func TestLaneFailsACallWhoseAnswerIsUnreadable(t *testing.T) {
	t.Parallel()
	var client testkit.Buffer
	l, link := laneWithTool(t, io.Discard, &client)
	for _, id := range []string{`1`, `2`, `3`} {
		if !l.fromLine([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)) {
			t.Fatal("the lane did not take the call")
		}
	}
	id := func(v any) jsonrpc.ID {
		id, err := jsonrpc.MakeID(v)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	if !l.Answer(link, &jsonrpc.Response{ID: id("agentctl-call-1")}, "a line that is not JSON") {
		t.Fatal("the lane left the failure of its call to the SDK")
	}
	if l.Answer(link, &jsonrpc.Response{ID: id(float64(7))}, "a line that is not JSON") {
		t.Fatal("the lane took the failure of the SDK's call")
	}
	if !l.takeLine([]byte(`{"jsonrpc":"2.0","id":"agentctl-call-2","result":{"content":[{"type":"text","text":"two"}]}}`)) ||
		!l.takeLine([]byte(`{"jsonrpc":"2.0","id":"agentctl-call-3","error":{"code":-32602,"message":"bad","data":{"n":12345678901234567890},"x":1}}`)) {
		t.Fatal("the lane did not take its answers")
	}
	answers := strings.Split(strings.TrimSpace(client.String()), "\n")
	if len(answers) != 3 ||
		!strings.Contains(answers[0], `"id":1,`) || !strings.Contains(answers[0], `MCP server \"up\" sent a line that is not JSON; agentctl skipped it, so this call failed (the server keeps running)`) || !strings.Contains(answers[0], `"isError":true`) ||
		answers[1] != `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"two"}]}}` ||
		answers[2] != `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad","data":{"n":12345678901234567890}}}` {
		t.Fatalf("the client got:\n%s", client.String())
	}
	if s := l.Stats(); s.InFlight != 0 {
		t.Fatalf("%d calls still in flight", s.InFlight)
	}
}
