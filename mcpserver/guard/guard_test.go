package guard

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/agentctl/agentctl/mcpserver/internal/wire"
)

// TestGuardWritesWholeMessagesUntilClosed: concurrent writers' messages
// never interleave, and nothing is written after Close.
func TestGuardWritesWholeMessagesUntilClosed(t *testing.T) {
	var out testkit.Buffer
	g := New(&out, Options{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := strings.Repeat(string(rune('a'+i)), 1000) + "\n"
			for range 50 {
				if _, err := g.Write([]byte(msg)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if len(line) != 1000 || strings.Trim(line, line[:1]) != "" {
			t.Fatalf("interleaved: %.60q", line)
		}
	}
	g.Close()
	if _, err := g.Write([]byte("late\n")); !errors.Is(err, ErrClosed) {
		t.Fatalf("a write after Close: %v", err)
	}
}

// TestGuardServesTheSDKsSide: lines nobody takes reach the SDK's side of
// the connection, which ends with the input.
func TestGuardServesTheSDKsSide(t *testing.T) {
	g := New(io.Discard, Options{})
	go g.Serve(context.Background(), strings.NewReader(`{"jsonrpc":"2.0","method":"a"}`+"\n"+`{"jsonrpc":"2.0","method":"b"}`+"\n"), byLine(func(line []byte) bool { return bytes.Contains(line, []byte(`"b"`)) }))
	got, err := io.ReadAll(g.sdkR)
	if err != nil || string(got) != `{"jsonrpc":"2.0","method":"a"}`+"\n" {
		t.Fatalf("the SDK read %q, %v", got, err)
	}
}

// pendingIDs are the guard's unanswered requests' ids, as the client wrote
// them.
func (g *Guard) pendingIDs() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var ids []string
	for _, r := range g.sdk {
		if r.wait && !r.cancelled {
			ids = append(ids, r.id)
		}
	}
	for _, e := range g.lane {
		for range e.n {
			ids = append(ids, e.id)
		}
	}
	slices.Sort(ids)
	return ids
}

// sdkID is the id the SDK got a request under: the guard's.
func sdkID(t *testing.T, line []byte) string {
	t.Helper()
	var m wire.Message
	if m.Parse(line); m.Kind != wire.Request {
		t.Fatalf("the SDK got %q, not a request", line)
	}
	return string(m.ID)
}

// sdkWrite writes a message of the SDK's, as its transport does.
func sdkWrite(t *testing.T, g *Guard, msg string) {
	t.Helper()
	if n, err := g.writeSDK([]byte(msg + "\n")); err != nil || n != len(msg)+1 {
		t.Fatalf("writeSDK: %d, %v", n, err)
	}
}

// TestGuardHoldsTheSDKsInputUntilAnswered: when the client's input ends,
// the SDK's goes on until every request read is answered (by the SDK or by
// the taker, through the guard), then ends.
func TestGuardHoldsTheSDKsInputUntilAnswered(t *testing.T) {
	t.Parallel()
	var out testkit.Buffer
	g := New(&out, Options{Drain: time.Hour})
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":"two","method":"tools/list"}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"lane's"}}` + "\n"
	served := make(chan error, 1)
	go func() {
		served <- g.Serve(context.Background(), strings.NewReader(in), byLine(func(line []byte) bool { return bytes.Contains(line, []byte("lane's")) }))
	}()
	sdk := wire.NewLines(g.sdkR, 0)
	var ids []string
	for range 3 { // initialize, initialized, tools/list
		line, err := sdk.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(line, []byte("initialized")) {
			ids = append(ids, sdkID(t, line))
		}
	}
	testkit.Eventually(t, "the input to be read", func() bool { return len(g.pendingIDs()) == 3 })
	sdkWrite(t, g, `{"jsonrpc":"2.0","id":`+ids[0]+`,"result":{}}`)
	if _, err := g.Write([]byte(`{"jsonrpc":"2.0","id":3,"result":{"content":[]}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if ids := g.pendingIDs(); !slices.Equal(ids, []string{`"two"`}) {
		t.Fatalf("pending %v, want the tools/list's", ids)
	}
	select {
	case err := <-served:
		t.Fatalf("Serve returned (%v) with a request unanswered", err)
	default:
	}
	// A notification is no answer.
	sdkWrite(t, g, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"id":`+ids[1]+`}}`)
	sdkWrite(t, g, `{"jsonrpc":"2.0","id":`+ids[1]+`,"result":{"tools":[]}}`)
	if _, err := sdk.Next(); err != io.EOF {
		t.Fatalf("the SDK's input after the last answer: %v, want EOF", err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `{"jsonrpc":"2.0","id":1,"result":{}}`) || !strings.Contains(out.String(), `{"jsonrpc":"2.0","id":"two","result":{"tools":[]}}`) ||
		strings.Contains(out.String(), `"error"`) {
		t.Fatalf("the client got %s", out.String())
	}
}

// TestGuardAnswersWhatIsLeft: what is unanswered at the drain bound, or at
// Close, gets an error with the request's id as the client wrote it, in
// the order the requests came; then nothing more is written.
func TestGuardAnswersWhatIsLeft(t *testing.T) {
	t.Parallel()
	const requests = `{"jsonrpc":"2.0","id":"a\u0062","method":"tools/call"}` + "\n" + `{"jsonrpc":"2.0","id":7,"method":"ping"}` + "\n"
	t.Run("at the drain bound", func(t *testing.T) {
		t.Parallel()
		var out testkit.Buffer
		g := New(&out, Options{Drain: 20 * time.Millisecond})
		go io.Copy(io.Discard, g.sdkR)
		if err := g.Serve(context.Background(), strings.NewReader(requests), nil); err != nil {
			t.Fatal(err)
		}
		want := `{"jsonrpc":"2.0","id":"a\u0062","error":{"code":-32004,"message":"server is closing: no answer within 20ms after the client's input ended"}}` + "\n" +
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32004,"message":"server is closing: no answer within 20ms after the client's input ended"}}` + "\n"
		if out.String() != want {
			t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
		}
		if _, err := g.writeSDK([]byte(`{"jsonrpc":"2.0","id":2,"result":{}}` + "\n")); !errors.Is(err, ErrClosed) {
			t.Fatalf("a late answer: %v", err)
		}
		if _, err := g.Write([]byte(`{"jsonrpc":"2.0","id":7,"result":{}}` + "\n")); !errors.Is(err, ErrClosed) {
			t.Fatalf("a late answer of the taker's: %v", err)
		}
	})
	t.Run("at Close", func(t *testing.T) {
		t.Parallel()
		var out testkit.Buffer
		g := New(&out, Options{})
		inR, inW := io.Pipe() // the client never ends its input
		defer inW.Close()
		go g.Serve(context.Background(), inR, nil)
		go io.WriteString(inW, requests)
		sdk := wire.NewLines(g.sdkR, 0)
		sdk.Next()
		sdk.Next()
		testkit.Eventually(t, "the requests to be read", func() bool { return len(g.pendingIDs()) == 2 })
		g.Close()
		if got := out.String(); strings.Count(got, `"message":"server is closing: agentctl stopped before answering"`) != 2 ||
			strings.Index(got, `"a\u0062"`) > strings.Index(got, `"id":7`) {
			t.Fatalf("got %s", got)
		}
		if _, err := sdk.Next(); err != io.EOF {
			t.Fatalf("the SDK's input after Close: %v", err)
		}
	})
}

// eachMessage calls f with each message of a line (a batch holds several).
func eachMessage(line []byte, f func(msg []byte)) {
	if batch := decodeBatch(line); isBatch(line) {
		for _, m := range batch {
			f(m)
		}
		return
	}
	f(line)
}

// byLine is a taker that reads the line.
func byLine(f func(line []byte) bool) Taker {
	return func(m *wire.Message) bool { return f(m.Line) }
}

// TestGuardReadsEnvelopes: which messages are requests to wait for, which
// settle them, and which are neither.
func TestGuardReadsEnvelopes(t *testing.T) {
	t.Parallel()
	requests := map[string][]string{ // a line of the client's: the ids it waits for
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`:                                           {"n1"},
		`{"method":"tools/call","params":{"name":"x"},"jsonrpc":"2.0","id":"s"}`:                                         {"ss"},
		`{"jsonrpc":"2.0","id":"a\u0062","method":"x"}`:                                                                  {"sab"},
		`{"jsonrpc":"2.0","id":2.0,"method":"x"}`:                                                                        {"n2"},
		`{"jsonrpc":"2.0","id":-3,"method":"x"}`:                                                                         {"n-3"},
		`{"jsonrpc":"2.0","id":1e2,"method":"x"}`:                                                                        {"n100"},
		`{"jsonrpc":"2.0","id":1.9,"method":"x"}`:                                                                        {"n1"},
		`{"jsonrpc":"2.0","id":999999999999999,"method":"x"}`:                                                            {"n999999999999999"},
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"x"}`:                                                           {"n9007199254740992"}, // as go-sdk answers it
		`{"jsonrpc":"2.0","id":-9007199254740993,"method":"x"}`:                                                          {"n-9007199254740992"},
		`{"jsonrpc":"2.0","id":3,"method":"x","params":{"id":5},"id":4}`:                                                 {"n4"}, // the last id counts
		`{"jsonrpc":"2.0","id":3,"method":"x","method":"subscriptions/listen"}`:                                          nil,
		`{"jsonrpc":"2.0","id":-,"method":"x"}`:                                                                          nil,
		`{"jsonrpc":"2.0","id":"x","method":"tools\/list"}`:                                                              {"sx"},
		`{"jsonrpc":"2.0","id":"y","method":"subscriptions\/listen"}`:                                                    nil,
		`{"jsonrpc":"2.0","id":null,"method":"x"}`:                                                                       nil, // a notification, for go-sdk
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`:                                                         nil,
		`{"jsonrpc":"2.0","id":4,"result":{}}`:                                                                           nil, // the client answering the server
		`{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{}}`:                                           nil,
		`[{"jsonrpc":"2.0","id":6,"method":"a"},{"jsonrpc":"2.0","method":"b"},{"jsonrpc":"2.0","id":"7","method":"c"}]`: {"n6", "s7"},
		`not json`: nil,
	}
	for line, want := range requests {
		var got []string
		eachMessage([]byte(line), func(msg []byte) {
			var m wire.Message
			switch m.Parse(msg); m.Kind {
			case wire.Request:
				if string(m.Name) != "subscriptions/listen" {
					got = append(got, string(m.Key))
				}
			case wire.Cancellation:
				t.Errorf("%s cancels", line)
			}
		})
		if !slices.Equal(got, want) {
			t.Errorf("%s: requests %q, want %q", line, got, want)
		}
	}
	var c wire.Message
	if c.Parse([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"x","requestId":"c"}}`)); c.Kind != wire.Cancellation || string(c.Key) != "sc" {
		t.Errorf("a cancellation: %q, %v", c.Key, c.Kind)
	}
	answers := map[string][]string{ // a message of the endpoint's: the ids it answers
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}` + "\n":                         {"n1"},
		`{"jsonrpc":"2.0","id":"a\u0062","error":{"code":1,"message":"m"}}`:             {"sab"},
		`{"jsonrpc":"2.0","result":{"id":9},"id":2}`:                                    {"n2"},
		`{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{}}`:            nil, // the server asking the client
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":1}}`:         nil,
		`[{"jsonrpc":"2.0","id":6,"result":{}},{"jsonrpc":"2.0","id":"7","result":{}}]`: {"n6", "s7"},
	}
	for msg, want := range answers {
		var got []string
		eachMessage([]byte(msg), func(msg []byte) {
			var m wire.Message
			if m.Envelope(msg); m.Answer && m.Method == nil {
				if key, ok := wire.AppendIDKey(nil, m.ID); ok {
					got = append(got, string(key))
				}
			}
		})
		if !slices.Equal(got, want) {
			t.Errorf("%s: answers %q, want %q", msg, got, want)
		}
	}
}

// BenchmarkGuardWork is the guard's own work for one request and its
// answer, without I/O: checking that the request is JSON, reading its
// envelope, noting it and giving it the guard's id, then reading the
// answer's envelope, settling it and putting the client's id back. The
// answer is a tools/list of 60 KB, whose result the guard must not scan.
func BenchmarkGuardWork(b *testing.B) {
	g := New(io.Discard, Options{})
	req := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/list","params":{"_meta":{"progressToken":"p-17"}}}` + "\n")
	// The SDK's answer, with the id it got written into the blanks.
	const head = `{"jsonrpc":"2.0","id":`
	answer := []byte(head + strings.Repeat(" ", 20) + `,"result":{"tools":[` + strings.Repeat(`{"name":"tool","inputSchema":{"type":"object"}},`, 1200) + `{}]}}` + "\n")
	slot := answer[len(head) : len(head)+20]
	b.ReportAllocs()
	for b.Loop() {
		toSDK := g.route(req, nil)
		if toSDK == nil {
			b.Fatal("the request did not go to the SDK")
		}
		copy(slot, strconv.AppendUint(slot[:0], g.seq, 10))
		if _, err := g.writeSDK(answer); err != nil {
			b.Fatal(err)
		}
	}
	if len(g.sdk) != 0 || g.waiting != 0 {
		b.Fatal("requests left pending")
	}
}

// TestGuardDropsTheAnswerToACancelledRequest: once the client cancels a
// pending request, its answer is not written, whoever writes it (the SDK
// answers a cancelled call with an error), nor waited for at the end of
// the input; the SDK hears of the cancellation under its own id for the
// request; a request the taker cancels (the lane, which then sends no
// answer) leaves nothing behind; a cancellation that names nothing the SDK
// has does not reach it.
func TestGuardDropsTheAnswerToACancelledRequest(t *testing.T) {
	t.Parallel()
	var out testkit.Buffer
	g := New(&out, Options{Drain: time.Hour})
	inR, inW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- g.Serve(context.Background(), inR, byLine(func(line []byte) bool {
			return bytes.Contains(line, []byte(`"lane's"`))
		}))
	}()
	sdk := wire.NewLines(g.sdkR, 0)
	send := func(line string, toSDK bool) string {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		if !toSDK {
			return ""
		}
		got, err := sdk.Next()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(string(got), "\n")
	}
	c1 := sdkID(t, []byte(send(`{"jsonrpc":"2.0","id":"c\u0031","method":"tools/call","params":{"name":"slow"}}`, true)))
	six := sdkID(t, []byte(send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"slow"}}`, true)))
	seven := sdkID(t, []byte(send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow"}}`, true)))
	send(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"lane's"}}`, false)
	nine := sdkID(t, []byte(send(`{"jsonrpc":"2.0","id":9,"method":"ping"}`, true)))
	// By value, as go-sdk matched them: "c1" and 6.
	if got, want := send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1","reason":"x"}}`, true),
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+c1+`,"reason":"x"}}`; got != want {
		t.Fatalf("the SDK got %s, want %s", got, want)
	}
	if got, want := send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6.0}}`, true),
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+six+`}}`; got != want {
		t.Fatalf("the SDK got %s, want %s", got, want)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8,"x":"lane's"}}`, false)
	// An id never used: nothing to drop later, nothing for the SDK.
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`, false)
	testkit.Eventually(t, "the input to be read", func() bool { return slices.Equal(g.pendingIDs(), []string{"7", "9"}) })
	sdkWrite(t, g, `{"jsonrpc":"2.0","id":`+c1+`,"error":{"code":0,"message":"context canceled"}}`)
	sdkWrite(t, g, `{"jsonrpc":"2.0","id":`+six+`,"result":{"content":[]}}`) // finished before it heard of the cancellation
	sdkWrite(t, g, `{"jsonrpc":"2.0","id":`+nine+`,"result":{}}`)
	// One answered already: nothing to cancel.
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`, false)
	sdkWrite(t, g, `{"jsonrpc":"2.0","id":`+seven+`,"result":{}}`)
	if want := `{"jsonrpc":"2.0","id":9,"result":{}}` + "\n" + `{"jsonrpc":"2.0","id":7,"result":{}}` + "\n"; out.String() != want {
		t.Fatalf("the client got\n%s\nwant\n%s", out.String(), want)
	}
	g.mu.Lock()
	left := len(g.cancelled) + len(g.sdk)
	g.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d cancellations still waiting for an answer", left)
	}
	// Nothing is pending: the end of the input ends the SDK's at once.
	inW.Close()
	if _, err := sdk.Next(); err != io.EOF {
		t.Fatalf("the SDK's input after the end of the client's: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// TestGuardDropsCancelledAnswersFromABatch: go-sdk answers a batch with
// one array; the answers to cancelled requests are left out of it, and the
// others get the client's ids back.
func TestGuardDropsCancelledAnswersFromABatch(t *testing.T) {
	t.Parallel()
	var out testkit.Buffer
	g := New(&out, Options{})
	g.batches = true // a 2025-03-26 session
	toSDK := g.route([]byte(`[{"jsonrpc":"2.0","id":"a","method":"a"},{"jsonrpc":"2.0","id":"b","method":"b"},{"jsonrpc":"2.0","id":"c","method":"c"}]`), nil)
	if want := `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":2,"method":"b"},{"jsonrpc":"2.0","id":3,"method":"c"}]`; string(toSDK) != want {
		t.Fatalf("the SDK got %s, want %s", toSDK, want)
	}
	g.route([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"b"}}`), nil)
	g.route([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c"}}`), nil)
	sdkWrite(t, g, `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]`)
	sdkWrite(t, g, `[{"jsonrpc":"2.0","id":3,"result":{}}]`)
	if want := `[{"jsonrpc":"2.0","id":"a","result":{}}]` + "\n"; out.String() != want {
		t.Fatalf("the client got %s, want %s", out.String(), want)
	}
}

