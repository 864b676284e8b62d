package lane

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/agentctl/agentctl/mcpserver/internal/wire"
	"github.com/agentctl/agentctl/mcpserver/proxy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// routes is an Endpoint with a fixed table of external tools, looked up as
// the endpoint does (under a read lock, in a map).
type routes struct {
	mu     sync.RWMutex
	byName map[string]Route
	list   []byte
}

func (r *routes) Route(name string) (Route, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	rt, ok := r.byName[name]
	return rt, ok
}

func (r *routes) ToolsList() (uint64, []byte, bool) {
	return 1, r.list, r.list != nil
}

// laneWithTool sets up a lane in front of one external tool "echo" whose
// server's input is w, without processes or pipes.
func laneWithTool(tb testing.TB, w io.Writer, client io.Writer) (*Lane, *proxy.Link) {
	tb.Helper()
	ep := &routes{byName: map[string]Route{"echo": {Server: "up", Tool: "echo", Canonical: "echo"}}}
	l := New(Options{Endpoint: ep, Client: client, Implementation: &mcp.Implementation{Name: "agentctl", Version: "test"}})
	link := proxy.NewLink("up", w, 0)
	l.Up(link)
	l.SetSession(initializedAs("2025-11-25"))
	return l, link
}

// takeLine offers the lane a line of its server "up" as the server's
// connection does: read once, then, if the lane did not take it, as go-sdk
// reads it; what would go to the SDK's session is dropped.
func (l *Lane) takeLine(line []byte) bool {
	link := l.link("up")
	var m wire.Message
	if m.Parse(line); l.Line(link, &m) {
		return true
	}
	msg, err := jsonrpc.DecodeMessage(line)
	resp, ok := msg.(*jsonrpc.Response)
	return err == nil && ok && l.Answer(link, resp, "")
}

// fromLine offers the lane a line of the client's, read as the input
// guard reads it (which answers a cancellation with an id itself).
func (l *Lane) fromLine(line []byte) bool {
	var m wire.Message
	m.Parse(line)
	return m.Kind != wire.MisplacedID && l.FromClient(&m)
}

// initializedAs is a session the SDK has initialized with version v.
type initializedAs string

func (v initializedAs) InitializeParams() *mcp.InitializeParams {
	return &mcp.InitializeParams{ProtocolVersion: string(v)}
}

// TestLaneStuckServer: a server that stops reading its input stalls
// neither the client's other messages nor the lane: once its pipe and
// agentctl's queue to it are full, further calls get a tool error at once.
func TestLaneStuckServer(t *testing.T) {
	t.Parallel()
	stuckR, stuck, err := os.Pipe() // nobody reads: the pipe fills up
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stuckR.Close(); stuck.Close() })
	var client testkit.Buffer
	l, _ := laneWithTool(t, stuck, &client)
	l.Up(proxy.NewLink("up", stuck, 64<<10))
	done := make(chan struct{})
	calls := 0
	go func() {
		defer close(done)
		// Far more than the pipe (64 KiB on Linux) and the queue hold.
		for ; calls < 5000; calls++ {
			if !l.fromLine([]byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(calls) + `,"method":"tools/call","params":{"name":"echo","arguments":{"padding":"` + strings.Repeat("x", 100) + `"}}}` + "\n")) {
				t.Error("the lane did not take the call")
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the lane blocked on a server that does not read")
	}
	refused := strings.Count(client.String(), `MCP server \"up\" did not get the call: it is not reading its input`)
	if refused == 0 || refused == calls {
		t.Fatalf("%d of %d calls refused: the pipe and the queue should have taken some, then refused the rest", refused, calls)
	}
	if !strings.Contains(client.String(), `"isError":true`) {
		t.Fatal("refusals must be tool errors")
	}
}

// TestLaneOddAnswers: answers the lane does not read with its scanner (a
// member it does not know), or that carry "error": null, still answer the
// client's call, as the SDK path would. (An id with escapes is not looked
// for: no JSON encoder escapes the ASCII the lane's ids are made of.)
func TestLaneOddAnswers(t *testing.T) {
	t.Parallel()
	var client testkit.Buffer
	l, _ := laneWithTool(t, io.Discard, &client)
	call := func(id string) {
		t.Helper()
		if !l.fromLine([]byte(`{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"echo","arguments":{}}}`)) {
			t.Fatal("the lane did not take the call")
		}
	}
	for i, answer := range []string{
		`{"jsonrpc":"2.0","id":"agentctl-call-1","result":{"content":[{"type":"text","text":"one"}]},"error":null}`,
		`{"jsonrpc":"2.0","id":"agentctl-call-2","result":{"content":[{"type":"text","text":"two"}]},"x-extra":true}`,
	} {
		call(fmt.Sprint("c", i+1))
		if !l.takeLine([]byte(answer)) {
			t.Fatalf("answer %d went to the SDK, which would drop it", i+1)
		}
	}
	out := client.String()
	for _, want := range []string{
		`{"jsonrpc":"2.0","id":"c1","result":{"content":[{"type":"text","text":"one"}]}}`,
		`{"jsonrpc":"2.0","id":"c2","result":{"content":[{"type":"text","text":"two"}]}}`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("client got:\n%s\nwant a line %s", out, want)
		}
	}
	if l.inflight.Load() != 0 {
		t.Fatal("calls left in flight")
	}
}

