package guard

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/agentctl/agentctl/mcpserver/internal/wire"
)

// TestGuardGivesTheClientsIDsBack: every request reaches the SDK under an
// id of the guard's, one per request, and its answer, result or error,
// reaches the client with the id as the client wrote it, also when two
// requests in flight share an id. The SDK's own requests, and the client's
// answers to them, pass unchanged.
func TestGuardGivesTheClientsIDsBack(t *testing.T) {
	t.Parallel()
	ids := []string{`12345678901234567890`, `-0`, `1e2`, `1E2`, `"\u0061"`, `1.5`, `1`, `7`, `7`, `"a\/b"`, `-9007199254740993`, `0.0`}
	var out testkit.Buffer
	g := New(&out, Options{})
	var sdkIDs []string
	for _, id := range ids {
		toSDK := g.route([]byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"x"}}`), nil)
		got := sdkID(t, toSDK)
		if slices.Contains(sdkIDs, got) {
			t.Fatalf("two requests reached the SDK with id %s", got)
		}
		sdkIDs = append(sdkIDs, got)
	}
	// The SDK asks the client something; the client answers.
	sdkWrite(t, g, `{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{}}`)
	if got, want := string(g.route([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`), nil)), `{"jsonrpc":"2.0","id":1,"result":{}}`; got != want {
		t.Fatalf("the client's answer reached the SDK as %s, want %s", got, want)
	}
	var want strings.Builder
	want.WriteString(`{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{}}` + "\n")
	for i, id := range slices.Backward(sdkIDs) { // answered in any order
		if i%2 == 0 {
			sdkWrite(t, g, `{"jsonrpc":"2.0","id":`+id+`,"result":{"n":`+id+`}}`)
			want.WriteString(`{"jsonrpc":"2.0","id":` + ids[i] + `,"result":{"n":` + id + `}}` + "\n")
		} else {
			sdkWrite(t, g, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32602,"message":"no"}}`)
			want.WriteString(`{"jsonrpc":"2.0","id":` + ids[i] + `,"error":{"code":-32602,"message":"no"}}` + "\n")
		}
	}
	if out.String() != want.String() {
		t.Fatalf("the client got\n%s\nwant\n%s", out.String(), want.String())
	}
	if ids := g.pendingIDs(); len(ids) != 0 {
		t.Fatalf("still pending: %q", ids)
	}
}

// TestGuardCancelsEveryRequestWithTheID: a cancellation names requests by
// their ids' values, as go-sdk matched them (1, 1.0 and 1e0 are one id;
// "a" and "\u0061" too), and cancels every request in flight with that id:
// the SDK hears of each under its own id, and none of their answers reaches
// the client.
func TestGuardCancelsEveryRequestWithTheID(t *testing.T) {
	t.Parallel()
	var out testkit.Buffer
	g := New(&out, Options{})
	one := sdkID(t, g.route([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`), nil))
	other := sdkID(t, g.route([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call"}`), nil))
	oneAgain := sdkID(t, g.route([]byte(`{"jsonrpc":"2.0","id":1.0,"method":"tools/call"}`), nil))
	a := sdkID(t, g.route([]byte(`{"jsonrpc":"2.0","id":"a","method":"tools/call"}`), nil))
	got := string(g.route([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1e0,"reason":"r"}}`), nil))
	want := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + one + `,"reason":"r"}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + oneAgain + `,"reason":"r"}}` + "\n"
	if got != want {
		t.Fatalf("the SDK got\n%s\nwant\n%s", got, want)
	}
	if got, want := string(g.route([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"\u0061"}}`), nil)),
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+a+`}}`+"\n"; got != want {
		t.Fatalf("the SDK got %s, want %s", got, want)
	}
	// Nothing left with that id: the SDK hears nothing.
	if got := g.route([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`), nil); got != nil {
		t.Fatalf("the SDK got %s", got)
	}
	if ids := g.pendingIDs(); !slices.Equal(ids, []string{"2"}) {
		t.Fatalf("pending %q, want 2's", ids)
	}
	for _, id := range []string{one, oneAgain, a, other} {
		sdkWrite(t, g, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":0,"message":"context canceled"}}`)
	}
	if got, want := out.String(), `{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"context canceled"}}`+"\n"; got != want {
		t.Fatalf("the client got\n%s\nwant\n%s", got, want)
	}
}

