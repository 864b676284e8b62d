package main

// The protocol-neutral fake model. Each protocol file (proto_*.go) parses its
// API's requests into a Request, asks (*Model).Decide what to answer, and writes
// the Reply in its API's wire format. The model is scripted and stateless over
// the conversation: it reads what the request carries (declared tools, earlier
// tool calls and results) and decides from that alone, so retries and side
// requests (titles, summaries, token counts) are harmless.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// ToolDecl is one tool declared to the model.
type ToolDecl struct {
	Name, Description string
	Schema            json.RawMessage
}

// ToolCall is one tool call by the assistant (in the history, or in a Reply).
type ToolCall struct {
	ID, Name string
	Args     map[string]any
}

// ToolResult is one tool result in the history. Content is the result's text,
// concatenated.
type ToolResult struct{ CallID, Name, Content string }

// Request is one model request, protocol-neutral: the whole conversation as the
// client sent it.
type Request struct {
	Protocol string // "anthropic", "openai-chat", "openai-responses", "gemini", "augment"
	Path     string
	Tools    []ToolDecl   // as declared in this request
	Calls    []ToolCall   // assistant tool calls present in the history
	Results  []ToolResult // tool results present in the history
	UserText string       // the latest user message's text
}

// Reply is the model's answer: exactly one of Calls and Text is set.
type Reply struct {
	Calls []ToolCall
	Text  string
}

// The question the fake model asks, and the answer the harness gives.
const (
	askQuestion = "E2E: which colour should the button be?"
	askAnswer   = "blue"
	// askToolMarker is what the ask tool's declared name contains, whatever
	// the client made of it (mcp__agentctl__ask_user_question_agentctl, ...).
	askToolMarker = "ask_user_question"
)

var askChoices = []string{"red", "blue"}

// UnknownRequest is a request the fake API did not know how to answer.
type UnknownRequest struct {
	Method, Path string
	Body         string // its first bytes
}

// Observations is what the model saw during one run.
type Observations struct {
	// AskToolName is the name the ask tool was declared under in the request
	// the model answered with a call of it ("" if it never was).
	AskToolName string
	// AskToolNames are all the distinct names containing ask_user_question
	// that were declared, in order of first sight.
	AskToolNames []string
	// ToolSearchUsed says the ask tool was not declared at first, and the model
	// called SearchToolName to load it.
	ToolSearchUsed bool
	SearchToolName string
	// BridgeToolName is the tool the ask tool was called through, when the
	// client declares a deferred tool only by a search's result and lets
	// the model call it by name through another tool (Qwen Code's tool_call).
	BridgeToolName string
	// AnswerReached says a tool result of the ask tool reached the model;
	// AnswerText is its content.
	AnswerReached bool
	AnswerText    string
	// ModelRequests counts requests passed to Decide.
	ModelRequests int
	// ToolsDeclared are the distinct tool names declared in any request.
	ToolsDeclared []string
	// Decisions is a short log line per Decide call (capped).
	Decisions []string
	// Unknown are requests for paths no protocol handles (capped).
	Unknown []UnknownRequest
}

// AnswerHasBlue says the ask tool's result that reached the model contains the
// harness's answer.
func (o Observations) AnswerHasBlue() bool {
	return o.AnswerReached && strings.Contains(strings.ToLower(o.AnswerText), askAnswer)
}

const (
	maxDecisions     = 200
	maxUnknown       = 100
	unknownBodyBytes = 300
)

// Model is the scripted fake model and its observation recorder; safe for
// concurrent use.
type Model struct {
	// Log, if set, receives a line per decision and per unknown request.
	Log io.Writer

	mu       sync.Mutex
	obs      Observations
	declared map[string]bool
	nextID   int
}

// NewModel returns a model with nothing observed.
func NewModel() *Model { return &Model{declared: map[string]bool{}} }

// Observations returns a copy of what was observed so far.
func (m *Model) Observations() Observations {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.obs
	o.AskToolNames = append([]string(nil), o.AskToolNames...)
	o.ToolsDeclared = append([]string(nil), o.ToolsDeclared...)
	o.Decisions = append([]string(nil), o.Decisions...)
	o.Unknown = append([]UnknownRequest(nil), o.Unknown...)
	return o
}