// BenchmarkLaneWork is the lane's own work for one call, without any I/O:
// reading and rewriting the client's request, then the server's answer.
// It is the part of the proxy hop that agentctl's code decides; the rest is
// the operating system moving bytes (see BenchmarkProxyCall/relay in
// package mcpserver).
func BenchmarkLaneWork(b *testing.B) {
	l, link := laneWithTool(b, io.Discard, io.Discard)
	req := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"progressToken":"p-17"}}}` + "\n")
	var (
		resp []byte
		m    wire.Message // reused, as the guard and the connection reuse theirs
	)
	b.ReportAllocs()
	for i := int64(1); b.Loop(); i++ {
		if m.Parse(req); !l.FromClient(&m) {
			b.Fatal("the lane did not take the call")
		}
		resp = append(resp[:0], `{"jsonrpc":"2.0","id":"agentctl-call-`...)
		resp = strconv.AppendInt(resp, l.next.Load(), 10)
		resp = append(resp, `","result":{"content":[{"type":"text","text":"hello"}],"structuredContent":{"text":"hello"}}}`+"\n"...)
		if m.Parse(resp); !l.Line(link, &m) {
			b.Fatal("the lane did not take the answer")
		}
	}
	if l.inflight.Load() != 0 {
		b.Fatal("calls left in flight")
	}
}

// TestLaneForwardsTheMetaTheSDKPathDoes: the lane decides on _meta keys as
// proxy.ForwardsMeta does for the SDK path, also for keys written with
// escapes.
func TestLaneForwardsTheMetaTheSDKPathDoes(t *testing.T) {
	t.Parallel()
	var up testkit.Buffer
	l, _ := laneWithTool(t, &up, io.Discard)
	meta := `{"trace":"a","progress\u0054oken":"x","x\u002dmine":1,"progressToken":"p"}`
	if !l.fromLine([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":` + meta + `}}`)) {
		t.Fatal("the lane did not take the call")
	}
	// A protocol key written with escapes is one to go-sdk: without a
	// protocol version, the SDK's to judge.
	if l.fromLine([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"io.model\u0063ontextprotocol/clientInfo":{}}}}`)) {
		t.Fatal("the lane took a call with an escaped protocol key")
	}
	want := `"_meta":{"trace":"a","x\u002dmine":1,"progressToken":"agentctl-progress-1"}`
	if !strings.Contains(up.String(), want) {
		t.Fatalf("sent upstream:\n%s\nwant %s", up.String(), want)
	}
}

// TestLaneSendsNoEmptyMeta: a call whose _meta has nothing that goes
// upstream goes without _meta, as on the SDK path (proxy.ForwardedMeta is
// nil), not with an empty one. (testdata/conformance/meta*.txtar compare
// the two paths end to end.)
func TestLaneSendsNoEmptyMeta(t *testing.T) {
	t.Parallel()
	var up testkit.Buffer
	l, _ := laneWithTool(t, &up, io.Discard)
	for i, meta := range []string{`{}`, `{"progressToken":null}`, `{ "progress\u0054oken" : null }`} {
		call := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":%s}}`, i+1, meta)
		if !l.fromLine([]byte(call)) {
			t.Fatalf("the lane did not take %s", call)
		}
	}
	sent := up.String()
	if n := strings.Count(sent, `"method":"tools/call"`); n != 3 || strings.Contains(sent, "_meta") {
		t.Fatalf("sent upstream (%d calls):\n%s\nwant 3 calls without _meta", n, sent)
	}
}

