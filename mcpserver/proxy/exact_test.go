package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
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

// TestDecodeLineWantsOneValue: go-sdk reads the first JSON value of a
// line and ignores the rest; agentctl takes such a line for none.
func TestDecodeLineWantsOneValue(t *testing.T) {
	if _, err := decodeLine([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{`{"jsonrpc":"2.0","id":1,"result":{}}0`, `{"jsonrpc":"2.0","id":1,"result":{}} {}`} {
		if _, err := jsonrpc.DecodeMessage([]byte(l)); err != nil {
			t.Fatalf("go-sdk no longer reads %s (%v): decodeLine's check may go", l, err)
		}
		if _, err := decodeLine([]byte(l)); !errors.Is(err, errMoreAfter) {
			t.Errorf("%s: %v", l, err)
		}
	}
}

// fakeConn is a connection whose reads come from a channel and whose
// writes are dropped.
type fakeConn struct{ in chan jsonrpc.Message }

func (c *fakeConn) Read(context.Context) (jsonrpc.Message, error) {
	m, ok := <-c.in
	if !ok {
		return nil, io.EOF
	}
	return m, nil
}
func (c *fakeConn) Write(context.Context, jsonrpc.Message) error { return nil }
func (c *fakeConn) Close() error                                 { return nil }
func (c *fakeConn) SessionID() string                            { return "" }

// TestRecorderRecordsAsTheSDKPathDoes: over another reader's lines, a
// call's answer is recorded with its structuredContent kept as written,
// and an answer the reader could not read fails its call as unreadable,
// not as the server's error.
func TestRecorderRecordsAsTheSDKPathDoes(t *testing.T) {
	in := make(chan jsonrpc.Message, 2)
	r := RecordCalls(&fakeConn{in: in})
	recs := map[int64]*callRecord{}
	for _, n := range []int64{1, 2} {
		id, err := jsonrpc.MakeID(float64(n))
		if err != nil {
			t.Fatal(err)
		}
		recs[n] = &callRecord{}
		ctx := context.WithValue(context.Background(), callRecordKey{}, recs[n])
		if err := r.Write(ctx, &jsonrpc.Request{ID: id, Method: "tools/call", Params: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	one, _ := jsonrpc.MakeID(float64(1))
	two, _ := jsonrpc.MakeID(float64(2))
	in <- &jsonrpc.Response{ID: one, Result: json.RawMessage(`{"content":[],"structuredContent":{"n":12345678901234567890}}`)}
	// The reader's error answer in place of one it could not read: read
	// in its turn, it fails the call as unreadable.
	line := r.Unreadable(two, "a line that is not JSON")
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		t.Fatal(err)
	}
	if a := recs[2].snapshot(); a.answered {
		t.Fatal("call 2 failed before its line was read")
	}
	in <- msg
	for range 2 {
		if _, err := r.Read(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if a := recs[1].snapshot(); !a.answered || a.aside == nil || string(a.aside.structured) != `{"n":12345678901234567890}` {
		t.Errorf("call 1: %+v", a)
	}
	if a := recs[2].snapshot(); a.why != "a line that is not JSON" {
		t.Errorf("call 2: %+v", a)
	}
	if !strings.Contains(AnswerUnreadable("up", recs[2].snapshot().why), "sent a line that is not JSON") {
		t.Error("AnswerUnreadable's words changed")
	}
}
