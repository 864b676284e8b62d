package main

// The Augment API, as Auggie (the Augment CLI) calls it at its tenant URL:
// POST /chat-stream answers with newline-delimited JSON chunks
// ({"text", "nodes", "stop_reason"}), tool calls being response nodes of type 5
// ({"tool_use": {"tool_use_id", "tool_name", "input_json"}}). The request
// carries the tools (tool_definitions, each schema a JSON string), the earlier
// exchanges (chat_history: request_nodes with tool results, response_nodes
// with tool uses) and this turn's request nodes (nodes: the prompt's text node,
// or the tool results). Start-up calls (get-models, the MCP and remote-tool
// settings) get the smallest answers Auggie accepts; its reports (errors,
// events, metrics) an empty object.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// augmentModelID is the only model the fake Augment API offers.
const augmentModelID = "e2e-fake-model"

// Augment's node types: in requests, 0 text and 1 tool result; in responses,
// 0 raw text, 2 the finished main text, 5 a tool use and 10 token usage.
const (
	augmentTextNode       = 0
	augmentToolResultNode = 1
	augmentMainTextNode   = 2
	augmentToolUseNode    = 5
	augmentUsageNode      = 10
)

// Augment's stop reasons (the numbers of its StopReason enum).
const (
	augmentEndTurn          = 1
	augmentToolUseRequested = 3
)

// augmentQuietPaths are the calls Auggie makes besides the chat stream that an
// empty JSON object answers well enough (no MCP settings, no stored secret):
// not recorded as unknown.
var augmentQuietPaths = []string{
	"/record-request-events", "/record-session-events", "/client-metrics",
	"/settings/get-mcp-user-configs", "/settings/get-mcp-tenant-configs", "/mcp-secrets/get",
}

func init() {
	registerProtocol(func(mux *http.ServeMux, m *Model) {
		mux.HandleFunc("POST /chat-stream", func(w http.ResponseWriter, r *http.Request) { serveAugmentChat(m, w, r) })
		mux.HandleFunc("POST /get-models", serveAugmentModels)
		mux.HandleFunc("POST /report-error", func(w http.ResponseWriter, r *http.Request) { serveAugmentErrorReport(m, w, r) })
		mux.HandleFunc("POST /agents/list-remote-tools", func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, http.StatusOK, map[string]any{"tools": []any{}})
		})
		for _, path := range augmentQuietPaths {
			mux.HandleFunc("POST "+path, func(w http.ResponseWriter, _ *http.Request) {
				writeJSON(w, http.StatusOK, map[string]any{})
			})
		}
	})
}

func serveAugmentModels(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"default_model": augmentModelID,
		"models": []any{map[string]any{
			"name": augmentModelID, "suggested_prefix_char_count": 0, "suggested_suffix_char_count": 0,
		}},
		"languages":     []any{},
		"feature_flags": map[string]any{},
	})
}

// serveAugmentErrorReport logs what Auggie reports (a reply of the fake it
// could not convert shows up here first) and acknowledges it.
func serveAugmentErrorReport(m *Model, w http.ResponseWriter, r *http.Request) {
	body, _ := readRequestBody(r)
	var report struct {
		Message string `json:"sanitized_message"`
	}
	_ = json.Unmarshal(body, &report)
	if m.Log != nil {
		fmt.Fprintf(m.Log, "fake model: auggie reported an error: %q\n", report.Message)
	}
	writeJSON(w, http.StatusOK, map[string]any{})
}

type augmentChatRequest struct {
	Message         string               `json:"message"`
	ToolDefinitions []augmentToolDef     `json:"tool_definitions"`
	ChatHistory     []augmentExchange    `json:"chat_history"`
	Nodes           []augmentRequestNode `json:"nodes"`
}

type augmentToolDef struct {
	Name            string `json:"name"`
	Description     string `json:"description"`
	InputSchemaJSON string `json:"input_schema_json"`
}

type augmentExchange struct {
	RequestMessage string                `json:"request_message"`
	RequestNodes   []augmentRequestNode  `json:"request_nodes"`
	ResponseNodes  []augmentResponseNode `json:"response_nodes"`
}

type augmentRequestNode struct {
	Type     int `json:"type"`
	TextNode *struct {
		Content string `json:"content"`
	} `json:"text_node"`
	ToolResultNode *struct {
		ToolUseID    string `json:"tool_use_id"`
		Content      string `json:"content"`
		ContentNodes []struct {
			Type        int    `json:"type"`
			TextContent string `json:"text_content"`
		} `json:"content_nodes"`
	} `json:"tool_result_node"`
}