// TestLaneLeavesInexactNumbersToTheSDK: the lane echoes a client's id and
// progress token as written, so it takes only those the SDK path sends
// back the same (go-sdk reads numbers through a float64): strings, and
// integers of at most 2^53 written without fraction or exponent. Every
// other number is the SDK's.
func TestLaneLeavesInexactNumbersToTheSDK(t *testing.T) {
	t.Parallel()
	l, _ := laneWithTool(t, io.Discard, io.Discard)
	l.ep.(*routes).list = []byte(`{"tools":[]}`)
	for _, c := range []struct {
		id, token string
		lane      bool
	}{
		{`"s"`, ``, true},
		{`0`, ``, true},
		{`-7`, ``, true},
		{`9007199254740992`, ``, true},
		{`-9007199254740992`, ``, true},
		{`9007199254740993`, ``, false},
		{`-9007199254740993`, ``, false},
		{`12345678901234567890`, ``, false},
		{`1.5`, ``, false},
		{`2.0`, ``, false},
		{`1e3`, ``, false},
		{`1E3`, ``, false},
		{`1`, `"k"`, true},
		{`1`, `42`, true},
		{`1`, `-9007199254740992`, true},
		{`1`, `null`, true},
		{`1`, `9007199254740993`, false},
		{`1`, `12345678901234567890`, false},
		{`1`, `-0.5`, false},
		{`1`, `1e2`, false},
		{`1`, `"k","progressToken":1.5`, false},
	} {
		meta := ""
		if c.token != "" {
			meta = `,"_meta":{"progressToken":` + c.token + `}`
		}
		callLine := `{"jsonrpc":"2.0","id":` + c.id + `,"method":"tools/call","params":{"name":"echo","arguments":{}` + meta + `}}`
		listLine := `{"jsonrpc":"2.0","id":` + c.id + `,"method":"tools/list","params":{"_meta":{}` + meta + `}}`
		if c.token != "" {
			listLine = `{"jsonrpc":"2.0","id":` + c.id + `,"method":"tools/list","params":{"_meta":{"progressToken":` + c.token + `}}}`
		}
		if got := l.fromLine([]byte(callLine)); got != c.lane {
			t.Errorf("tools/call with id %s, token %s: the lane took it: %v, want %v", c.id, c.token, got, c.lane)
		}
		if got := l.fromLine([]byte(listLine)); got != c.lane {
			t.Errorf("tools/list with id %s, token %s: the lane took it: %v, want %v", c.id, c.token, got, c.lane)
		}
	}
}

// TestLaneCancelsByValue: a cancellation names a lane call by its id's
// value, as go-sdk matches them ("c\u0033" is "c3", 6.0 and 6.5 are 6):
// the server hears of it and the client gets no answer. One that names
// no lane call goes to the SDK.
func TestLaneCancelsByValue(t *testing.T) {
	t.Parallel()
	var up, client testkit.Buffer
	l, _ := laneWithTool(t, &up, &client)
	for _, c := range []struct{ id, requestID, upID string }{
		{`"c3"`, `"c\u0033"`, "agentctl-call-1"},
		{`"c\u0034"`, `"c4"`, "agentctl-call-2"},
		{`6`, `6.0`, "agentctl-call-3"},
		{`7`, `7.5`, "agentctl-call-4"},
		{`8`, `8e0`, "agentctl-call-5"},
	} {
		if !l.fromLine([]byte(`{"jsonrpc":"2.0","id":` + c.id + `,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)) {
			t.Fatalf("the lane did not take the call %s", c.id)
		}
		if l.fromLine([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`)) {
			t.Fatal("the lane took the cancellation of a call it does not have")
		}
		if !l.fromLine([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + c.requestID + `}}`)) {
			t.Fatalf("call %s: the lane did not take the cancellation of %s", c.id, c.requestID)
		}
		if want := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"` + c.upID + `"}}`; !strings.Contains(up.String(), want) {
			t.Fatalf("call %s cancelled as %s: upstream got\n%s\nwant a line %s", c.id, c.requestID, up.String(), want)
		}
	}
	if client.String() != "" {
		t.Fatalf("the client got answers to cancelled calls:\n%s", client.String())
	}
	if n := l.inflight.Load(); n != 0 {
		t.Fatalf("%d calls left in flight", n)
	}
}

// TestLaneTakesTheLastProgressToken: of a token given twice, the last
// counts, as on the SDK path (encoding/json's rule), also when it is null:
// then the call asks for no progress.
func TestLaneTakesTheLastProgressToken(t *testing.T) {
	t.Parallel()
	var up testkit.Buffer
	l, _ := laneWithTool(t, &up, io.Discard)
	for i, meta := range []string{`{"progressToken":"a","progressToken":null}`, `{"progressToken":null,"progressToken":"b"}`} {
		if !l.fromLine([]byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":` + meta + `}}`)) {
			t.Fatal("the lane did not take the call")
		}
	}
	sent := strings.Split(strings.TrimSpace(up.String()), "\n")
	if len(sent) != 2 || strings.Contains(sent[0], "progressToken") || !strings.Contains(sent[1], `"progressToken":"agentctl-progress-1"`) {
		t.Fatalf("sent upstream:\n%s", up.String())
	}
}