// TestGuardAnswersAParseErrorAndReadsOn: a line that is not JSON gets a
// JSON-RPC parse error (id null) and never reaches the SDK or the taker,
// which read the next line as usual; at the end of the input too.
func TestGuardAnswersAParseErrorAndReadsOn(t *testing.T) {
	t.Parallel()
	var out testkit.Buffer
	g := New(&out, Options{Drain: time.Hour})
	// The last two lines are sent once the ping is answered: the guard
	// answers them itself, and would otherwise race the SDK's answer.
	first := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"cut short"}` + "\n" +
		`{"jsonrpc":"2.0","id":4,"method":"ping"}` + "\n"
	rest := `{"a":1}{"b":2}` + "\n" +
		`{"jsonrpc":"2.0","id":5,`
	in, client := io.Pipe()
	go func() {
		_, _ = io.WriteString(client, first)
	}()
	var offered []string
	served := make(chan error, 1)
	go func() {
		served <- g.Serve(context.Background(), in, byLine(func(line []byte) bool {
			offered = append(offered, string(line))
			return false
		}))
	}()
	sdk := wire.NewLines(g.sdkR, 0)
	line, err := sdk.Next()
	if err != nil || !bytes.Contains(line, []byte(`"method":"ping"`)) {
		t.Fatalf("the SDK read %q, %v", line, err)
	}
	sdkWrite(t, g, `{"jsonrpc":"2.0","id":`+sdkID(t, line)+`,"result":{}}`)
	go func() {
		_, _ = io.WriteString(client, rest)
		client.Close()
	}()
	if _, err := sdk.Next(); err != io.EOF {
		t.Fatalf("the SDK's input after the last line: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if len(offered) != 1 {
		t.Fatalf("the taker was offered %q: only the JSON line", offered)
	}
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: unexpected end of JSON input"}}` + "\n" +
		`{"jsonrpc":"2.0","id":4,"result":{}}` + "\n" +
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: invalid character '{' after top-level value (at byte 8 of the line)"}}` + "\n" +
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: unexpected end of JSON input"}}` + "\n"
	if out.String() != want {
		t.Fatalf("the client got\n%s\nwant\n%s", out.String(), want)
	}
}