// Decide answers one request and records what it saw:
//   - a tool result of the ask tool in the history: a final text quoting it;
//   - the ask tool declared: a call of it, by the name it was declared under;
//   - only a tool-search tool declared: a call of it, with a query for the ask tool;
//   - no tools: a short text (titles, summaries, quota checks).
func (m *Model) Decide(req Request) Reply {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.obs.ModelRequests++
	for _, t := range req.Tools {
		if !m.declared[t.Name] {
			m.declared[t.Name] = true
			m.obs.ToolsDeclared = append(m.obs.ToolsDeclared, t.Name)
			if strings.Contains(t.Name, askToolMarker) {
				m.obs.AskToolNames = append(m.obs.AskToolNames, t.Name)
			}
		}
	}
	reply, why := m.decide(req)
	line := fmt.Sprintf("%s %s: %d tools, %d calls, %d results -> %s", req.Protocol, req.Path,
		len(req.Tools), len(req.Calls), len(req.Results), why)
	if len(m.obs.Decisions) < maxDecisions {
		m.obs.Decisions = append(m.obs.Decisions, line)
	}
	if m.Log != nil {
		fmt.Fprintln(m.Log, "fake model:", line)
	}
	return reply
}

func (m *Model) decide(req Request) (Reply, string) {
	if res, ok := askResult(req); ok {
		if !m.obs.AnswerReached || strings.Contains(strings.ToLower(res.Content), askAnswer) {
			m.obs.AnswerReached = true
			m.obs.AnswerText = res.Content
		}
		return Reply{Text: fmt.Sprintf("E2E done. The user answered: %q", strings.TrimSpace(res.Content))}, "final text (ask result seen)"
	}
	if len(req.Tools) == 0 {
		return Reply{Text: "E2E"}, "short text (no tools)"
	}
	if ask, ok := findAskTool(req.Tools); ok {
		m.obs.AskToolName = ask.Name
		return Reply{Calls: []ToolCall{{ID: m.newCallID(), Name: ask.Name, Args: askArgs()}}}, "call " + ask.Name
	}
	if search, ok := findSearchTool(req.Tools); ok {
		if found := searchResults(req, search.Name); len(found) > 0 {
			// Some clients keep a deferred tool undeclared even after the
			// search, which only describes it: the model calls it through a
			// bridge tool that takes its name and arguments.
			name := askNameIn(found)
			bridge, ok := findBridgeTool(req.Tools)
			if name == "" || !ok {
				return Reply{Text: "E2E: the ask tool was not found, even after a tool search."}, "text (searched, still no ask tool)"
			}
			m.obs.AskToolName = name
			m.obs.BridgeToolName = bridge.Name
			args := bridgeArgs(bridge.Schema, name, askArgs())
			return Reply{Calls: []ToolCall{{ID: m.newCallID(), Name: bridge.Name, Args: args}}}, "call " + bridge.Name + " for " + name
		}
		m.obs.ToolSearchUsed = true
		m.obs.SearchToolName = search.Name
		args := map[string]any{firstRequiredString(search.Schema): askToolMarker}
		return Reply{Calls: []ToolCall{{ID: m.newCallID(), Name: search.Name, Args: args}}}, "call " + search.Name + " (tool search)"
	}
	return Reply{Text: "E2E: no ask_user_question tool was declared."}, "text (no ask tool, no search tool)"
}

// askArgs are the arguments of the ask tool's call.
func askArgs() map[string]any {
	return map[string]any{"question": askQuestion, "choices": append([]string(nil), askChoices...)}
}

func (m *Model) newCallID() string {
	m.nextID++
	return fmt.Sprintf("call_e2e_%d_%d", time.Now().UnixNano()%1_000_000, m.nextID)
}

// askResult finds a tool result of the ask tool: by its name, or by the id of
// an ask call in the history (direct, or through a bridge tool).
func askResult(req Request) (ToolResult, bool) {
	askCalls := map[string]bool{}
	for _, c := range req.Calls {
		if strings.Contains(c.Name, askToolMarker) || strings.Contains(bridgedName(c.Args), askToolMarker) {
			askCalls[c.ID] = true
		}
	}
	var found ToolResult
	ok := false
	for _, r := range req.Results {
		if strings.Contains(r.Name, askToolMarker) || (r.CallID != "" && askCalls[r.CallID]) {
			found, ok = r, true // the latest one wins
		}
	}
	return found, ok
}

func findAskTool(tools []ToolDecl) (ToolDecl, bool) {
	for _, t := range tools {
		if strings.Contains(t.Name, askToolMarker) {
			return t, true
		}
	}
	return ToolDecl{}, false
}

