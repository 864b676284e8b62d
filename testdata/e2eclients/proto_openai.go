package main

// The OpenAI APIs: Chat Completions (/v1/chat/completions) and Responses
// (/v1/responses), each streaming (SSE) or not, and the model list
// (/v1/models). Every route is served with and without the /v1 prefix, since
// clients differ in whether their base URL carries it.

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func init() { registerProtocol(mountOpenAI) }

// fakeModelID is the model the fake OpenAI API lists, and the one it answers
// as when a request names none.
const fakeModelID = "e2e-fake-model"

func mountOpenAI(mux *http.ServeMux, m *Model) {
	for _, prefix := range []string{"", "/v1"} {
		mux.HandleFunc("POST "+prefix+"/chat/completions", func(w http.ResponseWriter, r *http.Request) {
			serveChatCompletions(m, w, r)
		})
		mux.HandleFunc("POST "+prefix+"/responses", func(w http.ResponseWriter, r *http.Request) {
			serveResponses(m, w, r)
		})
		mux.HandleFunc("GET "+prefix+"/models", serveModelList)
		mux.HandleFunc("GET "+prefix+"/models/{model...}", serveModel)
	}
}

// openaiIDs numbers the ids the fake OpenAI API makes up.
var openaiIDs atomic.Int64

// issuedCalls remembers the name of every tool call the fake OpenAI API sent,
// by call id, so that a tool result names its tool even when the request that
// carries it does not repeat the call (a Responses client continuing with
// previous_response_id sends only the new items).
var issuedCalls sync.Map // call id -> shown tool name

func rememberCalls(calls []ToolCall) {
	for _, c := range calls {
		issuedCalls.Store(c.ID, c.Name)
	}
}

// callName is the name of the call with this id: from the request's own
// history, else from the calls the fake API sent.
func callName(history map[string]string, id string) string {
	if name, ok := history[id]; ok {
		return name
	}
	if name, ok := issuedCalls.Load(id); ok {
		return name.(string)
	}
	return ""
}

// openaiID makes an id with the prefix the real API uses ("chatcmpl-",
// "resp_", ...).
func openaiID(prefix string) string {
	return fmt.Sprintf("%se2e%06d", prefix, openaiIDs.Add(1))
}

// modelObject describes a model in the shapes of both the OpenAI and the
// Anthropic model lists, so that either kind of client can read it.
func modelObject(id string) map[string]any {
	return map[string]any{
		"id": id, "object": "model", "created": 1700000000, "owned_by": "agentctl-e2e",
		"type": "model", "display_name": id, "created_at": "2023-11-14T22:13:20Z",
	}
}

func serveModelList(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list", "data": []any{modelObject(fakeModelID)},
		"has_more": false, "first_id": fakeModelID, "last_id": fakeModelID,
	})
}

func serveModel(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, modelObject(r.PathValue("model")))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// openaiError answers with the OpenAI error shape.
func openaiError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{
		"message": msg, "type": "invalid_request_error", "param": nil, "code": nil,
	}})
}

// readOpenAIRequest reads and decodes a JSON request body (gzip-encoded too),
// answering the error itself when it cannot.
func readOpenAIRequest(w http.ResponseWriter, r *http.Request, into any) bool {
	body, err := readRequestBody(r)
	if err == nil && strings.EqualFold(r.Header.Get("Content-Encoding"), "gzip") {
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bytes.NewReader(body)); err == nil {
			body, err = io.ReadAll(io.LimitReader(zr, 64<<20))
		}
	} else if enc := r.Header.Get("Content-Encoding"); err == nil && enc != "" && !strings.EqualFold(enc, "identity") {
		err = fmt.Errorf("unsupported Content-Encoding %q", enc)
	}
	if err == nil {
		err = json.Unmarshal(body, into)
	}
	if err != nil {
		openaiError(w, http.StatusBadRequest, "e2e fake model: bad request body: "+err.Error())
		return false
	}
	return true
}

// sseWriter writes server-sent events, flushing each one.
type sseWriter struct {
	w http.ResponseWriter
	f http.Flusher
}

func startSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sseWriter{w: w, f: f}
}

// event writes one event: "event: NAME" (when name is set) and its JSON data.
func (s *sseWriter) event(name string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err) // only maps and slices of plain values are written
	}
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	s.flush()
}

func (s *sseWriter) raw(line string) {
	fmt.Fprintf(s.w, "data: %s\n\n", line)
	s.flush()
}

func (s *sseWriter) flush() {
	if s.f != nil {
		s.f.Flush()
	}
}

// argsJSON is a call's arguments as the JSON text both APIs carry.
func argsJSON(c ToolCall) string {
	if c.Args == nil {
		return "{}"
	}
	b, err := json.Marshal(c.Args)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// parseArgs decodes a call's JSON-text arguments; text that is not a JSON
// object is kept under "raw".
func parseArgs(s string) map[string]any {
	args := map[string]any{}
	if strings.TrimSpace(s) == "" {
		return args
	}
	if json.Unmarshal([]byte(s), &args) != nil {
		return map[string]any{"raw": s}
	}
	return args
}

// contentText is the text of an OpenAI content value: a string, or an array
// of parts ({type: text|input_text|output_text, text}), concatenated. Other
// values (objects, numbers) are kept as their JSON text.
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return string(raw)
}

