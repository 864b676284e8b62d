package guard

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/agentctl/agentctl/mcpserver/internal/jsonscan"
)

// Reading JSON-RPC envelopes: which line is a request, which write an
// answer, and to what. Only the members before the ones needed are read:
// params and results are not scanned (the writers put "id" first).

// listenMethod is the one request that is not waited for: a 2026-07-28
// client's stream of notifications, answered only when it is torn down.
const listenMethod = "subscriptions/listen"

// eachRequest calls request for each request in a line of the client's
// (a batch may hold several), and cancelled for each request it cancels.
func eachRequest(line []byte, request func(key string, id []byte), cancelled func(key string)) {
	if b := bytes.TrimSpace(line); len(b) > 0 && b[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(b, &batch) == nil {
			for _, m := range batch {
				oneRequest(m, request, cancelled)
			}
		}
		return
	}
	oneRequest(line, request, cancelled)
}

func oneRequest(msg []byte, request func(key string, id []byte), cancelled func(key string)) {
	var id, method, params []byte
	o := jsonscan.NewObject(msg)
	for o.Next() {
		switch k := o.Key(); {
		case jsonscan.KeyIs(k, "id"):
			id = o.Value()
		case jsonscan.KeyIs(k, "method"):
			method = o.Value()
		case jsonscan.KeyIs(k, "params"):
			params = o.Value()
		}
		if id != nil && method != nil && !bytes.Contains(method, []byte("cancelled")) {
			break // a request: its params are not the guard's business
		}
	}
	name, ok := jsonscan.String(method)
	switch {
	case !ok:
		// An answer of the client's to the server, or not JSON-RPC: the
		// SDK's to judge.
	case id != nil:
		if key, ok := idKey(id); ok && name != listenMethod {
			request(key, bytes.Clone(id))
		}
	case name == "notifications/cancelled" && params != nil:
		jsonscan.EachMember(params, func(k, v []byte) bool {
			if jsonscan.KeyIs(k, "requestId") {
				if key, ok := idKey(v); ok {
					cancelled(key)
				}
				return false
			}
			return true
		})
	}
}

// eachAnswer calls answered for the id of each answer in a message the
// endpoint writes (a batch's answers are written together).
func eachAnswer(msg []byte, answered func(key string)) {
	if len(msg) > 0 && msg[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(msg, &batch) == nil {
			for _, m := range batch {
				oneAnswer(m, answered)
			}
		}
		return
	}
	oneAnswer(msg, answered)
}

func oneAnswer(msg []byte, answered func(key string)) {
	var id []byte
	isAnswer := false
	o := jsonscan.NewObject(msg)
	for o.Next() {
		switch k := o.Key(); {
		case jsonscan.KeyIs(k, "id"):
			id = o.Value()
		case jsonscan.KeyIs(k, "method"):
			return // a request or notification of the endpoint's
		case jsonscan.KeyIs(k, "result"), jsonscan.KeyIs(k, "error"):
			isAnswer = true
		}
		if isAnswer && id != nil {
			break
		}
	}
	if !isAnswer {
		return
	}
	if key, ok := idKey(id); ok {
		answered(key)
	}
}

// idKey is a request id as go-sdk v1.8.0 tells ids apart (jsonrpc2.MakeID,
// which also writes the answer's id): a string by its value, a number by
// its integer part. false for anything else (null, an object), which is
// no request id.
func idKey(raw []byte) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	switch c := raw[0]; {
	case c == '"':
		s, ok := jsonscan.String(raw)
		return "s" + s, ok
	case c == '-' || c >= '0' && c <= '9':
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return "", false
		}
		return "n" + strconv.FormatInt(int64(f), 10), true
	}
	return "", false
}

// jsonString is s as a JSON string.
func jsonString(s string) []byte { return jsonscan.AppendString(nil, s) }
