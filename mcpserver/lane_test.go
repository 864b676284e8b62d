package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawPeer speaks newline-delimited JSON-RPC by hand: the tests' and
// benchmarks' independent view of the bytes on stdio.
type rawPeer struct {
	w    io.Writer
	r    *bufio.Reader
	next int
}

func newRawPeer(w io.Writer, r io.Reader) *rawPeer {
	return &rawPeer{w: w, r: bufio.NewReaderSize(r, 1<<20)}
}

func (p *rawPeer) send(tb testing.TB, msg string) {
	tb.Helper()
	if _, err := io.WriteString(p.w, msg+"\n"); err != nil {
		tb.Fatal(err)
	}
}

// read returns the next line from the peer.
func (p *rawPeer) read(tb testing.TB) []byte {
	tb.Helper()
	line, err := p.r.ReadBytes('\n')
	if err != nil {
		tb.Fatalf("read: %v (got %q)", err, line)
	}
	return line
}

// request sends a request with the next id (and params unless empty) and
// returns the lines up to and including its answer (notifications sent
// meanwhile come first).
func (p *rawPeer) request(tb testing.TB, method, params string) (answer []byte, before [][]byte) {
	tb.Helper()
	p.next++
	id := fmt.Sprint(p.next)
	if params != "" {
		params = `,"params":` + params
	}
	p.send(tb, `{"jsonrpc":"2.0","id":`+id+`,"method":"`+method+`"`+params+`}`)
	answerPrefix := []byte(`{"jsonrpc":"2.0","id":` + id + `,`)
	for {
		line := p.read(tb)
		if bytes.HasPrefix(line, answerPrefix) {
			// How go-sdk and agentctl both write an answer; it spares the
			// benchmarks timing this peer's own decoding of a long list.
			return line, before
		}
		var env struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal(line, &env); err != nil {
			tb.Fatalf("not JSON-RPC: %q", line)
		}
		if env.Method == "" && string(env.ID) == id {
			return line, before
		}
		before = append(before, line)
	}
}