// findSearchTool finds a tool that searches for or loads other (deferred)
// tools: by its name first (ToolSearch, tool_search, search_tools, ...), then
// by its description.
func findSearchTool(tools []ToolDecl) (ToolDecl, bool) {
	for _, t := range tools {
		n := strings.ToLower(strings.NewReplacer("_", "", "-", "", ".", "").Replace(t.Name))
		if strings.Contains(n, "toolsearch") || strings.Contains(n, "searchtool") ||
			strings.Contains(n, "loadtool") || strings.Contains(n, "findtool") {
			return t, true
		}
	}
	for _, t := range tools {
		d := strings.ToLower(t.Description)
		if strings.Contains(d, "deferred tool") || strings.Contains(d, "search for tools") ||
			strings.Contains(d, "searches for tools") || strings.Contains(d, "load tools") ||
			strings.Contains(d, "loads tools") {
			return t, true
		}
	}
	return ToolDecl{}, false
}

// searchResults are the results of the search tool's calls in the history.
func searchResults(req Request, search string) []string {
	ids := map[string]bool{}
	for _, c := range req.Calls {
		if c.Name == search {
			ids[c.ID] = true
		}
	}
	var found []string
	for _, r := range req.Results {
		if r.Name == search || (r.CallID != "" && ids[r.CallID]) {
			found = append(found, r.Content)
		}
	}
	return found
}

var (
	declaredAskName = regexp.MustCompile(`"name"\s*:\s*"([^"]*` + askToolMarker + `[^"]*)"`)
	askNameToken    = regexp.MustCompile(`[A-Za-z0-9_.-]*` + askToolMarker + `[A-Za-z0-9_.-]*`)
)

// askNameIn is the ask tool's name as search results describe it: a
// declaration's "name" first, else a word containing ask_user_question other
// than the query itself.
func askNameIn(results []string) string {
	for _, r := range results {
		if m := declaredAskName.FindStringSubmatch(r); m != nil {
			return m[1]
		}
	}
	for _, r := range results {
		for _, word := range askNameToken.FindAllString(r, -1) {
			if word != askToolMarker {
				return word
			}
		}
	}
	return ""
}

// Properties by which a bridge tool takes the name of the tool it calls, and
// its arguments.
var (
	bridgeNameKeys = []string{"name", "tool_name", "tool"}
	bridgeArgsKeys = []string{"arguments", "args", "input", "parameters"}
)

// findBridgeTool finds a tool that calls another tool by name: its schema has
// a name property and an arguments property.
func findBridgeTool(tools []ToolDecl) (ToolDecl, bool) {
	for _, t := range tools {
		props := schemaProperties(t.Schema)
		if firstKey(props, bridgeNameKeys) != "" && firstKey(props, bridgeArgsKeys) != "" {
			return t, true
		}
	}
	return ToolDecl{}, false
}

// bridgeArgs are a bridge tool's arguments for calling tool with args.
func bridgeArgs(schema json.RawMessage, tool string, args map[string]any) map[string]any {
	props := schemaProperties(schema)
	return map[string]any{firstKey(props, bridgeNameKeys): tool, firstKey(props, bridgeArgsKeys): args}
}

// bridgedName is the tool a bridge call's arguments name, or "".
func bridgedName(args map[string]any) string {
	for _, k := range bridgeNameKeys {
		if name, ok := args[k].(string); ok {
			return name
		}
	}
	return ""
}

func schemaProperties(schema json.RawMessage) map[string]json.RawMessage {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	return s.Properties
}

// firstKey is the first of keys that props has, or "".
func firstKey(props map[string]json.RawMessage, keys []string) string {
	for _, k := range keys {
		if _, ok := props[k]; ok {
			return k
		}
	}
	return ""
}

// firstRequiredString is the first required string property of a JSON schema
// ("query" when the schema says none).
func firstRequiredString(schema json.RawMessage) string {
	var s struct {
		Required   []string `json:"required"`
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return "query"
	}
	isString := func(name string) bool {
		p, ok := s.Properties[name]
		if !ok {
			return false
		}
		switch t := p.Type.(type) {
		case string:
			return t == "string"
		case []any:
			for _, x := range t {
				if x == "string" {
					return true
				}
			}
		}
		return false
	}
	for _, name := range s.Required {
		if isString(name) {
			return name
		}
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if isString(name) {
			return name
		}
	}
	return "query"
}

