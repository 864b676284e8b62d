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
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/agentctl/agentctl/mcpserver/proxy"
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
func stdioEndpoint(tb testing.TB, noLane bool, mounts ...mount.Mount) (*Endpoint, *rawPeer) {
	tb.Helper()
	return stdioEndpointOpening(tb, noLane, (*rawPeer).initialize, mounts...)
}

// statelessMeta is the _meta of a 2026-07-28 request.
const statelessMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`

// openStateless opens nothing: a 2026-07-28 client's first request is
// already a request (here the first tools/list).
func openStateless(*rawPeer, testing.TB) {}

// stdioEndpointOpening is stdioEndpoint with the session opened by open.
func stdioEndpointOpening(tb testing.TB, noLane bool, open func(*rawPeer, testing.TB), mounts ...mount.Mount) (*Endpoint, *rawPeer) {
	tb.Helper()
	cfg := testConfig(agents.NamespacingSuffix, newFakeStore())
	cfg.Mounts = mounts
	cfg.NoFastLane = noLane
	ep, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	p := startStdio(tb, ep)
	open(p, tb)
	p.request(tb, "tools/list", `{`+statelessMeta+`}`) // waits for the first round
	for _, st := range ep.ServerStatuses() {
		if st.State != proxy.StateUp {
			tb.Fatalf("server %s: %s %s", st.Name, st.State, st.Error)
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

// bothPaths runs serve with the fast lane and without it (every message
// through the SDK), in parallel, and returns what each gave.
func bothPaths[T any](t *testing.T, serve func(t *testing.T, noLane bool) T) (lane, sdk T) {
	t.Helper()
	t.Run("serve", func(t *testing.T) {
		t.Run("lane", func(t *testing.T) {
			t.Parallel()
			lane = serve(t, false)
		})
		t.Run("sdk", func(t *testing.T) {
			t.Parallel()
			sdk = serve(t, true)
		})
	})
	if t.Failed() {
		t.FailNow()
	}
	return lane, sdk
}

// TestLaneAnswersAsTheSDKDoes sends the same requests through the fast lane
// and through the SDK, and compares what comes back by value: results,
// errors, isError, structured content, and the 2026-07-28 server info.
func TestLaneAnswersAsTheSDKDoes(t *testing.T) {
	t.Parallel()
	bin := serverBin(t)
	stateless := statelessMeta
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
		{"progress token null", `{"name":"up__echo","arguments":{"text":"n"},"_meta":{"progressToken":null}}`},
		// Requests the SDK refuses go to it: the same refusal either way.
		{"unsupported version", `{"name":"up__echo","arguments":{"text":"v"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-12-01","io.modelcontextprotocol/clientCapabilities":{}}}`},
		{"capabilities null", `{"name":"up__echo","arguments":{"text":"v"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":null}}`},
		{"capabilities not an object", `{"name":"up__echo","arguments":{"text":"v"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":5}}`},
	}
	lists := []struct{ what, params string }{
		{"tools/list", `{}`},
		{"tools/list without params", ``},
		{"tools/list, stateless", `{` + stateless + `}`},
	}
	answers := map[bool][][]byte{}
	answers[false], answers[true] = bothPaths(t, func(t *testing.T, noLane bool) (out [][]byte) {
		ep, p := stdioEndpoint(t, noLane, mount.Mount{Kind: mount.KindServer, Name: "up", Command: bin},
			mount.Mount{Kind: mount.KindKB, Name: "docs", Path: t.TempDir()})
		for _, c := range calls {
			ans, _ := p.request(t, "tools/call", c.params)
			out = append(out, ans)
		}
		for _, c := range lists {
			ans, _ := p.request(t, "tools/list", c.params)
			out = append(out, ans)
		}
		var forwarded int64
		if l := ep.lane.Load(); l != nil {
			forwarded = l.Stats().Forwarded
		}
		if noLane && forwarded != 0 || !noLane && forwarded != 10 {
			t.Fatalf("noLane=%v: the lane forwarded %d calls", noLane, forwarded)
		}
		if l := ep.lane.Load(); !noLane && l.Stats().Listed != int64(len(lists)) {
			t.Fatalf("the lane answered %d of %d tools/list", l.Stats().Listed, len(lists))
		}
		return out
	})
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
		`"text":"n"`, `"code":-32022`, `"code":-32602`, `"code":-32602`,
		`"name":"up__echo"`, `"name":"ask_user_question"`, `"io.modelcontextprotocol/serverInfo":{"name":"agentctl"`} {
		if !bytes.Contains(answers[false][i], []byte(want)) {
			t.Errorf("%s: %s lacks %s", calls[i].what, answers[false][i], want)
		}
	}
}