// TestLaneCancelsEveryCallWithTheID: one cancellation names every call in
// flight with its id (a client may reuse an id; the input guard cancels
// them all too), however its requestId key is written; a cancellation
// that carries an id of its own cancels nothing (the guard answers it).
func TestLaneCancelsEveryCallWithTheID(t *testing.T) {
	t.Parallel()
	var up, client testkit.Buffer
	l, _ := laneWithTool(t, &up, &client)
	for range 2 {
		if !l.fromLine([]byte(`{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"echo","arguments":{}}}`)) {
			t.Fatal("the lane did not take the call")
		}
	}
	if !l.fromLine([]byte(`{"jsonrpc":"2.0","id":"other","method":"tools/call","params":{"name":"echo","arguments":{}}}`)) {
		t.Fatal("the lane did not take the call")
	}
	if !l.fromLine([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"request\u0049d":"dup"}}`)) {
		t.Fatal("the lane left the cancellation of its calls to the SDK")
	}
	for _, id := range []string{"agentctl-call-1", "agentctl-call-2"} {
		if !strings.Contains(up.String(), `"method":"notifications/cancelled","params":{"requestId":"`+id+`"}`) {
			t.Fatalf("no cancellation of %s went upstream:\n%s", id, up.String())
		}
	}
	var misplaced wire.Message
	if misplaced.Parse([]byte(`{"jsonrpc":"2.0","id":9,"method":"notifications/cancelled","params":{"requestId":"other"}}`)); l.FromClient(&misplaced) || l.Stats().InFlight != 1 {
		t.Fatal("the lane took a cancellation with an id of its own: the guard answers it, and it cancels nothing")
	}
	if !l.fromLine([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"other"}}`)) {
		t.Fatal("the lane left the cancellation of its call to the SDK")
	}
	if !strings.Contains(up.String(), `"requestId":"agentctl-call-3"`) || l.Stats().InFlight != 0 {
		t.Fatalf("%d calls in flight; upstream got:\n%s", l.Stats().InFlight, up.String())
	}
	// The server's late answers do not reach the client: a cancelled call
	// gets none (the SDK's session drops an answer to an id it never sent).
	for _, id := range []string{"agentctl-call-1", "agentctl-call-2", "agentctl-call-3"} {
		l.takeLine([]byte(`{"jsonrpc":"2.0","id":"` + id + `","result":{"content":[]}}`))
	}
	if client.String() != "" {
		t.Fatalf("the client got:\n%s", client.String())
	}
}

