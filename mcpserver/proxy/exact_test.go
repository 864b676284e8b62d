package proxy

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSetAsideKeepsAnyJSONExact: structuredContent and every _meta of a
// result reach the client as the server wrote them, numbers a float64
// cannot hold included, keys written with escapes read as go-sdk reads
// them; the rest is what go-sdk reads of it.
func TestSetAsideKeepsAnyJSONExact(t *testing.T) {
	for _, tc := range []struct{ result, want string }{
		{`{"content":[{"type":"text","text":"a","_meta":{"n":12345678901234567890}}],"_meta":{"huge":1e400},"structuredContent":{"n":1.0}}`,
			`{"_meta":{"huge":1e400},"content":[{"type":"text","text":"a","_meta":{"n":12345678901234567890}}],"structuredContent":{"n":1.0}}`},
		{`{"content":[{"type":"resource","resource":{"uri":"file:///r","text":"r","_meta":{"n":-0}}}],"structured\u0043ontent":[12345678901234567890]}`,
			`{"content":[{"type":"resource","resource":{"uri":"file:///r","text":"r","_meta":{"n":-0}}}],"structuredContent":[12345678901234567890]}`},
		{`{"content":[{"type":"text","text":"a"}],"_meta":null,"structuredContent":null}`,
			`{"content":[{"type":"text","text":"a"}]}`},
		{`{"content":[{"type":"text","text":"plain"}]}`, `{"content":[{"type":"text","text":"plain"}]}`},
	} {
		rest, aside := SetAside([]byte(tc.result))
		var r mcp.CallToolResult
		if err := r.UnmarshalJSON(rest); err != nil {
			t.Fatalf("%s: go-sdk cannot read what is left, %s: %v", tc.result, rest, err)
		}
		aside.Restore(&r)
		got, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.result, got, tc.want)
		}
	}
	// A _meta that is no object stays for go-sdk to refuse.
	rest, aside := SetAside([]byte(`{"content":[],"_meta":5}`))
	var r mcp.CallToolResult
	if err := r.UnmarshalJSON(rest); err == nil || aside != nil {
		t.Errorf("a _meta of 5: left %s, set aside %+v, go-sdk's error %v", rest, aside, err)
	}
}

// TestGoSDKReadsOneValueOfALine: go-sdk reads the first JSON value of a
// line and ignores the rest; agentctl takes such a line for none
// ([errMoreAfter], by json.Valid). If go-sdk refuses them, the check may go.
func TestGoSDKReadsOneValueOfALine(t *testing.T) {
	for _, l := range []string{`{"jsonrpc":"2.0","id":1,"result":{}}0`, `{"jsonrpc":"2.0","id":1,"result":{}} {}`} {
		if _, err := jsonrpc.DecodeMessage([]byte(l)); err != nil {
			t.Fatalf("go-sdk no longer reads %s (%v): stdioConn.message's check may go", l, err)
		}
	}
}