func modelOr(model string) string {
	if model == "" {
		return fakeModelID
	}
	return model
}

// ---- Chat Completions ----

type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Tools         []chatTool    `json:"tools"`
	Functions     []chatFunc    `json:"functions"` // the deprecated form of tools
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
	FunctionCall *struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function_call"`
}

type chatTool struct {
	Type     string   `json:"type"`
	Function chatFunc `json:"function"`
}

type chatFunc struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// chatToNeutral turns a Chat Completions request into the model's Request.
func chatToNeutral(path string, cr chatRequest) Request {
	req := Request{Protocol: "openai-chat", Path: path}
	for _, t := range cr.Tools {
		if t.Function.Name != "" {
			req.Tools = append(req.Tools, ToolDecl{Name: t.Function.Name, Description: t.Function.Description, Schema: t.Function.Parameters})
		}
	}
	for _, f := range cr.Functions {
		req.Tools = append(req.Tools, ToolDecl{Name: f.Name, Description: f.Description, Schema: f.Parameters})
	}
	callNames := map[string]string{}
	for _, msg := range cr.Messages {
		switch msg.Role {
		case "assistant":
			for _, tc := range msg.ToolCalls {
				callNames[tc.ID] = tc.Function.Name
				req.Calls = append(req.Calls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: parseArgs(tc.Function.Arguments)})
			}
			if fc := msg.FunctionCall; fc != nil {
				req.Calls = append(req.Calls, ToolCall{Name: fc.Name, Args: parseArgs(fc.Arguments)})
			}
		case "tool":
			name := msg.Name
			if name == "" {
				name = callName(callNames, msg.ToolCallID)
			}
			req.Results = append(req.Results, ToolResult{CallID: msg.ToolCallID, Name: name, Content: contentText(msg.Content)})
		case "function":
			req.Results = append(req.Results, ToolResult{Name: msg.Name, Content: contentText(msg.Content)})
		case "user":
			req.UserText = contentText(msg.Content)
		}
	}
	return req
}

func serveChatCompletions(m *Model, w http.ResponseWriter, r *http.Request) {
	var cr chatRequest
	if !readOpenAIRequest(w, r, &cr) {
		return
	}
	reply := m.Decide(chatToNeutral(r.URL.Path, cr))
	rememberCalls(reply.Calls)
	id := openaiID("chatcmpl-")
	created := time.Now().Unix()
	model := modelOr(cr.Model)
	finish := "stop"
	if len(reply.Calls) > 0 {
		finish = "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}

	if !cr.Stream {
		msg := map[string]any{"role": "assistant", "content": nil}
		if len(reply.Calls) > 0 {
			calls := make([]any, len(reply.Calls))
			for i, c := range reply.Calls {
				calls[i] = map[string]any{"id": c.ID, "type": "function",
					"function": map[string]any{"name": c.Name, "arguments": argsJSON(c)}}
			}
			msg["tool_calls"] = calls
		} else {
			msg["content"] = reply.Text
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
			"usage":   usage,
		})
		return
	}

	s := startSSE(w)
	chunk := func(delta map[string]any, finishReason any) map[string]any {
		return map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finishReason}},
		}
	}
	if len(reply.Calls) > 0 {
		s.event("", chunk(map[string]any{"role": "assistant", "content": nil}, nil))
		for i, c := range reply.Calls {
			s.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": ""},
			}}}, nil))
			s.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": argsJSON(c)},
			}}}, nil))
		}
	} else {
		s.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
		s.event("", chunk(map[string]any{"content": reply.Text}, nil))
	}
	s.event("", chunk(map[string]any{}, finish))
	if cr.StreamOptions != nil && cr.StreamOptions.IncludeUsage {
		s.event("", map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{}, "usage": usage,
		})
	}
	s.raw("[DONE]")
}

// ---- Responses ----

type responsesRequest struct {
	Model  string          `json:"model"`
	Input  json.RawMessage `json:"input"`
	Tools  []responsesTool `json:"tools"`
	Stream bool            `json:"stream"`
}

// responsesTool is a tool declaration: a function or custom tool, or a
// namespace that holds such tools (Codex groups an MCP server's tools so).
type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Tools       []responsesTool `json:"tools"`
}

type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	Output    json.RawMessage `json:"output"`
}

// namespacedName is how a tool in a namespace is shown to the fake model (and
// in the report): NAMESPACE/NAME, as DESIGN.md writes Codex's mcp__{server}/{tool}.
func namespacedName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// splitNamespaced undoes namespacedName.
func splitNamespaced(shown string) (namespace, name string) {
	if i := strings.LastIndex(shown, "/"); i >= 0 {
		return shown[:i], shown[i+1:]
	}
	return "", shown
}

