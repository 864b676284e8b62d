package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's tools/call result goes to the client through go-sdk's
// decoding into an [mcp.CallToolResult] (the SDK path's client session
// does it; the fast lane does it for any result it cannot relay as
// written), which reads every number of a member typed any through a
// float64: 12345678901234567890 becomes 12345678901234567000, and 1e400
// fails the call. So the members that may hold any JSON go around it, on
// both paths: [SetAside] takes them out of the result before go-sdk reads
// it, and [Aside.Restore] puts them back, as the server wrote them, into
// what go-sdk read. They are structuredContent and every _meta (the
// result's, each content item's, an embedded resource's). What go-sdk
// types otherwise (an annotation's priority is a float64) it reads as it
// reads it.

// Aside is what [SetAside] took out of a result.
type Aside struct {
	structured json.RawMessage
	meta       map[string]json.RawMessage
	// items are the content items' _meta, by index; nil when the result's
	// content was not set aside item by item.
	items []itemAside
}

type itemAside struct {
	meta, resourceMeta map[string]json.RawMessage
}

// SetAside takes structuredContent and every _meta out of a tools/call
// result, as go-sdk would read their members (keys with escapes decoded,
// the last of duplicate keys), and returns the rest for go-sdk to decode,
// and what it took; nil when there is nothing to take (the result as it
// is). Bytes that are not UTF-8 become U+FFFD, as go-sdk decodes them. A
// _meta that is no object (nor null) stays where it is: go-sdk refuses
// it, on both paths.
func SetAside(result []byte) ([]byte, *Aside) {
	// A key written with escapes ("_m\u0065ta") is one too.
	if !bytes.Contains(result, []byte(`"structuredContent"`)) && !bytes.Contains(result, []byte(`"_meta"`)) &&
		!bytes.Contains(result, []byte(`\u`)) {
		return result, nil
	}
	if !utf8.Valid(result) {
		result = ValidUTF8(result)
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(result, &top) != nil || top == nil {
		return result, nil // not an object: go-sdk says what is wrong with it
	}
	a := &Aside{}
	took := false
	if sc, ok := top["structuredContent"]; ok {
		if string(sc) != "null" {
			a.structured = sc
		}
		delete(top, "structuredContent")
		took = true
	}
	if m, ok := takeMeta(top); ok {
		a.meta, took = m, true
	}
	if c, ok := top["content"]; ok {
		var items []json.RawMessage
		if json.Unmarshal(c, &items) == nil && items != nil {
			a.items = make([]itemAside, len(items))
			changed := false
			for i, it := range items {
				var (
					im  map[string]json.RawMessage
					typ string
				)
				if json.Unmarshal(it, &im) != nil || im == nil || json.Unmarshal(im["type"], &typ) != nil || !blockTypes[typ] {
					continue // go-sdk reads it, or says what is wrong with it
				}
				m, ok := takeMeta(im)
				a.items[i].meta = m
				itemChanged := ok
				if r, ok := im["resource"]; ok {
					var rm map[string]json.RawMessage
					if json.Unmarshal(r, &rm) == nil && rm != nil {
						if m, ok := takeMeta(rm); ok {
							if b, err := json.Marshal(rm); err == nil {
								a.items[i].resourceMeta, im["resource"] = m, b
								itemChanged = true
							}
						}
					}
				}
				if itemChanged {
					b, err := json.Marshal(im)
					if err != nil {
						return result, nil
					}
					items[i], changed = b, true
				}
			}
			if changed {
				b, err := json.Marshal(items)
				if err != nil {
					return result, nil
				}
				top["content"], took = b, true
			}
		}
	}
	if !took {
		return result, nil
	}
	rest, err := json.Marshal(top)
	if err != nil {
		return result, nil
	}
	return rest, a
}

// blockTypes are the types of the content items of a tools/call result
// (MCP's ContentBlock): the items whose _meta SetAside takes (Restore puts
// it back into go-sdk's type for each).
var blockTypes = map[string]bool{"text": true, "image": true, "audio": true, "resource_link": true, "resource": true}

// takeMeta takes m's _meta out of it when it is an object or null; ok
// says it did (its members, nil for null).
func takeMeta(m map[string]json.RawMessage) (map[string]json.RawMessage, bool) {
	v, ok := m["_meta"]
	if !ok {
		return nil, false
	}
	if string(v) == "null" {
		delete(m, "_meta")
		return nil, true
	}
	var meta map[string]json.RawMessage
	if len(v) == 0 || v[0] != '{' || json.Unmarshal(v, &meta) != nil {
		return nil, false
	}
	delete(m, "_meta")
	return meta, true
}

// Restore puts what [SetAside] took back into r, what go-sdk read of the
// rest. A nil Aside restores nothing.
func (a *Aside) Restore(r *mcp.CallToolResult) {
	if a == nil || r == nil {
		return
	}
	if a.structured != nil {
		r.StructuredContent = a.structured
	}
	if a.meta != nil {
		r.Meta = rawMeta(a.meta)
	}
	if len(a.items) != len(r.Content) {
		return
	}
	for i, c := range r.Content {
		it := a.items[i]
		if it.meta != nil {
			m := rawMeta(it.meta)
			switch c := c.(type) {
			case *mcp.TextContent:
				c.Meta = m
			case *mcp.ImageContent:
				c.Meta = m
			case *mcp.AudioContent:
				c.Meta = m
			case *mcp.ResourceLink:
				c.Meta = m
			case *mcp.EmbeddedResource:
				c.Meta = m
			}
		}
		if er, ok := c.(*mcp.EmbeddedResource); ok && it.resourceMeta != nil && er.Resource != nil {
			er.Resource.Meta = rawMeta(it.resourceMeta)
		}
	}
}

// rawMeta is a _meta whose members are written as the server wrote them.
func rawMeta(m map[string]json.RawMessage) mcp.Meta {
	out := make(mcp.Meta, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// ValidUTF8 is msg with each byte that is not part of valid UTF-8 replaced
// by U+FFFD, as go-sdk's decoding reads it.
func ValidUTF8(msg []byte) []byte {
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

// DecodeProgress reads a server's notifications/progress params as go-sdk
// v1.8.0 reads them into an [mcp.ProgressNotificationParams] (members it
// does not define dropped, keys compared exactly, the last of duplicate
// keys; progress and total as float64s), but for _meta, whose members are
// kept as the server wrote them (see [SetAside]). false when go-sdk could
// not read them: it drops such a notification.
func DecodeProgress(params []byte) (*mcp.ProgressNotificationParams, bool) {
	var members map[string]json.RawMessage
	if json.Unmarshal(params, &members) != nil || members == nil {
		return nil, false
	}
	p := &mcp.ProgressNotificationParams{}
	for k, v := range members {
		var err error
		switch k {
		case "_meta":
			var meta map[string]json.RawMessage
			if err = json.Unmarshal(v, &meta); err == nil && meta != nil {
				p.Meta = rawMeta(meta)
			}
		case "progressToken":
			err = json.Unmarshal(v, &p.ProgressToken)
		case "message":
			err = json.Unmarshal(v, &p.Message)
		case "progress":
			err = json.Unmarshal(v, &p.Progress)
		case "total":
			err = json.Unmarshal(v, &p.Total)
		}
		if err != nil {
			return nil, false
		}
	}
	return p, true
}

// forwardProgress forwards a server's progress of a call of
// [Server.Handler] itself (see the function forwardProgress): false when msg
// is no progress of such a call.
func (c *stdioConn) forwardProgress(msg jsonrpc.Message) bool {
	req, ok := msg.(*jsonrpc.Request)
	return ok && forwardProgress(c.server.pool.progress, req)
}

// errMoreAfter is what is wrong with a line that holds more than one JSON
// value (go-sdk reads the first and ignores the rest).
var errMoreAfter = errors.New("more after its first JSON value")

// forwardProgress sends a server's progress of a call of [Server.Handler]
// to its client (routes: where each of agentctl's tokens goes), from the
// connection's reader, in the order the server wrote it: handed to go-sdk's
// client session instead, it would go to a goroutine of its own, and the
// call's answer, read after it, could end the call (and its route) first,
// and the progress be lost. false when req is no progress of such a call.
func forwardProgress(routes *ProgressRoutes[progressTarget], req *jsonrpc.Request) bool {
	if req.IsCall() || req.Method != "notifications/progress" {
		return false
	}
	p, ok := DecodeProgress(req.Params)
	if !ok {
		return false
	}
	tok, _ := p.ProgressToken.(string)
	to, ok := routes.Lookup(tok)
	if !ok {
		return false
	}
	p.ProgressToken = to.token
	_ = to.session.NotifyProgress(context.Background(), p)
	return true
}