// initialize opens a 2025-11-25 session.
func (p *rawPeer) initialize(tb testing.TB) {
	tb.Helper()
	p.request(tb, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`)
	p.send(tb, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// startStdio serves ep on OS pipes, as `agentctl mcp serve` does on its
// stdin and stdout, and returns a raw peer on the other ends.
func startStdio(tb testing.TB, ep *Endpoint) *rawPeer {
	tb.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ep.ServeStdio(ctx, inR, outW) }()
	tb.Cleanup(func() {
		inW.Close() // end of input: a clean end
		select {
		case err := <-done:
			if err != nil {
				tb.Errorf("ServeStdio: %v", err)
			}
		case <-time.After(time.Minute):
			tb.Error("ServeStdio did not end after its input did")
		}
		cancel()
		inR.Close()
		outR.Close()
		outW.Close()
	})
	return newRawPeer(inW, outR)
}

// stdioEndpoint builds an endpoint with the given external servers (and
// knowledge bases) for a suffixing client, serves it on pipes and waits
// until every server is up.
func stdioEndpoint(tb testing.TB, noLane bool, mounts ...MountConfig) (*Endpoint, *rawPeer) {
	tb.Helper()
	cfg := testConfig(agents.NamespacingSuffix, newFakeStore())
	cfg.Mounts = resolveTestMounts(tb, PrefixModeMountName, mounts)
	cfg.NoFastLane = noLane
	ep, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	p := startStdio(tb, ep)
	p.initialize(tb)
	p.request(tb, "tools/list", `{}`) // waits for the first round
	for _, st := range ep.UpstreamStatuses() {
		if st.State != UpstreamUp {
			tb.Fatalf("upstream %s: %s %s", st.Name, st.State, st.Error)
		}
	}
	return ep, p
}

// canonicalJSON decodes a message for comparison by value, with its id
// taken out.
func canonicalJSON(tb testing.TB, line []byte) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		tb.Fatalf("%q: %v", line, err)
	}
	delete(m, "id")
	return m
}

// TestLaneAnswersAsTheSDKDoes sends the same requests through the fast lane
// and through the SDK, and compares what comes back by value: results,
// errors, isError, structured content, and the 2026-07-28 server info.
func TestLaneAnswersAsTheSDKDoes(t *testing.T) {
	bin := upstreamBin(t)
	stateless := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`
	calls := []struct{ what, params string }{
		{"echo", `{"name":"up__echo","arguments":{"text":"hé \"quoted\" \u2028"}}`},
		{"numbered tool, structured", `{"name":"up__tool_1","arguments":{"text":"t"}}`},
		{"tool error", `{"name":"up__fail","arguments":{}}`},
		{"null arguments", `{"name":"up__fail","arguments":null}`},
		{"no arguments", `{"name":"up__fail"}`},
		{"the server's protocol error", `{"name":"up__echo","arguments":{"text":5}}`},
		{"unknown tool: the SDK path's message", `{"name":"up__nosuch","arguments":{}}`},
		{"bare name: suggested", `{"name":"echo","arguments":{}}`},
		{"client _meta passes", `{"name":"up__echo","arguments":{"text":"m"},"_meta":{"trace":"abc"}}`},
		{"stateless request", `{"name":"up__echo","arguments":{"text":"s"},` + stateless + `}`},
		{"stateless tool error", `{"name":"up__fail",` + stateless + `}`},
	}
	lists := []struct{ what, params string }{
		{"tools/list", `{}`},
		{"tools/list without params", ``},
		{"tools/list, stateless", `{` + stateless + `}`},
	}
	answers := map[bool][][]byte{}
	for _, noLane := range []bool{false, true} {
		ep, p := stdioEndpoint(t, noLane, MountConfig{ResolvedMount: ResolvedMount{MountSpec: MountSpec{Kind: "mcp", Name: "up"}}, Command: bin},
			MountConfig{ResolvedMount: ResolvedMount{MountSpec: MountSpec{Kind: "kb", Name: "docs"}}, Path: t.TempDir()})
		for _, c := range calls {
			ans, _ := p.request(t, "tools/call", c.params)
			answers[noLane] = append(answers[noLane], ans)
		}
		for _, c := range lists {
			ans, _ := p.request(t, "tools/list", c.params)
			answers[noLane] = append(answers[noLane], ans)
		}
		var forwarded int64
		if l := ep.lane.Load(); l != nil {
			forwarded = l.forwarded.Load()
		}
		if noLane && forwarded != 0 || !noLane && forwarded != 9 {
			t.Fatalf("noLane=%v: the lane forwarded %d calls", noLane, forwarded)
		}
		if l := ep.lane.Load(); !noLane && l.listed.Load() != int64(len(lists)) {
			t.Fatalf("the lane answered %d of %d tools/list", l.listed.Load(), len(lists))
		}
	}
	calls = append(calls, lists...)
	for i, c := range calls {
		lane, sdk := canonicalJSON(t, answers[false][i]), canonicalJSON(t, answers[true][i])
		if !reflect.DeepEqual(lane, sdk) {
			t.Errorf("%s:\n lane %.2000s\n  sdk %.2000s", c.what, answers[false][i], answers[true][i])
		}
	}
	// The answers say what they should, not only the same thing.
	for i, want := range []string{`"text":"hé \"quoted\" \u2028"`, `"tool":"tool_1"`, `"isError":true`,
		`upstream says no`, `upstream says no`, `validating \"arguments\"`, `server \"up\" has no tool \"nosuch\"`, `did you mean \"up__echo\"`,
		`"text":"m"`, `"io.modelcontextprotocol/serverInfo":{"name":"agentctl"`, `"io.modelcontextprotocol/serverInfo":{"name":"agentctl"`,
		`"name":"up__echo"`, `"name":"ask_user_question"`, `"io.modelcontextprotocol/serverInfo":{"name":"agentctl"`} {
		if !bytes.Contains(answers[false][i], []byte(want)) {
			t.Errorf("%s: %s lacks %s", calls[i].what, answers[false][i], want)
		}
	}
}

// TestLaneProgressCancellationAndCrash covers the lane's own bookkeeping on
// the wire: progress with the client's token, a cancellation forwarded
// upstream (no answer follows), and a server dying mid-call.
func TestLaneProgressCancellationAndCrash(t *testing.T) {
	bin := upstreamBin(t)
	log := &syncBuffer{}
	cfg := testConfig(agents.NamespacingSuffix, newFakeStore())
	cfg.Mounts = resolveTestMounts(t, PrefixModeMountName, []MountConfig{{ResolvedMount: ResolvedMount{MountSpec: MountSpec{Kind: "mcp", Name: "up"}}, Command: bin}})
	cfg.UpstreamLog = log
	ep, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := startStdio(t, ep)
	p.initialize(t)
	p.request(t, "tools/list", `{}`)

	// Progress comes back with the client's own token, a string or a number.
	for _, tok := range []string{`"my-token"`, `42`} {
		ans, before := p.request(t, "tools/call", `{"name":"slow","arguments":{"ms":120},"_meta":{"progressToken":`+tok+`}}`)
		if !bytes.Contains(ans, []byte(`"slow done"`)) && !bytes.Contains(ans, []byte(`"content"`)) {
			t.Fatalf("slow: %s", ans)
		}
		progress := 0
		for _, n := range before {
			if !bytes.Contains(n, []byte(`"method":"notifications/progress"`)) {
				continue // tools/list_changed, say
			}
			if !bytes.Contains(n, []byte(`"progressToken":`+tok)) {
				t.Fatalf("token %s: %s", tok, n)
			}
			progress++
		}
		if progress == 0 {
			t.Fatalf("token %s: no progress before the answer: %q", tok, before)
		}
	}

	// A cancelled call: the server hears of it, the client gets no answer,
	// and the next call is answered normally.
	p.send(t, `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"slow","arguments":{"ms":60000}}}`)
	eventually(t, "the call to be in flight", func() bool { return ep.lane.Load().inflight.Load() == 1 })
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1","reason":"changed my mind"}}`)
	eventually(t, "the server to see the cancellation", func() bool { return strings.Contains(log.String(), "[up] slow cancelled") })
	ans, before := p.request(t, "tools/call", `{"name":"echo","arguments":{"text":"after"}}`)
	if len(before) != 0 || !bytes.Contains(ans, []byte(`"text":"after"`)) {
		t.Fatalf("after the cancellation: %q then %s", before, ans)
	}

	// The server dies mid-call: an isError result naming it.
	ans, _ = p.request(t, "tools/call", `{"name":"crash","arguments":{}}`)
	if !bytes.Contains(ans, []byte(`"isError":true`)) || !bytes.Contains(ans, []byte(`MCP server \"up\" failed during the call`)) {
		t.Fatalf("crash: %s", ans)
	}
	if n := ep.lane.Load().inflight.Load(); n != 0 {
		t.Fatalf("%d calls still in flight", n)
	}
}

// TestLaneLeavesTheRestToTheSDK: calls the lane does not fully understand
// reach the SDK unchanged.
func TestLaneLeavesTheRestToTheSDK(t *testing.T) {
	// One mount: its tools are unprefixed.
	ep, p := stdioEndpoint(t, false, MountConfig{ResolvedMount: ResolvedMount{MountSpec: MountSpec{Kind: "mcp", Name: "up"}}, Command: upstreamBin(t)})
	// A built-in is the SDK's.
	ans, _ := p.request(t, "tools/call", `{"name":"get_instance","arguments":{}}`)
	if !bytes.Contains(ans, []byte(`inst1`)) {
		t.Fatalf("get_instance: %s", ans)
	}
	// Arguments that are not an object: the SDK's (the server refuses them).
	ans, _ = p.request(t, "tools/call", `{"name":"echo","arguments":"text"}`)
	if !bytes.Contains(ans, []byte(`"isError":true`)) || !bytes.Contains(ans, []byte(`unmarshaling arguments`)) {
		t.Fatalf("string arguments: %s", ans)
	}
	// A field the lane does not know (a task, say): the SDK's, which
	// forwards the call its own way.
	ans, _ = p.request(t, "tools/call", `{"name":"echo","arguments":{"text":"via the SDK"},"task":{"ttl":1000}}`)
	if !bytes.Contains(ans, []byte(`"text":"via the SDK"`)) {
		t.Fatalf("with a task: %s", ans)
	}
	if n := ep.lane.Load().forwarded.Load(); n != 0 {
		t.Fatalf("the lane took %d calls that were not its own", n)
	}
	// And then a plain call is the lane's.
	if ans, _ = p.request(t, "tools/call", `{"name":"echo","arguments":{"text":"lane"}}`); !bytes.Contains(ans, []byte(`"text":"lane"`)) || ep.lane.Load().forwarded.Load() != 1 {
		t.Fatalf("plain call: %s", ans)
	}
}

// laneWithTool sets up a lane in front of one external tool "echo" whose
// server writes to w, without processes or pipes.
func laneWithTool(tb testing.TB, w io.Writer, client io.Writer) (*lane, *laneLink) {
	tb.Helper()
	cfg := testConfig(agents.NamespacingSuffix, newFakeStore())
	ep, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	link := newLaneLink("up", w)
	tb.Cleanup(link.close)
	u := &upstream{e: ep, mount: MountConfig{ResolvedMount: ResolvedMount{MountSpec: MountSpec{Kind: "mcp", Name: "up"}}}, state: UpstreamUp,
		link: link, tools: []*mcp.Tool{{Name: "echo", InputSchema: map[string]any{"type": "object"}}}}
	ep.upstreams = append(ep.upstreams, u)
	ep.reconcile()
	l := newLane(ep, &lockedWriter{w: client})
	l.initialized.Store(true)
	return l, link
}

// TestLaneStuckServer: a server that stops reading its input stalls
// neither the client's other messages nor the lane: once its pipe and
// agentctl's queue to it are full, further calls get a tool error at once.
func TestLaneStuckServer(t *testing.T) {
	stuckR, stuck, err := os.Pipe() // nobody reads: the pipe fills up
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stuckR.Close(); stuck.Close() })
	var client syncBuffer
	l, link := laneWithTool(t, stuck, &client)
	link.max = 64 << 10
	done := make(chan struct{})
	calls := 0
	go func() {
		defer close(done)
		// Far more than the pipe (64 KiB on Linux) and the queue hold.
		for ; calls < 5000; calls++ {
			if !l.fromClient([]byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(calls) + `,"method":"tools/call","params":{"name":"echo","arguments":{"padding":"` + strings.Repeat("x", 100) + `"}}}` + "\n")) {
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
	// The SDK's own writes wait for the queue; closing the link ends them.
	werr := make(chan error, 1)
	go func() { werr <- link.write([]byte("{}\n"), true) }()
	link.close()
	stuckR.Close() // the blocked flusher's write fails
	select {
	case err := <-werr:
		if err == nil {
			t.Fatal("a write queued behind a closed link succeeded")
		}
	case <-time.After(time.Minute):
		t.Fatal("a waiting write outlived the link")
	}
}

// BenchmarkLaneWork is the lane's own work for one call, without any I/O:
// reading and rewriting the client's request, then the server's answer.
// It is the part of the proxy hop that agentctl's code decides; the rest is
// the operating system moving bytes (see BenchmarkProxyCall/relay).
func BenchmarkLaneWork(b *testing.B) {
	l, _ := laneWithTool(b, io.Discard, io.Discard)
	req := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"progressToken":"p-17"}}}` + "\n")
	var resp []byte
	b.ReportAllocs()
	for i := int64(1); b.Loop(); i++ {
		if !l.fromClient(req) {
			b.Fatal("the lane did not take the call")
		}
		resp = append(resp[:0], `{"jsonrpc":"2.0","id":"agentctl-call-`...)
		resp = strconv.AppendInt(resp, l.next.Load(), 10)
		resp = append(resp, `","result":{"content":[{"type":"text","text":"hello"}],"structuredContent":{"text":"hello"}}}`+"\n"...)
		if !l.fromServer(resp) {
			b.Fatal("the lane did not take the answer")
		}
	}
	if l.inflight.Load() != 0 {
		b.Fatal("calls left in flight")
	}
}