func responsesToolDecls(tools []responsesTool, namespace string) []ToolDecl {
	var decls []ToolDecl
	for _, t := range tools {
		switch t.Type {
		case "namespace":
			decls = append(decls, responsesToolDecls(t.Tools, namespacedName(namespace, t.Name))...)
		case "function", "custom":
			if t.Name != "" {
				decls = append(decls, ToolDecl{Name: namespacedName(namespace, t.Name), Description: t.Description, Schema: t.Parameters})
			}
		}
	}
	return decls
}

// responsesToNeutral turns a Responses request into the model's Request.
func responsesToNeutral(path string, rr responsesRequest) Request {
	req := Request{Protocol: "openai-responses", Path: path, Tools: responsesToolDecls(rr.Tools, "")}
	var text string
	if json.Unmarshal(rr.Input, &text) == nil {
		req.UserText = text
		return req
	}
	var items []responsesItem
	_ = json.Unmarshal(rr.Input, &items)
	callNames := map[string]string{}
	for _, it := range items {
		switch it.Type {
		case "function_call":
			name := namespacedName(it.Namespace, it.Name)
			callNames[it.CallID] = name
			req.Calls = append(req.Calls, ToolCall{ID: it.CallID, Name: name, Args: parseArgs(it.Arguments)})
		case "custom_tool_call":
			callNames[it.CallID] = it.Name
			req.Calls = append(req.Calls, ToolCall{ID: it.CallID, Name: it.Name, Args: map[string]any{"input": it.Input}})
		case "function_call_output", "custom_tool_call_output":
			req.Results = append(req.Results, ToolResult{CallID: it.CallID, Name: callName(callNames, it.CallID), Content: contentText(it.Output)})
		case "message", "":
			if it.Role == "user" {
				req.UserText = contentText(it.Content)
			}
		}
	}
	return req
}

func serveResponses(m *Model, w http.ResponseWriter, r *http.Request) {
	var rr responsesRequest
	if !readOpenAIRequest(w, r, &rr) {
		return
	}
	reply := m.Decide(responsesToNeutral(r.URL.Path, rr))
	rememberCalls(reply.Calls)
	resp := map[string]any{
		"id": openaiID("resp_"), "object": "response", "created_at": time.Now().Unix(),
		"status": "in_progress", "model": modelOr(rr.Model), "output": []any{},
		"parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
		"error": nil, "incomplete_details": nil, "usage": nil,
	}
	output := responsesOutput(reply)
	completed := func() map[string]any {
		done := map[string]any{}
		for k, v := range resp {
			done[k] = v
		}
		done["status"] = "completed"
		done["output"] = output
		done["usage"] = map[string]any{
			"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": 15,
		}
		return done
	}
	if !rr.Stream {
		writeJSON(w, http.StatusOK, completed())
		return
	}

	s := startSSE(w)
	seq := 0
	emit := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		s.event(typ, fields)
	}
	emit("response.created", map[string]any{"response": resp})
	emit("response.in_progress", map[string]any{"response": resp})
	for i, item := range output {
		id := item["id"]
		switch item["type"] {
		case "function_call":
			added := copyItem(item)
			added["status"], added["arguments"] = "in_progress", ""
			emit("response.output_item.added", map[string]any{"output_index": i, "item": added})
			emit("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": item["arguments"]})
			emit("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "name": item["name"], "arguments": item["arguments"]})
		case "message":
			added := copyItem(item)
			added["status"], added["content"] = "in_progress", []any{}
			emit("response.output_item.added", map[string]any{"output_index": i, "item": added})
			part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
			emit("response.content_part.added", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "part": part})
			emit("response.output_text.delta", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "delta": reply.Text, "logprobs": []any{}})
			emit("response.output_text.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "text": reply.Text, "logprobs": []any{}})
			emit("response.content_part.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}})
		}
		emit("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	emit("response.completed", map[string]any{"response": completed()})
}

// responsesOutput is a reply as Responses output items. A call of a tool shown
// as NAMESPACE/NAME is a function_call naming both, as the client declared it.
func responsesOutput(reply Reply) []map[string]any {
	if len(reply.Calls) == 0 {
		return []map[string]any{{
			"id": openaiID("msg_"), "type": "message", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}},
		}}
	}
	items := make([]map[string]any, 0, len(reply.Calls))
	for _, c := range reply.Calls {
		namespace, name := splitNamespaced(c.Name)
		item := map[string]any{
			"id": openaiID("fc_"), "type": "function_call", "status": "completed",
			"call_id": c.ID, "name": name, "arguments": argsJSON(c),
		}
		if namespace != "" {
			item["namespace"] = namespace
		}
		items = append(items, item)
	}
	return items
}

func copyItem(item map[string]any) map[string]any {
	c := make(map[string]any, len(item))
	for k, v := range item {
		c[k] = v
	}
	return c
}