// RecordUnknown logs a request no protocol knows how to answer.
func (m *Model) RecordUnknown(method, path string, body []byte) {
	if len(body) > unknownBodyBytes {
		body = body[:unknownBodyBytes]
	}
	u := UnknownRequest{Method: method, Path: path, Body: string(body)}
	m.mu.Lock()
	if len(m.obs.Unknown) < maxUnknown {
		m.obs.Unknown = append(m.obs.Unknown, u)
	}
	m.mu.Unlock()
	if m.Log != nil {
		fmt.Fprintf(m.Log, "fake model: unknown request %s %s %q\n", method, path, u.Body)
	}
}

// ServeUnknown records the request and answers it harmlessly: 200 with an
// empty JSON object. Protocol files may use it for paths they do not handle.
func (m *Model) ServeUnknown(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, unknownBodyBytes))
	m.RecordUnknown(r.Method, r.URL.RequestURI(), body)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte("{}"))
}

var protocolMounts []func(mux *http.ServeMux, m *Model)

// registerProtocol adds a protocol's routes to every fake API; protocol files
// call it from init().
func registerProtocol(mount func(mux *http.ServeMux, m *Model)) {
	protocolMounts = append(protocolMounts, mount)
}

// Handler serves every registered protocol; other paths are recorded as
// unknown and answered with an empty JSON object.
func (m *Model) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, mount := range protocolMounts {
		mount(mux, m)
	}
	mux.HandleFunc("/", m.ServeUnknown)
	return mux
}

// FakeAPI is the fake model served over HTTP on a loopback port.
type FakeAPI struct {
	URL   string // http://127.0.0.1:PORT, no trailing slash
	Model *Model
	srv   *http.Server
}

// startFakeAPI serves m on a free loopback port.
func startFakeAPI(m *Model) (*FakeAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return &FakeAPI{URL: "http://" + ln.Addr().String(), Model: m, srv: srv}, nil
}

// Close stops the server, cutting open streams after a short grace.
func (f *FakeAPI) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := f.srv.Shutdown(ctx); err != nil {
		return f.srv.Close()
	}
	return nil
}

// readRequestBody reads a request body of at most 64 MiB.
func readRequestBody(r *http.Request) ([]byte, error) {
	var buf bytes.Buffer
	_, err := io.Copy(&buf, io.LimitReader(r.Body, 64<<20))
	return buf.Bytes(), err
}

// Client is one catalog client the harness runs; client_<id>.go files register
// theirs from init() with registerClient.
type Client struct {
	ID      string // catalog id (agents/catalog/ID.toml)
	Variant string // "" or what sets this run apart, e.g. "ENABLE_TOOL_SEARCH=true"
	Package string // npm package, installed pinned into the harness's cache
	Version string // its pinned version
	// Bin is the executable: its name in node_modules/.bin, or, for a package
	// that declares none, its path inside the package ("bin/droid"). Its
	// file name is the catalog's command.
	Bin      string
	Protocol string // the fake API it talks: "anthropic", "openai-chat", "openai-responses", "gemini", "augment"
	// Args are passed to the client after the recipe's own arguments
	// (agentctl instance run ID --prompt P -- ARGS...).
	Args []string
	// Setup writes the client's configuration into the run's throwaway HOME
	// (or workspace) and sets the environment variables that point it at the
	// fake model (e.Setenv). Nil means no configuration.
	Setup func(e *RunEnv) error
	// KnownIssue, if set, is added to the reasons of a run with a failed check.
	KnownIssue string
	// NotRunnable, if set, says what keeps the client out of this harness; it
	// is listed in the report but not installed or run.
	NotRunnable string
}

// RunEnv is one client run's throwaway world, handed to Client.Setup.
type RunEnv struct {
	Home      string // HOME (mode 0700)
	Workspace string // the instance's workspace
	ConfigDir string // XDG_CONFIG_HOME
	DataDir   string // XDG_DATA_HOME
	CacheDir  string // XDG_CACHE_HOME
	StateDir  string // XDG_STATE_HOME
	ModelURL  string // the fake API, http://127.0.0.1:PORT (no trailing slash)
	Transport string // "stdio" or "http"
	Instance  string // the agentctl instance id
	// Env are the variables Setup adds to the client's environment.
	Env map[string]string
}

// Setenv adds a variable to the client's environment.
func (e *RunEnv) Setenv(key, value string) {
	if e.Env == nil {
		e.Env = map[string]string{}
	}
	e.Env[key] = value
}

var clients []Client

// registerClient adds a client to the matrix; client files call it from init().
func registerClient(c Client) { clients = append(clients, c) }