// TestGuardMapsProgressTokens: a progress token the SDK would not write
// back as written reaches it as the guard's, and the SDK's progress
// notifications with it reach the client with the client's bytes; tokens
// the SDK carries exactly pass unchanged. Of a token given twice, the last
// counts, as go-sdk reads it.
func TestGuardMapsProgressTokens(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		meta, token string // the request's _meta; the token that counts
		mapped      bool
	}{
		{`{"progressToken":12345678901234567890}`, `12345678901234567890`, true},
		{`{"progressToken":1e2}`, `1e2`, true},
		{`{"progressToken":1.5}`, `1.5`, true},
		{`{"progressToken":-0}`, `-0`, true},
		{`{"progressToken":-0.0}`, `-0.0`, true},
		{`{"progressToken":"\u0074ok"}`, `"\u0074ok"`, true},
		{`{"progressToken":"é"}`, `"é"`, true},
		{`{"progressToken":"a<b"}`, `"a<b"`, true},
		{`{"progressToken":"agentctl-guard-9"}`, `"agentctl-guard-9"`, true},
		{`{"progressToken":"x","progressToken":1e2}`, `1e2`, true},
		{`{"progressToken":1e2,"progressToken":"x"}`, `"x"`, false},
		{`{"pro\u0067ressToken":1e2}`, `1e2`, true},
		{`{"progressToken":"tok"}`, `"tok"`, false},
		{`{"progressToken":123456789012345}`, `123456789012345`, false},
		{`{"progressToken":-7}`, `-7`, false},
		{`{"progressToken":0}`, `0`, false},
	} {
		var out testkit.Buffer
		g := New(&out, Options{})
		toSDK := g.route([]byte(`{"jsonrpc":"2.0","id":"r","method":"tools/call","params":{"name":"x","_meta":`+c.meta+`}}`), nil)
		id := sdkID(t, toSDK)
		var sm wire.Message
		sm.Parse(toSDK)
		sdkTok := string(sm.Token)
		if mapped := sdkTok != c.token; mapped != c.mapped {
			t.Errorf("%s: the SDK got token %s: mapped %v, want %v", c.meta, sdkTok, mapped, c.mapped)
			continue
		}
		sdkWrite(t, g, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":`+sdkTok+`,"progress":1}}`)
		sdkWrite(t, g, `{"jsonrpc":"2.0","id":`+id+`,"result":{}}`)
		want := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` + c.token + `,"progress":1}}` + "\n" +
			`{"jsonrpc":"2.0","id":"r","result":{}}` + "\n"
		if out.String() != want {
			t.Errorf("%s: the client got\n%s\nwant\n%s", c.meta, out.String(), want)
		}
		if g.tokens != 0 || len(g.sdk) != 0 {
			t.Errorf("%s: %d tokens, %d requests left", c.meta, g.tokens, len(g.sdk))
		}
	}
}

// TestGuardKeepsTheTakersRequests: the taker (the lane) may answer a
// request before it says it takes it; a request it took and never answered
// gets the closing error with the client's id as written; one cancellation
// reaches both the taker and the SDK when each has a request with that id.
func TestGuardKeepsTheTakersRequests(t *testing.T) {
	t.Parallel()
	var out testkit.Buffer
	g := New(&out, Options{})
	var offered []string
	take := byLine(func(line []byte) bool {
		offered = append(offered, string(line))
		switch {
		case strings.Contains(string(line), `"list"`): // answered at once
			if _, err := g.Write([]byte(`{"jsonrpc":"2.0","id":"l","result":{}}` + "\n")); err != nil {
				t.Fatal(err)
			}
			return true
		case strings.Contains(string(line), `"lane's"`):
			return true
		case strings.Contains(string(line), "notifications/cancelled"):
			return strings.Contains(string(line), `"c"`)
		}
		return false
	})
	if got := g.route([]byte(`{"jsonrpc":"2.0","id":"l","method":"list"}`), take); got != nil {
		t.Fatalf("the SDK got %s", got)
	}
	g.route([]byte(`{"jsonrpc":"2.0","id":"a\u0062","method":"x","params":{"name":"lane's"}}`), take)
	g.route([]byte(`{"jsonrpc":"2.0","id":"c","method":"x","params":{"name":"lane's"}}`), take)
	sdkC := sdkID(t, g.route([]byte(`{"jsonrpc":"2.0","id":"c","method":"x"}`), take))
	if ids := g.pendingIDs(); !slices.Equal(ids, []string{`"a\u0062"`, `"c"`, `"c"`}) {
		t.Fatalf("pending %q", ids)
	}
	got := string(g.route([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c"}}`), take))
	if want := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + sdkC + `}}` + "\n"; got != want {
		t.Fatalf("the SDK got %s, want %s", got, want)
	}
	if n := len(offered); n != 5 {
		t.Fatalf("the taker was offered %d messages, want 5", n)
	}
	g.Close()
	want := `{"jsonrpc":"2.0","id":"l","result":{}}` + "\n" +
		`{"jsonrpc":"2.0","id":"a\u0062","error":{"code":-32004,"message":"server is closing: agentctl stopped before answering"}}` + "\n"
	if out.String() != want {
		t.Fatalf("the client got\n%s\nwant\n%s", out.String(), want)
	}
}