// TestGuardSendsNoCodeZero: go-sdk answers a second initialize, or a
// request before initialize, with an error of code 0, which JSON-RPC does
// not define; the guard sends it as an Invalid Request.
func TestGuardSendsNoCodeZero(t *testing.T) {
	for in, want := range map[string]string{
		`{"jsonrpc":"2.0","id":2,"error":{"code":0,"message":"duplicate \"initialize\" received"}}` + "\n": `{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"duplicate \"initialize\" received"}}` + "\n",
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}` + "\n":                           `{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}` + "\n",
		`{"jsonrpc":"2.0","id":4,"result":{"text":"\"error\":{\"code\":0,"}}` + "\n":                       `{"jsonrpc":"2.0","id":4,"result":{"text":"\"error\":{\"code\":0,"}}` + "\n",
		`{"id":6, "error": {"message": "x", "code": 0}, "jsonrpc":"2.0"}` + "\n":                           `{"id":6, "error": {"message": "x", "code": -32600}, "jsonrpc":"2.0"}` + "\n",
		`{"jsonrpc":"2.0","id":5,"result":{"structuredContent":{"error":{"code":0,"x":1}}}}` + "\n":        `{"jsonrpc":"2.0","id":5,"result":{"structuredContent":{"error":{"code":0,"x":1}}}}` + "\n",
	} {
		for _, sdk := range []bool{false, true} {
			var out bytes.Buffer
			g := New(&out, Options{})
			write := g.Write
			if sdk {
				write = g.writeSDK
			}
			if _, err := write([]byte(in)); err != nil {
				t.Fatal(err)
			}
			if out.String() != want {
				t.Errorf("the SDK's: %v; Write(%s) sent %s, want %s", sdk, in, out.String(), want)
			}
		}
	}
}

// TestGuardSkipsALineOverTheBound: the client gets an Invalid Request for a
// message over the bound, and the next message is served as usual.
func TestGuardSkipsALineOverTheBound(t *testing.T) {
	t.Parallel()
	var out testkit.Buffer
	g := New(&out, Options{Drain: time.Hour, MaxLine: 1 << 10})
	huge := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"` + strings.Repeat("x", 1<<20) + `"}}` + "\n"
	hugeLast := `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"` + strings.Repeat("x", 1<<20) + `"},"id":"abc"}` + "\n"
	in := huge + hugeLast + `{"jsonrpc":"2.0","id":4,"method":"ping"}` + "\n"
	served := make(chan error, 1)
	go func() { served <- g.Serve(context.Background(), strings.NewReader(in), nil) }()
	sdk := wire.NewLines(g.sdkR, 0)
	line, err := sdk.Next()
	if err != nil || string(line) != `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n" {
		t.Fatalf("the SDK read %q, %v", line, err)
	}
	sdkWrite(t, g, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	if _, err := sdk.Next(); err != io.EOF {
		t.Fatalf("the SDK's input after the last line: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v, want the end of the input", err)
	}
	// The request fails by its own id, read as the line was skipped: a
	// client waits for that id.
	want := `{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"Invalid Request: a message of ` + strconv.Itoa(len(huge)) + ` bytes, over the limit of 1024 bytes; it was skipped, send a smaller message"}}` + "\n" +
		`{"jsonrpc":"2.0","id":"abc","error":{"code":-32600,"message":"Invalid Request: a message of ` + strconv.Itoa(len(hugeLast)) + ` bytes, over the limit of 1024 bytes; it was skipped, send a smaller message"}}` + "\n" +
		`{"jsonrpc":"2.0","id":4,"result":{}}` + "\n"
	if out.String() != want {
		t.Fatalf("the client got\n%s\nwant\n%s", out.String(), want)
	}
}
