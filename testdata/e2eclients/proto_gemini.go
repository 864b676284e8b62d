package main

// The Gemini API (generativelanguage.googleapis.com, as the @google/genai SDK
// calls it): POST /v1beta/models/{model}:streamGenerateContent?alt=sse,
// :generateContent and :countTokens. Gemini CLI makes structured side requests
// (the model router's complexity score, the next-speaker check) with
// generationConfig.responseJsonSchema; those are answered with a JSON value
// made from the schema, so that nothing downstream fails to parse.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
)

func init() {
	registerProtocol(func(mux *http.ServeMux, m *Model) {
		mux.HandleFunc("POST /v1beta/models/{call}", func(w http.ResponseWriter, r *http.Request) {
			serveGemini(m, w, r)
		})
	})
}

type geminiRequest struct {
	Contents         []geminiContent `json:"contents"`
	Tools            []geminiTool    `json:"tools"`
	GenerationConfig geminiGenConfig `json:"generationConfig"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text             string                  `json:"text,omitempty"`
	Thought          bool                    `json:"thought,omitempty"`
	FunctionCall     *geminiFunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *geminiFunctionResponse `json:"functionResponse,omitempty"`
}

type geminiFunctionCall struct {
	ID   string         `json:"id,omitempty"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

type geminiFunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type geminiTool struct {
	FunctionDeclarations []struct {
		Name                 string          `json:"name"`
		Description          string          `json:"description"`
		Parameters           json.RawMessage `json:"parameters"`
		ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
	} `json:"functionDeclarations"`
}

type geminiGenConfig struct {
	ResponseMimeType   string          `json:"responseMimeType"`
	ResponseSchema     json.RawMessage `json:"responseSchema"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
}

// wantsJSON says the request asks for a JSON reply, and with which schema.
func (g geminiGenConfig) wantsJSON() (schema json.RawMessage, ok bool) {
	switch {
	case len(g.ResponseJSONSchema) > 0:
		return g.ResponseJSONSchema, true
	case len(g.ResponseSchema) > 0:
		return g.ResponseSchema, true
	}
	return nil, g.ResponseMimeType == "application/json"
}

// functionResponseText is a function response's text: its "output" when that
// is a string (Gemini CLI's shape), else the whole response as JSON.
func functionResponseText(raw json.RawMessage) string {
	var r struct {
		Output *string `json:"output"`
	}
	if json.Unmarshal(raw, &r) == nil && r.Output != nil {
		return *r.Output
	}
	return string(raw)
}

func (gr geminiRequest) toRequest(path string) Request {
	req := Request{Protocol: "gemini", Path: path}
	for _, t := range gr.Tools {
		for _, f := range t.FunctionDeclarations {
			schema := f.ParametersJSONSchema
			if len(schema) == 0 {
				schema = f.Parameters
			}
			req.Tools = append(req.Tools, ToolDecl{Name: f.Name, Description: f.Description, Schema: schema})
		}
	}
	for _, c := range gr.Contents {
		var texts []string
		for _, p := range c.Parts {
			switch {
			case p.FunctionCall != nil:
				req.Calls = append(req.Calls, ToolCall{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Args: p.FunctionCall.Args})
			case p.FunctionResponse != nil:
				req.Results = append(req.Results, ToolResult{
					CallID: p.FunctionResponse.ID, Name: p.FunctionResponse.Name,
					Content: functionResponseText(p.FunctionResponse.Response),
				})
			case p.Text != "" && !p.Thought:
				texts = append(texts, p.Text)
			}
		}
		if c.Role != "model" && len(texts) > 0 {
			req.UserText = strings.Join(texts, "\n")
		}
	}
	return req
}

// geminiError answers with the Google API error shape.
func geminiError(w http.ResponseWriter, status int, reason, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": msg, "status": reason}})
}

var geminiResponseIDs atomic.Int64

func serveGemini(m *Model, w http.ResponseWriter, r *http.Request) {
	model, method, ok := strings.Cut(r.PathValue("call"), ":")
	if !ok {
		m.ServeUnknown(w, r)
		return
	}
	body, err := readRequestBody(r)
	if err != nil {
		geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", err.Error())
		return
	}
	var gr geminiRequest
	if err := json.Unmarshal(body, &gr); err != nil {
		m.RecordUnknown(r.Method, r.URL.RequestURI(), body)
		geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "the fake model could not decode the request: "+err.Error())
		return
	}
	switch method {
	case "countTokens":
		writeJSON(w, http.StatusOK, map[string]int{"totalTokens": len(body)/4 + 1})
	case "generateContent", "streamGenerateContent":
		reply := m.Decide(gr.toRequest(r.URL.Path))
		if schema, ok := gr.GenerationConfig.wantsJSON(); ok && len(reply.Calls) == 0 {
			sample, _ := json.Marshal(schemaSample(schema))
			reply.Text = string(sample)
		}
		resp := geminiResponse(model, reply, len(body)/4+1)
		if method == "generateContent" {
			writeJSON(w, http.StatusOK, resp)
			return
		}
		writeGeminiStream(w, model, reply, resp)
	default:
		m.ServeUnknown(w, r)
	}
}

// geminiCandidate is a response with one candidate of the given parts.
func geminiCandidate(model string, parts []map[string]any, finish string, usage map[string]int, id string) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	if finish != "" {
		cand["finishReason"] = finish
	}
	resp := map[string]any{"candidates": []any{cand}, "modelVersion": model, "responseId": id}
	if usage != nil {
		resp["usageMetadata"] = usage
	}
	return resp
}

func geminiParts(reply Reply) []map[string]any {
	if len(reply.Calls) == 0 {
		return []map[string]any{{"text": reply.Text}}
	}
	var parts []map[string]any
	for _, c := range reply.Calls {
		args := c.Args
		if args == nil {
			args = map[string]any{}
		}
		parts = append(parts, map[string]any{"functionCall": map[string]any{"name": c.Name, "args": args}})
	}
	return parts
}

func geminiUsage(promptTokens int, reply Reply) map[string]int {
	out := len(reply.Text)/4 + 1
	for _, c := range reply.Calls {
		b, _ := json.Marshal(c.Args)
		out += len(b)/4 + 1
	}
	return map[string]int{"promptTokenCount": promptTokens, "candidatesTokenCount": out, "totalTokenCount": promptTokens + out}
}

// geminiResponse is the whole (non-streamed) response. Function calls end
// with finishReason STOP, as the real API sends them.
func geminiResponse(model string, reply Reply, promptTokens int) map[string]any {
	id := fmt.Sprintf("e2e-gemini-%06d", geminiResponseIDs.Add(1))
	return geminiCandidate(model, geminiParts(reply), "STOP", geminiUsage(promptTokens, reply), id)
}

// writeGeminiStream sends the response as the API's SSE stream (alt=sse):
// "data: JSON" events separated by CRLF CRLF. Text comes in two chunks, the
// last with the finish reason and usage; function calls in one.
func writeGeminiStream(w http.ResponseWriter, model string, reply Reply, whole map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	if len(reply.Calls) == 0 && len(reply.Text) > 1 {
		half := len(reply.Text) / 2
		for half < len(reply.Text) && reply.Text[half]&0xC0 == 0x80 {
			half++ // do not split a UTF-8 sequence
		}
		id, _ := whole["responseId"].(string)
		send(geminiCandidate(model, []map[string]any{{"text": reply.Text[:half]}}, "", nil, id))
		last := geminiCandidate(model, []map[string]any{{"text": reply.Text[half:]}}, "STOP", nil, id)
		last["usageMetadata"] = whole["usageMetadata"]
		send(last)
		return
	}
	send(whole)
}

// schemaSample is a small value that satisfies a JSON schema (OpenAPI-style
// upper-case types too): the first enum value, the minimum of a number, every
// required property of an object.
func schemaSample(raw json.RawMessage) any {
	var s struct {
		Type       any                        `json:"type"`
		Enum       []any                      `json:"enum"`
		Minimum    *float64                   `json:"minimum"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
		Items      json.RawMessage            `json:"items"`
		AnyOf      []json.RawMessage          `json:"anyOf"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return map[string]any{}
	}
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	if len(s.AnyOf) > 0 {
		return schemaSample(s.AnyOf[0])
	}
	typ, _ := s.Type.(string)
	if list, ok := s.Type.([]any); ok && len(list) > 0 {
		typ, _ = list[0].(string)
	}
	switch strings.ToLower(typ) {
	case "string":
		return "e2e"
	case "integer", "number":
		if s.Minimum != nil {
			return *s.Minimum
		}
		return 1
	case "boolean":
		return false
	case "array":
		return []any{}
	case "null":
		return nil
	}
	obj := map[string]any{}
	names := append([]string(nil), s.Required...)
	if len(names) == 0 {
		for name := range s.Properties {
			names = append(names, name)
		}
		sort.Strings(names)
	}
	for _, name := range names {
		obj[name] = schemaSample(s.Properties[name])
	}
	return obj
}
