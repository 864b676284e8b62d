package guard

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/agentctl/agentctl/mcpserver/internal/wire"
)

// TestGuardAnswersInvalidRequests: JSON that is no JSON-RPC message go-sdk
// can read gets an Invalid Request error (id null unless the request's own
// id is valid) and never reaches the SDK or the taker.
func TestGuardAnswersInvalidRequests(t *testing.T) {
	t.Parallel()
	const invalid = `{"jsonrpc":"2.0","id":%s,"error":{"code":-32600,"message":"Invalid Request: %s"}}` + "\n"
	for _, c := range []struct{ line, id, message string }{
		{`{}`, "null", `no \"jsonrpc\": \"2.0\" member`},
		{`null`, "null", "not a JSON object"},
		{`123`, "null", "not a JSON object"},
		{`"str"`, "null", "not a JSON object"},
		{`[]`, "null", "batches are not supported (MCP 2025-06-18 and later)"},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, "null", "batches are not supported (MCP 2025-06-18 and later)"},
		{`{"jsonrpc":"1.0","id":5,"method":"ping"}`, "5", `\"jsonrpc\" is \"1.0\", not \"2.0\"`},
		{`{"jsonrpc":2,"id":"a","method":"ping"}`, `"a"`, `\"jsonrpc\" is 2, not \"2.0\"`},
		{`{"id":5,"method":"ping"}`, "5", `no \"jsonrpc\": \"2.0\" member`},
		{`{"jsonrpc":"2.0","method":"notifications/x","jsonrpc":"2"}`, "null", `\"jsonrpc\" is \"2\", not \"2.0\"`},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, "null", "id true is neither a string nor a number"},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, "null", `id {\"a\":1} is neither a string nor a number`},
		{`{"jsonrpc":"2.0","id":1e999,"method":"ping"}`, "null", "id 1e999 is neither a string nor a number"},
		{`{"jsonrpc":"2.0","id":5,"method":5}`, "5", "method 5 is not a string"},
		{`{"jsonrpc":"2.0","id":5,"method":null}`, "5", "method null is not a string"},
		{`{"jsonrpc":"2.0","method":["x"]}`, "null", `method [\"x\"] is not a string`},
		{`{"jsonrpc":"2.0","id":5,"method":"ping","params":"x"}`, "5", `params \"x\" is neither an object nor an array`},
		{`{"jsonrpc":"2.0","method":"notifications/x","params":1}`, "null", "params 1 is neither an object nor an array"},
		{`{"jsonrpc":"2.0","result":{}}`, "null", "no method, and no id to answer"},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}`, "null", "no method, and no id to answer"},
		{`{"jsonrpc":"2.0","id":7}`, "null", "neither a method, nor a result or an error"},
		{`{"jsonrpc":"2.0","id":7,"error":"no"}`, "null", "error is not an object with an integer code and a string message"},
		{`{"jsonrpc":"2.0","id":7,"error":{"code":1.5,"message":"m"}}`, "null", "error is not an object with an integer code and a string message"},
		{strings.Repeat("[", 1001) + strings.Repeat("]", 1001), "null", "nested deeper than 1000 levels"},
		{`{"jsonrpc":"2.0","method":"x","params":` + strings.Repeat(`{"a":`, 1000) + "1" + strings.Repeat("}", 1000) + "}", "null", "nested deeper than 1000 levels"},
	} {
		var out testkit.Buffer
		g := New(&out, Options{})
		taken := false
		if g.route([]byte(c.line), func(*wire.Message) bool { taken = true; return false }) != nil || taken {
			t.Errorf("%.60s went on to the SDK or the taker", c.line)
		}
		if want := strings.Replace(strings.Replace(invalid, "%s", c.id, 1), "%s", c.message, 1); out.String() != want {
			t.Errorf("%.60s: the client got\n%s\nwant\n%s", c.line, out.String(), want)
		}
		if ids := g.pendingIDs(); len(ids) != 0 {
			t.Errorf("%.60s left %q pending", c.line, ids)
		}
	}
}

// TestGuardPassesValidMessages: what go-sdk reads goes on, untouched but
// for a request's id, which becomes the guard's: ids of both kinds and
// null, params null or absent, escaped keys, the client's answers, 1000
// levels of nesting.
func TestGuardPassesValidMessages(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`:                                                                      `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"a","method":"ping","params":{}}`:                                                        `{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping","params":null}`:                                                      `{"jsonrpc":"2.0","id":1,"method":"ping","params":null}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{}}`:                                                 "",
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`:                                                        "",
		`{"jsonrpc":"2.0","method":"x","params":[1]}`:                                                                   "",
		`{"jsonrpc":"2.0","\u0069d":2,"method":"ping"}`:                                                                 `{"jsonrpc":"2.0","\u0069d":1,"method":"ping"}`,
		`{"jsonrpc":"2\u002e0","id":3,"method":"ping"}`:                                                                 `{"jsonrpc":"2\u002e0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":4,"result":{}}`:                                                                          "",
		`{"jsonrpc":"2.0","id":"s","error":{"code":-1,"message":"no"}}`:                                                 "",
		`{"jsonrpc":"2.0","method":"x","params":{"s":"` + strings.Repeat("[", 2000) + `"}}`:                             "",
		`{"jsonrpc":"2.0","method":"x","params":` + strings.Repeat(`{"a":`, 999) + "1" + strings.Repeat("}", 999) + "}": "",
	} {
		if want == "" {
			want = line
		}
		var out testkit.Buffer
		g := New(&out, Options{})
		if got := g.route([]byte(line), nil); string(got) != want || out.String() != "" {
			t.Errorf("%.60s: the SDK got %.60s, want %.60s; refused with %s", line, got, want, out.String())
		}
	}
}

// TestGuardPassesBatchesOnlyToSessionsThatHaveThem: a batch goes to the
// SDK only once initialize was answered with a version before 2025-06-18,
// and only if go-sdk would not end the connection on it.
func TestGuardPassesBatchesOnlyToSessionsThatHaveThem(t *testing.T) {
	t.Parallel()
	const batch = `[{"jsonrpc":"2.0","id":3,"method":"ping"}]`
	for _, c := range []struct {
		version string
		passes  bool
	}{{"2024-11-05", true}, {"2025-03-26", true}, {"2025-06-18", false}, {"2025-11-25", false}} {
		var out testkit.Buffer
		g := New(&out, Options{})
		if g.route([]byte(batch), nil) != nil {
			t.Errorf("%s: a batch before initialize went to the SDK", c.version)
		}
		id := sdkID(t, g.route([]byte(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{}}`), nil))
		sdkWrite(t, g, `{"jsonrpc":"2.0","id":`+id+`,"result":{"protocolVersion":"`+c.version+`"}}`)
		if got := g.route([]byte(batch), nil) != nil; got != c.passes {
			t.Errorf("%s: the batch went to the SDK: %v, want %v (client got %s)", c.version, got, c.passes, out.String())
		}
	}

	var out testkit.Buffer
	g := New(&out, Options{})
	g.batches = true
	g.route([]byte(`{"jsonrpc":"2.0","id":9,"method":"slow"}`), nil)
	for _, c := range []struct{ line, message string }{
		{`[]`, "empty batch"},
		{`[1]`, "message 1 of the batch: not a JSON object"},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"id":2,"method":"ping"}]`, `message 2 of the batch: no \"jsonrpc\": \"2.0\" member`},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"}]`, "message 2 of the batch: id 1 is already in use"},
		{`[{"jsonrpc":"2.0","id":9,"method":"ping"}]`, "message 1 of the batch: id 9 is already in use"},
	} {
		before := out.String()
		if g.route([]byte(c.line), nil) != nil {
			t.Errorf("%s went to the SDK", c.line)
		}
		want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: ` + c.message + `"}}` + "\n"
		if got := strings.TrimPrefix(out.String(), before); got != want {
			t.Errorf("%s: the client got\n%s\nwant\n%s", c.line, got, want)
		}
	}
}

// TestGuardSkipsAByteOrderMark: a line that starts with UTF-8's byte-order
// mark is read without it.
func TestGuardSkipsAByteOrderMark(t *testing.T) {
	t.Parallel()
	var out testkit.Buffer
	g := New(&out, Options{Drain: time.Hour})
	in := "\ufeff" + `{"jsonrpc":"2.0","method":"a"}` + "\n"
	go g.Serve(context.Background(), strings.NewReader(in), nil)
	got, err := io.ReadAll(g.sdkR)
	if err != nil || string(got) != `{"jsonrpc":"2.0","method":"a"}`+"\n" || out.String() != "" {
		t.Fatalf("the SDK read %q, %v; the client got %s", got, err, out.String())
	}
}
