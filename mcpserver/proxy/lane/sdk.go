package lane

import (
	"bytes"
	"encoding/json"

	"github.com/agentctl/agentctl/mcpserver/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Where the lane answers as go-sdk would. Each rule mirrors go-sdk v1.8.0
// at the place named; the endpoint's tests (TestLaneAnswersAsTheSDKDoes*
// in package mcpserver) send the same requests through the lane and
// through the SDK and compare the answers by value, so a new go-sdk that
// changes one of these fails them.

// statelessVersion is the first protocol version without initialize: each
// request carries the client's version and capabilities in _meta.
const statelessVersion = "2026-07-28"

// protocol is what the lane knows of the client's protocol for one request.
type protocol struct {
	// stateless: the request carries the 2026-07-28 _meta: its result names
	// the server in _meta.
	stateless bool
	// multiRoundTrip: the session speaks 2026-07-28, whose tools/call
	// results say "resultType".
	multiRoundTrip bool
}

// protocolOf checks that the SDK would take a request with this _meta in
// this session, and says how to answer it; ok is false to leave the
// request to the SDK (which also explains what is wrong). It mirrors the
// initialization gate of go-sdk v1.8.0's (*ServerSession).handle
// (mcp/server.go): a request is served once the session is initialized,
// by initialize or by a first 2026-07-28 request.
func (l *Lane) protocolOf(meta []byte) (tok []byte, p protocol, ok bool) {
	ref := l.session.Load()
	if ref == nil {
		return nil, p, false
	}
	params := ref.ss.InitializeParams()
	if params == nil {
		return nil, p, false // the SDK initializes the session, or refuses
	}
	tok, p.stateless, ok = readMeta(meta)
	p.multiRoundTrip = params.ProtocolVersion >= statelessVersion
	return tok, p, ok
}

// readMeta reads a request's _meta: the progress token, and whether it is a
// 2026-07-28 request (which needs no initialize). ok is false when the
// lane should leave the request to the SDK: an older version named per
// request, protocol keys without a version (the SDK explains), or a
// numeric progress token that is not exact ([wire.Exact]). It
// mirrors go-sdk v1.8.0's validateRequestMeta (mcp/shared.go), taking only
// what that function accepts without a doubt.
func readMeta(meta []byte) (tok []byte, stateless, ok bool) {
	if meta == nil || string(meta) == "null" {
		return nil, false, true
	}
	var version, caps, info []byte
	protocolKeys := false
	if !wire.EachMember(meta, func(k, v []byte) bool {
		// A key written with escapes is the key it decodes to, for go-sdk:
		// "progress\u0054oken" is the progress token.
		switch k = wire.Key(k); {
		case string(k) == "progressToken":
			tok = v
			if string(v) == "null" { // null asks for no progress
				tok = nil
			}
			// A number the SDK path would not send back as written (it
			// reads tokens through a float64): the SDK's.
			if !wire.Exact(v) && (v[0] == '-' || v[0] >= '0' && v[0] <= '9') {
				return false
			}
		case string(k) == "io.modelcontextprotocol/protocolVersion":
			version = v
		case string(k) == "io.modelcontextprotocol/clientCapabilities":
			caps = v
		case string(k) == "io.modelcontextprotocol/clientInfo":
			info = v
		case bytes.HasPrefix(k, []byte("io.modelcontextprotocol/")):
			protocolKeys = true
		}
		return true
	}) {
		return nil, false, false
	}
	if version == nil {
		// Protocol keys without a version: the SDK's to judge.
		return tok, false, !protocolKeys && caps == nil && info == nil
	}
	// Exactly the version agentctl serves statelessly, with the capabilities
	// and client details the SDK can read; anything else the SDK refuses
	// in its own words.
	if string(version) != `"`+statelessVersion+`"` || !decodes[mcp.ClientCapabilities](caps) ||
		(info != nil && !decodes[mcp.Implementation](info)) {
		return nil, false, false
	}
	return tok, true, true
}

// decodes reports whether raw is a JSON object that decodes into a T.
func decodes[T any](raw []byte) bool {
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
	var v T
	return json.Unmarshal(raw, &v) == nil
}

// callResult is a server's tools/call result as the SDK path answers the
// client: unchanged, but for an empty result ({}) and, for 2026-07-28,
// the two members go-sdk v1.8.0's (*ServerSession).handle adds
// (mcp/server.go: setCompleteResultType and annotateServerInfo).
func callResult(result []byte, p protocol, info []byte) []byte {
	if len(result) == 0 || string(result) == "null" {
		result = []byte("{}")
	}
	if p.stateless {
		result = withServerInfo(result, info)
	}
	if p.multiRoundTrip {
		// go-sdk's answer in a 2026-07-28 session: complete, not input
		// required (agentctl asks servers for 2025-11-25, which has no
		// input requests).
		result = withMember(result, `"resultType"`, `"complete"`)
	}
	return result
}

// statelessResult is a tools/list result for a 2026-07-28 request, from
// the one for a client that initialized: go-sdk v1.8.0 says "resultType"
// first (ListToolsResult embeds completeResultWithType, mcp/protocol.go)
// and names its server in _meta (annotateServerInfo, mcp/server.go).
func statelessResult(plain, info []byte) []byte {
	return append([]byte(`{"resultType":"complete",`), withServerInfo(plain, info)[1:]...)
}

// withMember adds key: value to the object result unless it has key.
func withMember(result []byte, key, value string) []byte {
	if len(result) < 2 || result[0] != '{' {
		return result
	}
	has := false
	if bytes.Contains(result, []byte(key)) {
		wire.EachMember(result, func(k, _ []byte) bool {
			has = string(k) == key
			return !has
		})
	}
	if has {
		return result
	}
	out := make([]byte, 0, len(result)+len(key)+len(value)+2)
	out = append(append(append(append(out, '{'), key...), ':'), value...)
	if rest := bytes.TrimSpace(result[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, result[1:]...)
}

// withServerInfo names agentctl in a result's _meta, as go-sdk v1.8.0's
// annotateServerInfo (mcp/server.go) does for a 2026-07-28 client
// (SEP-2575: each result identifies its server), unless the result already
// names a server.
func withServerInfo(result json.RawMessage, info json.RawMessage) json.RawMessage {
	if len(result) < 2 || result[0] != '{' {
		return result
	}
	if !bytes.Contains(result, []byte(`"_meta"`)) {
		out := make([]byte, 0, len(result)+len(info)+50)
		out = append(out, `{"_meta":{"io.modelcontextprotocol/serverInfo":`...)
		out = append(out, info...)
		out = append(out, '}')
		if rest := bytes.TrimSpace(result[1:]); len(rest) > 0 && rest[0] != '}' {
			out = append(out, ',')
		}
		return append(out, result[1:]...)
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(result, &top) != nil {
		return result
	}
	var meta map[string]json.RawMessage
	if m, ok := top["_meta"]; ok && string(m) != "null" {
		if json.Unmarshal(m, &meta) != nil {
			return result
		}
	}
	if _, ok := meta[mcp.MetaKeyServerInfo]; ok {
		return result
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	meta[mcp.MetaKeyServerInfo] = info
	var err error
	if top["_meta"], err = json.Marshal(meta); err != nil {
		return result
	}
	out, err := json.Marshal(top)
	if err != nil {
		return result
	}
	return out
}
