package main

// The Anthropic Messages API (POST /v1/messages, streaming or not) and its
// token counter. The model list (/v1/models) is proto_openai.go's, in a shape
// both kinds of client read.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

func init() {
	registerProtocol(func(mux *http.ServeMux, m *Model) {
		mux.HandleFunc("POST /v1/messages", func(w http.ResponseWriter, r *http.Request) { anthropicMessages(m, w, r) })
		mux.HandleFunc("POST /v1/messages/count_tokens", anthropicCountTokens)
	})
}

// anthropicModelID is the model named in replies when the request names none.
const anthropicModelID = "claude-sonnet-4-5-20250929"

type anthropicRequest struct {
	Model    string             `json:"model"`
	Stream   bool               `json:"stream"`
	Tools    []anthropicTool    `json:"tools"`
	Messages []anthropicMessage `json:"messages"`
}

type anthropicTool struct {
	Type         string          `json:"type"` // "" or "custom" for client tools; server tools name their version
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	DeferLoading bool            `json:"defer_loading"`
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string, or an array of blocks
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     map[string]any  `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`   // tool_result: a string, or an array of blocks
	ToolName  string          `json:"tool_name"` // tool_reference
}

// blocks decodes a message's content, a string being one text block.
func (msg anthropicMessage) blocks() []anthropicBlock {
	var s string
	if json.Unmarshal(msg.Content, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}
	}
	var bs []anthropicBlock
	_ = json.Unmarshal(msg.Content, &bs)
	return bs
}

// toolResultContent is a tool_result's text, and the tools its tool_reference
// blocks load (the answer of a client-side tool search).
func toolResultContent(raw json.RawMessage) (text string, refs []string) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var bs []anthropicBlock
	_ = json.Unmarshal(raw, &bs)
	var parts []string
	for _, b := range bs {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "tool_reference":
			refs = append(refs, b.ToolName)
		}
	}
	return strings.Join(parts, "\n"), refs
}

// toRequest makes the protocol-neutral request. Tools declared with
// defer_loading are visible to the model only once a tool_reference in a tool
// result has loaded them, as in the real API.
func (ar anthropicRequest) toRequest(path string) Request {
	req := Request{Protocol: "anthropic", Path: path}
	loaded := map[string]bool{}
	names := map[string]string{} // tool_use id -> tool name
	for _, msg := range ar.Messages {
		blocks := msg.blocks()
		var texts []string
		for _, b := range blocks {
			switch b.Type {
			case "text":
				texts = append(texts, b.Text)
			case "tool_use":
				names[b.ID] = b.Name
				req.Calls = append(req.Calls, ToolCall{ID: b.ID, Name: b.Name, Args: b.Input})
			case "tool_result":
				text, refs := toolResultContent(b.Content)
				for _, ref := range refs {
					loaded[ref] = true
				}
				req.Results = append(req.Results, ToolResult{CallID: b.ToolUseID, Name: names[b.ToolUseID], Content: text})
			}
		}
		if msg.Role == "user" && len(texts) > 0 {
			req.UserText = strings.Join(texts, "\n")
		}
	}
	for _, t := range ar.Tools {
		if t.Type != "" && t.Type != "custom" {
			continue // a server tool: the API runs it, the client declares no schema
		}
		if t.DeferLoading && !loaded[t.Name] {
			continue
		}
		req.Tools = append(req.Tools, ToolDecl{Name: t.Name, Description: t.Description, Schema: t.InputSchema})
	}
	return req
}

var anthropicSeq atomic.Int64

func anthropicID(prefix string) string {
	return fmt.Sprintf("%s_e2e%013d%04d", prefix, time.Now().UnixMilli(), anthropicSeq.Add(1)%10000)
}

// anthropicContent is the reply's content blocks, tool_use inputs as JSON.
type anthropicContentBlock struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

func anthropicReplyBlocks(reply Reply) (blocks []anthropicContentBlock, stopReason string) {
	if len(reply.Calls) == 0 {
		text := reply.Text
		return []anthropicContentBlock{{Type: "text", Text: &text}}, "end_turn"
	}
	for _, c := range reply.Calls {
		input, _ := json.Marshal(c.Args)
		if c.Args == nil {
			input = []byte("{}")
		}
		id := c.ID
		if !strings.HasPrefix(id, "toolu_") {
			id = "toolu_" + id
		}
		blocks = append(blocks, anthropicContentBlock{Type: "tool_use", ID: id, Name: c.Name, Input: input})
	}
	return blocks, "tool_use"
}

type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

func anthropicError(w http.ResponseWriter, status int, kind, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type":  "error",
		"error": map[string]string{"type": kind, "message": msg},
	})
}

func anthropicMessages(m *Model, w http.ResponseWriter, r *http.Request) {
	body, err := readRequestBody(r)
	if err != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	var ar anthropicRequest
	if err := json.Unmarshal(body, &ar); err != nil {
		m.RecordUnknown(r.Method, r.URL.RequestURI(), body)
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "the fake model could not decode the request: "+err.Error())
		return
	}
	reply := m.Decide(ar.toRequest(r.URL.Path))
	model := ar.Model
	if model == "" {
		model = anthropicModelID
	}
	blocks, stop := anthropicReplyBlocks(reply)
	usage := anthropicUsage{InputTokens: len(body)/4 + 1, OutputTokens: 1}
	for _, b := range blocks {
		if b.Text != nil {
			usage.OutputTokens += len(*b.Text)/4 + 1
		}
		usage.OutputTokens += len(b.Input)/4 + 1
	}
	id := anthropicID("msg")
	w.Header().Set("Request-Id", anthropicID("req"))
	if !ar.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model,
			"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	event := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	startUsage := usage
	startUsage.OutputTokens = 1
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": startUsage,
	}})
	event("ping", map[string]string{"type": "ping"})
	for i, b := range blocks {
		switch b.Type {
		case "text":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": *b.Text}})
		case "tool_use":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}})
			// Sent in two pieces, as the API does, so that a client must join them.
			half := len(b.Input) / 2
			for _, part := range []json.RawMessage{b.Input[:half], b.Input[half:]} {
				event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "input_json_delta", "partial_json": string(part)}})
			}
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": usage.OutputTokens}})
	event("message_stop", map[string]string{"type": "message_stop"})
}

func anthropicCountTokens(w http.ResponseWriter, r *http.Request) {
	body, _ := readRequestBody(r)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]int{"input_tokens": len(body)/4 + 1})
}
