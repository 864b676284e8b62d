package lane

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/agentctl/agentctl/mcpserver/internal/jsonscan"
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
	if len(result) == 0 || string(result) == "null" {
		result = []byte("{}")
	}
	if plainResult(result) {
		return result, nil
	}
	// structuredContent goes on as the server wrote it, as on the SDK path
	// (proxy's answer reader keeps it aside): go-sdk would decode its
	// numbers through a float64 (12345678901234567890) or refuse them
	// (1e400). The rest is decoded without it.
	var sc json.RawMessage
	rest := []byte{'{'}
	object := jsonscan.EachMember(result, func(k, v []byte) bool {
		if jsonscan.KeyIs(k, "structuredContent") {
			if string(v) != "null" {
				sc = v
			}
			return true
		}
		if len(rest) > 1 {
			rest = append(rest, ',')
		}
		rest = append(append(append(rest, k...), ':'), v...)
		return true
	})
	rest = append(rest, '}')
	if !object { // not an object: go-sdk's error, as on the SDK path
		rest, sc = result, nil
	}
	var r mcp.CallToolResult
	if err := json.Unmarshal(rest, &r); err != nil {
		return nil, err
	}
	if sc != nil {
		r.StructuredContent = sc
	}
	return json.Marshal(&r)
}

// plainResult reports whether go-sdk would write result back the same, by
// value: an object of content (text items only, each with a type and a
// text), structuredContent and isError true, all in valid UTF-8 and with
// plain keys. Numbers in structuredContent are not looked at: both paths
// pass structuredContent on as written.
func plainResult(result []byte) bool {
	if !utf8.Valid(result) {
		return false
	}
	content := false
	return jsonscan.EachMember(result, func(k, v []byte) bool {
		switch {
		case jsonscan.KeyIs(k, "content"):
			content = true
			return plainContent(v)
		case jsonscan.KeyIs(k, "structuredContent"):
			return string(v) != "null"
		case jsonscan.KeyIs(k, "isError"):
			return string(v) == "true"
		}
		return false
	}) && content
}

// plainContent reports whether v is an array of text items, each just a
// type and a text.
func plainContent(v []byte) bool {
	return jsonscan.EachElement(v, func(it []byte) bool {
		typ, text := false, false
		return jsonscan.EachMember(it, func(k, v []byte) bool {
			switch {
			case jsonscan.KeyIs(k, "type"):
				typ = string(v) == `"text"`
				return typ
			case jsonscan.KeyIs(k, "text"):
				text = len(v) > 0 && v[0] == '"'
				return text
			}
			return false
		}) && typ && text
	})
}

// sdkError is a server's JSON-RPC error as the SDK path passes it on
// (go-sdk's jsonrpc.Error: code, message and data): other members dropped.
func sdkError(rpcErr []byte) []byte {
	if utf8.Valid(rpcErr) && jsonscan.EachMember(rpcErr, func(k, _ []byte) bool {
		return jsonscan.KeyIs(k, "code") || jsonscan.KeyIs(k, "message") || jsonscan.KeyIs(k, "data")
	}) {
		return rpcErr
	}
	var e struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	}
	if json.Unmarshal(rpcErr, &e) != nil {
		return rpcErr
	}
	out, err := json.Marshal(e)
	if err != nil {
		return rpcErr
	}
	return out
}

// validUTF8 is msg with each byte that is not part of valid UTF-8 replaced
// by U+FFFD, as encoding/json decodes it on the SDK path.
func validUTF8(msg []byte) []byte {
	out := make([]byte, 0, len(msg)+16)
	for len(msg) > 0 {
		r, n := utf8.DecodeRune(msg)
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, msg[:n]...)
		}
		msg = msg[n:]
	}
	return out
}