// TestLaneAnswersAsTheSDKDoesStateless: the same comparison for a client
// that only speaks 2026-07-28 (no initialize: its first request opens the
// session in the SDK), whose tools/call results also say resultType.
func TestLaneAnswersAsTheSDKDoesStateless(t *testing.T) {
	t.Parallel()
	bin := serverBin(t)
	requests := []struct{ what, method, params string }{
		{"call", "tools/call", `{"name":"up__echo","arguments":{"text":"s"},` + statelessMeta + `}`},
		{"tool error", "tools/call", `{"name":"up__fail",` + statelessMeta + `}`},
		{"call without the protocol _meta", "tools/call", `{"name":"up__echo","arguments":{"text":"plain"}}`},
		{"list", "tools/list", `{` + statelessMeta + `}`},
		{"list without the protocol _meta", "tools/list", `{}`},
	}
	answers := map[bool][][]byte{}
	answers[false], answers[true] = bothPaths(t, func(t *testing.T, noLane bool) (out [][]byte) {
		ep, p := stdioEndpointOpening(t, noLane, openStateless, mount.Mount{Kind: mount.KindServer, Name: "up", Command: bin},
			mount.Mount{Kind: mount.KindKB, Name: "docs", Path: t.TempDir()})
		for _, r := range requests {
			ans, _ := p.request(t, r.method, r.params)
			out = append(out, ans)
		}
		if l := ep.lane.Load(); !noLane && (l.Stats().Forwarded != 3 || l.Stats().Listed != 2) {
			t.Fatalf("the lane forwarded %d calls and answered %d lists, want 3 and 2", l.Stats().Forwarded, l.Stats().Listed)
		}
		return out
	})
	for i, r := range requests {
		lane, sdk := canonicalJSON(t, answers[false][i]), canonicalJSON(t, answers[true][i])
		if !reflect.DeepEqual(lane, sdk) {
			t.Errorf("%s:\n lane %.2000s\n  sdk %.2000s", r.what, answers[false][i], answers[true][i])
		}
	}
	for i, want := range []string{`"resultType":"complete"`, `"resultType":"complete"`, `"resultType":"complete"`, `"resultType":"complete"`, `"tools":[`} {
		if !bytes.Contains(answers[false][i], []byte(want)) {
			t.Errorf("%s: %.300s lacks %s", requests[i].what, answers[false][i], want)
		}
	}
}

// TestLaneProgressCancellationAndCrash covers the lane's own bookkeeping on
// the wire: progress with the client's token, a cancellation forwarded
// upstream (no answer follows), and a server dying mid-call.
func TestLaneProgressCancellationAndCrash(t *testing.T) {
	t.Parallel()
	bin := serverBin(t)
	log := &testkit.Buffer{}
	cfg := testConfig(agents.NamespacingSuffix, newFakeStore())
	cfg.Mounts = []mount.Mount{{Kind: mount.KindServer, Name: "up", Command: bin}}
	cfg.ServerStderr = log
	ep, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := startStdio(t, ep)
	p.initialize(t)
	p.request(t, "tools/list", `{}`)

	// Progress comes back with the client's own token, a string or a number.
	for _, tok := range []string{`"my-token"`, `42`} {
		// Progress every 50 ms, over 400 ms: at least one, on a loaded machine too.
		ans, before := p.request(t, "tools/call", `{"name":"slow","arguments":{"ms":400},"_meta":{"progressToken":`+tok+`}}`)
		if !bytes.Contains(ans, []byte(`"text":"slow: done after 400ms"`)) || bytes.Contains(ans, []byte(`"isError"`)) {
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
	// (Each waits for the call's first progress, so the server's handler
	// is running when the cancellation comes.)
	started := func() {
		t.Helper()
		for !bytes.Contains(p.read(t), []byte(`"method":"notifications/progress"`)) {
		}
	}
	p.send(t, `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"slow","arguments":{"ms":60000},"_meta":{"progressToken":"k1"}}}`)
	started()
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1","reason":"changed my mind"}}`)
	testkit.Eventually(t, "the server to see the cancellation", func() bool { return strings.Contains(log.String(), "[up] slow cancelled") })
	// A reason that names a method is still a cancellation.
	p.send(t, `{"jsonrpc":"2.0","id":"c2","method":"tools/call","params":{"name":"slow","arguments":{"ms":60000},"_meta":{"progressToken":"k2"}}}`)
	started()
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c2","reason":"tools/call took too long"}}`)
	testkit.Eventually(t, "the server to see the second cancellation", func() bool { return strings.Count(log.String(), "[up] slow cancelled") == 2 })
	ans, before := p.request(t, "tools/call", `{"name":"echo","arguments":{"text":"after"}}`)
	for _, n := range before {
		if !bytes.Contains(n, []byte(`"method":"notifications/progress"`)) { // sent before the cancellation arrived
			t.Fatalf("after the cancellations, before the answer: %s", n)
		}
	}
	if !bytes.Contains(ans, []byte(`"text":"after"`)) || bytes.Contains(ans, []byte(`"c1"`)) || bytes.Contains(ans, []byte(`"c2"`)) {
		t.Fatalf("after the cancellations: %s", ans)
	}

	// The server dies mid-call: an isError result naming it.
	ans, _ = p.request(t, "tools/call", `{"name":"crash","arguments":{}}`)
	if !bytes.Contains(ans, []byte(`"isError":true`)) || !bytes.Contains(ans, []byte(`MCP server \"up\" failed during the call`)) {
		t.Fatalf("crash: %s", ans)
	}
	if n := ep.lane.Load().Stats().InFlight; n != 0 {
		t.Fatalf("%d calls still in flight", n)
	}
}

// TestLaneLeavesTheRestToTheSDK: calls the lane does not fully understand
// reach the SDK unchanged.
func TestLaneLeavesTheRestToTheSDK(t *testing.T) {
	t.Parallel()
	// One mount: its tools are unprefixed.
	ep, p := stdioEndpoint(t, false, mount.Mount{Kind: mount.KindServer, Name: "up", Command: serverBin(t)})
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
	if n := ep.lane.Load().Stats().Forwarded; n != 0 {
		t.Fatalf("the lane took %d calls that were not its own", n)
	}
	// And then a plain call is the lane's.
	if ans, _ = p.request(t, "tools/call", `{"name":"echo","arguments":{"text":"lane"}}`); !bytes.Contains(ans, []byte(`"text":"lane"`)) || ep.lane.Load().Stats().Forwarded != 1 {
		t.Fatalf("plain call: %s", ans)
	}
}
