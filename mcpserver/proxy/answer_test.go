package proxy

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestCallRecordKeepsStructuredContent: the structuredContent of a result
// is kept as written and taken out of what go-sdk decodes; an error answer
// is kept whatever its code.
func TestCallRecordKeepsStructuredContent(t *testing.T) {
	var r callRecord
	resp := &jsonrpc.Response{Result: json.RawMessage(`{"content":[],"structuredContent":{"n":12345678901234567890,"x":1e400}}`)}
	r.answeredWith(resp)
	a := r.snapshot()
	if a.aside == nil || string(a.aside.structured) != `{"n":12345678901234567890,"x":1e400}` || string(resp.Result) != `{"content":[]}` {
		t.Fatalf("kept %+v, left %s", a.aside, resp.Result)
	}
	var e callRecord
	e.answeredWith(&jsonrpc.Response{Error: &jsonrpc.Error{Code: -32003, Message: "busy"}})
	if a := e.snapshot(); !a.answered || a.rpcErr == nil || a.rpcErr.Code != -32003 {
		t.Fatalf("error answer: %+v", a)
	}
}