type augmentResponseNode struct {
	Type    int             `json:"type"`
	ToolUse *augmentToolUse `json:"tool_use"`
}

type augmentToolUse struct {
	ToolUseID string `json:"tool_use_id"`
	ToolName  string `json:"tool_name"`
	InputJSON string `json:"input_json"`
}

// addRequestNodes adds a turn's tool results to req, naming each after the
// tool use it answers, and returns the turn's text.
func addRequestNodes(req *Request, nodes []augmentRequestNode, names map[string]string) string {
	var texts []string
	for _, n := range nodes {
		switch {
		case n.Type == augmentTextNode && n.TextNode != nil:
			texts = append(texts, n.TextNode.Content)
		case n.Type == augmentToolResultNode && n.ToolResultNode != nil:
			res := n.ToolResultNode
			content := res.Content
			if content == "" {
				var parts []string
				for _, c := range res.ContentNodes {
					parts = append(parts, c.TextContent)
				}
				content = strings.Join(parts, "\n")
			}
			req.Results = append(req.Results, ToolResult{CallID: res.ToolUseID, Name: names[res.ToolUseID], Content: content})
		}
	}
	return strings.Join(texts, "\n")
}

func (ar augmentChatRequest) toRequest(path string) Request {
	req := Request{Protocol: "augment", Path: path}
	for _, t := range ar.ToolDefinitions {
		req.Tools = append(req.Tools, ToolDecl{Name: t.Name, Description: t.Description, Schema: json.RawMessage(t.InputSchemaJSON)})
	}
	names := map[string]string{} // tool_use_id -> tool name
	userText := func(text string) {
		if strings.TrimSpace(text) != "" {
			req.UserText = text
		}
	}
	for _, ex := range ar.ChatHistory {
		userText(ex.RequestMessage)
		userText(addRequestNodes(&req, ex.RequestNodes, names))
		for _, n := range ex.ResponseNodes {
			if n.Type != augmentToolUseNode || n.ToolUse == nil {
				continue
			}
			names[n.ToolUse.ToolUseID] = n.ToolUse.ToolName
			var args map[string]any
			_ = json.Unmarshal([]byte(n.ToolUse.InputJSON), &args)
			req.Calls = append(req.Calls, ToolCall{ID: n.ToolUse.ToolUseID, Name: n.ToolUse.ToolName, Args: args})
		}
	}
	userText(ar.Message)
	userText(addRequestNodes(&req, ar.Nodes, names))
	return req
}

func serveAugmentChat(m *Model, w http.ResponseWriter, r *http.Request) {
	body, err := readRequestBody(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	var ar augmentChatRequest
	if err := json.Unmarshal(body, &ar); err != nil {
		m.RecordUnknown(r.Method, r.URL.RequestURI(), body)
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "the fake model could not decode the request: " + err.Error()})
		return
	}
	reply := m.Decide(ar.toRequest(r.URL.Path))

	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	nodeID := 0
	node := func(typ int, fields map[string]any) map[string]any {
		nodeID++
		n := map[string]any{"id": nodeID, "type": typ, "content": ""}
		for k, v := range fields {
			n[k] = v
		}
		return n
	}
	send := func(text string, nodes []map[string]any, stop int) {
		chunk := map[string]any{"text": text, "nodes": nodes, "unknown_blob_names": []string{},
			"checkpoint_not_found": false, "workspace_file_chunks": []any{}}
		if stop != 0 {
			chunk["stop_reason"] = stop
		}
		b, _ := json.Marshal(chunk)
		_, _ = w.Write(append(b, '\n'))
		if flusher != nil {
			flusher.Flush()
		}
	}

	stop := augmentEndTurn
	outputChars := len(reply.Text)
	if len(reply.Calls) == 0 {
		send(reply.Text, []map[string]any{node(augmentTextNode, map[string]any{"content": reply.Text})}, 0)
		send("", []map[string]any{node(augmentMainTextNode, map[string]any{"content": reply.Text})}, 0)
	} else {
		stop = augmentToolUseRequested
		for _, c := range reply.Calls {
			args := c.Args
			if args == nil {
				args = map[string]any{}
			}
			input, _ := json.Marshal(args)
			outputChars += len(input)
			send("", []map[string]any{node(augmentToolUseNode, map[string]any{"tool_use": map[string]any{
				"tool_use_id": "toolu_" + c.ID, "tool_name": c.Name, "input_json": string(input),
			}})}, 0)
		}
	}
	usage := map[string]int{"input_tokens": len(body)/4 + 1, "output_tokens": outputChars/4 + 1,
		"cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
	send("", []map[string]any{node(augmentUsageNode, map[string]any{"token_usage": usage})}, stop)
}