// TestLaneCallTimeout: a call its server does not answer within the
// mount's call timeout fails with a tool error naming the server and the
// bound, and is cancelled upstream; the server's late answer is dropped,
// and calls answered in time are not touched.
func TestLaneCallTimeout(t *testing.T) {
	t.Parallel()
	var up, client testkit.Buffer
	l, link := laneWithTool(t, &up, &client)
	link.CallTimeout = 20 * time.Millisecond
	if !l.fromLine([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)) {
		t.Fatal("the lane did not take the call")
	}
	testkit.Eventually(t, "the call's timeout", func() bool { return client.String() != "" })
	want := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"MCP server \"up\" did not answer within 20ms, so agentctl cancelled the call (the server keeps running); if its tools need longer, raise the mount's call_timeout`
	if !strings.HasPrefix(client.String(), want) || !strings.Contains(client.String(), `"isError":true`) {
		t.Fatalf("the client got:\n%s\nwant it to start %s", client.String(), want)
	}
	if !strings.Contains(up.String(), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"agentctl-call-1","reason":"agentctl's call timeout (20ms) ran out"}}`) {
		t.Fatalf("upstream got:\n%s", up.String())
	}
	l.takeLine([]byte(`{"jsonrpc":"2.0","id":"agentctl-call-1","result":{"content":[]}}`))
	if n := strings.Count(client.String(), "\n"); n != 1 || l.Stats().InFlight != 0 {
		t.Fatalf("%d answers, %d in flight:\n%s", n, l.Stats().InFlight, client.String())
	}

	// Answered in time: nothing more comes, not even when the timer
	// set for it fires.
	// (The timeout leaves room for a loaded machine between the two steps.)
	link.CallTimeout = 400 * time.Millisecond
	if !l.fromLine([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)) {
		t.Fatal("the lane did not take the call")
	}
	l.takeLine([]byte(`{"jsonrpc":"2.0","id":"agentctl-call-2","result":{"content":[{"type":"text","text":"two"}]}}`))
	time.Sleep(800 * time.Millisecond)
	if n := strings.Count(client.String(), "\n"); n != 2 || !strings.Contains(client.String(), `"text":"two"`) || strings.Count(up.String(), "cancelled") != 1 {
		t.Fatalf("%d answers:\n%s\nupstream got:\n%s", n, client.String(), up.String())
	}
}

// TestLaneCallTimeoutsShareATimer: calls with different timeouts each fail
// when theirs runs out, a later call with a shorter one first.
func TestLaneCallTimeoutsShareATimer(t *testing.T) {
	t.Parallel()
	var client testkit.Buffer
	l, link := laneWithTool(t, io.Discard, &client)
	for i, d := range []time.Duration{300 * time.Millisecond, 30 * time.Millisecond, time.Hour} {
		link.CallTimeout = d
		if !l.fromLine([]byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)) {
			t.Fatal("the lane did not take the call")
		}
	}
	testkit.Eventually(t, "two timeouts", func() bool { return strings.Count(client.String(), "\n") == 2 })
	answers := strings.Split(client.String(), "\n")
	if !strings.Contains(answers[0], `"id":2,`) || !strings.Contains(answers[0], "within 30ms") ||
		!strings.Contains(answers[1], `"id":1,`) || !strings.Contains(answers[1], "within 300ms") {
		t.Fatalf("the client got:\n%s", client.String())
	}
	if n := l.Stats().InFlight; n != 1 {
		t.Fatalf("%d calls in flight, want the one with an hour left", n)
	}
}

// session is an initialized session as go-sdk's: its parameters are kept,
// not made per call.
type session struct{ p mcp.InitializeParams }

func (s *session) InitializeParams() *mcp.InitializeParams { return &s.p }

// TestLaneCallCostsNoAllocation: once the lane has run a while, a call
// without progress and its answer allocate nothing of the lane's but the
// tool's name for the endpoint's lookup: on this path each allocation soon
// means touching memory the process has not touched yet, which costs more
// than the rest of the lane's work.
func TestLaneCallCostsNoAllocation(t *testing.T) {
	l, _ := laneWithTool(t, io.Discard, io.Discard)
	l.SetSession(&session{mcp.InitializeParams{ProtocolVersion: "2025-11-25"}})
	req := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}` + "\n")
	var resp []byte
	var m wire.Message
	round := func() {
		if m.Parse(req); !l.FromClient(&m) {
			t.Fatal("the lane did not take the call")
		}
		resp = append(resp[:0], `{"jsonrpc":"2.0","id":"agentctl-call-`...)
		resp = strconv.AppendInt(resp, l.next.Load(), 10)
		resp = append(resp, `","result":{"content":[{"type":"text","text":"hello"}]}}`+"\n"...)
		if m.Parse(resp); !l.Line(nil, &m) {
			t.Fatal("the lane did not take the answer")
		}
	}
	round()
	if n := testing.AllocsPerRun(200, round); n > 1 {
		t.Errorf("a call and its answer: %v allocations, want at most 1 (the name's)", n)
	}
	if l.inflight.Load() != 0 {
		t.Fatal("calls left in flight")
	}
}

// TestUpSeqReadsOnlyTheLanesIDs: an answer names a lane call only by the id
// the lane sent, exactly: no sign, no leading zero, nothing after it.
func TestUpSeqReadsOnlyTheLanesIDs(t *testing.T) {
	t.Parallel()
	for _, seq := range []int64{1, 9, 10, 12345, 1 << 40} {
		id := appendUpID(nil, seq)
		if got, ok := upSeq(id); !ok || got != seq {
			t.Errorf("upSeq(%s) = %d, %v", id, got, ok)
		}
		if got, ok := upSeq(string(id)); !ok || got != seq {
			t.Errorf("upSeq(%q) = %d, %v", id, got, ok)
		}
	}
	for _, id := range []string{"", idPrefix, idPrefix + "0", idPrefix + "07", idPrefix + "+7", idPrefix + "-7",
		idPrefix + "7 ", idPrefix + "7.0", idPrefix + "1234567890123456789", "agentctl-calls-7", "x" + idPrefix + "7"} {
		if got, ok := upSeq(id); ok {
			t.Errorf("upSeq(%q) = %d, true; want false", id, got)
		}
	}
}
