package lane

import (
	"encoding/json"

	"github.com/agentctl/agentctl/mcpserver/internal/wire"
	"github.com/agentctl/agentctl/mcpserver/proxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What a server's answer looks like once the SDK path has read it and
// written it again. go-sdk v1.8.0's client session decodes a tools/call
// result into an [mcp.CallToolResult] (CallToolResult.UnmarshalJSON,
// mcp/protocol.go) and the server session encodes that again: members MCP
// does not define are dropped, "content" is always there, an isError of
// false and an empty _meta are left out, and bytes that are not UTF-8
// become U+FFFD. The lane relays a result as the server wrote it when that
// changes nothing (the common shape, checked by one scan); any other result
// goes through the same decoding and encoding as on the SDK path.

// sdkResult is result as the SDK path answers it; the error is go-sdk's
// when it cannot read it as a tools/call result (not an object, a content
// item of no type it knows), on which both paths fail that call alone
// ([proxy.NotACallResult]) and keep the server.
func sdkResult(result []byte) (out []byte, err error) {
	if string(result) == "null" {
		result = []byte("{}")
	}
	if len(result) > 0 && plainResult(result) {
		return result, nil
	}
	// structuredContent and every _meta go on as the server wrote them, as
	// on the SDK path (proxy.SetAside, on both): go-sdk would decode their
	// numbers through a float64 (12345678901234567890) or refuse them
	// (1e400). The rest is decoded without them.
	rest, aside := proxy.SetAside(result)
	// Read as go-sdk's client session reads it (jsonrpc2's AsyncCall.Await:
	// its own decoder, whose errors the call's error repeats): an answer
	// without a result is EOF to it.
	var r mcp.CallToolResult
	if err := r.UnmarshalJSON(rest); err != nil {
		return nil, err
	}
	aside.Restore(&r)
	return json.Marshal(&r)
}

// plainResult reports whether go-sdk would write result back the same, by
// value: an object of content (text items only, each with a type and a
// text), structuredContent and isError true, with plain keys. (It is valid
// UTF-8: the server's connection made its line so, as go-sdk reads it.)
// Numbers in structuredContent are not looked at: both paths pass
// structuredContent on as written.
func plainResult(result []byte) bool {
	content := false
	return wire.EachMember(result, func(k, v []byte) bool {
		switch {
		case wire.KeyIs(k, "content"):
			content = true
			return plainContent(v)
		case wire.KeyIs(k, "structuredContent"):
			return string(v) != "null"
		case wire.KeyIs(k, "isError"):
			return string(v) == "true"
		}
		return false
	}) && content
}

// plainContent reports whether v is an array of text items, each just a
// type and a text.
func plainContent(v []byte) bool {
	return wire.EachElement(v, func(it []byte) bool {
		typ, text := false, false
		return wire.EachMember(it, func(k, v []byte) bool {
			switch {
			case wire.KeyIs(k, "type"):
				typ = string(v) == `"text"`
				return typ
			case wire.KeyIs(k, "text"):
				text = len(v) > 0 && v[0] == '"'
				return text
			}
			return false
		}) && typ && text
	})
}
