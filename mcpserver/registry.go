package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkjson "github.com/segmentio/encoding/json"
)

// Kind is where a tool comes from. It never reaches output; the values of
// mounts' tools are their mounts' kinds ([mount.KindKB], [mount.KindServer]).
type Kind string

// Tool kinds.
const (
	KindBuiltin Kind = "builtin"
	KindKB      Kind = Kind(mount.KindKB)
	// KindServer: a tool of an external MCP server.
	KindServer Kind = Kind(mount.KindServer)
)

// Entry is one registered tool.
type Entry struct {
	// Name is the canonical name: the registry's identity for the tool.
	Name string
	// Source says where the tool comes from, for messages ("built-in", "kb docs").
	Source string
	Kind   Kind
	// Mount is the mount's name; empty for built-ins.
	Mount string
	// Prefix is the mount's effective prefix; empty when unprefixed.
	Prefix string
	// Base is the tool's own name within its source (concept_read, fetch).
	Base string
}

// Registry is the single source of truth for what the endpoint serves: every
// tool is added through it, it refuses a name that is already taken (naming
// both sources), and the naming layer resolves names against it.
type Registry struct {
	server *mcp.Server

	mu      sync.RWMutex
	entries map[string]*Entry
	// tools are the definitions installed into the server, by name;
	// gen counts changes to what is served (see [Registry.Listed]).
	tools map[string]*mcp.Tool
	gen   uint64
}

// NewRegistry returns an empty registry that installs tools into server. A
// registry without a server only plans names.
func NewRegistry(server *mcp.Server) *Registry {
	return &Registry{server: server, entries: map[string]*Entry{}, tools: map[string]*mcp.Tool{}}
}

// CollisionError is a name that two sources want.
type CollisionError struct {
	Name          string
	First, Second string
	// Escape says how to get out, when both sources are mounts; empty
	// otherwise ("rename one of them").
	Escape string
}

func (e *CollisionError) Error() string {
	way := "rename one of them"
	if e.Escape != "" {
		way = e.Escape
	}
	return fmt.Sprintf("tool name %q is provided by both %s and %s; %s", e.Name, e.First, e.Second, way)
}

// newCollision is the error for name, which a holds and b wants. Two mounts
// whose tools collide are both unprefixed (equal prefixes are refused
// before), as with tool_prefix_mode "off": the error names the explicit
// tool_prefix each could take.
func newCollision(name string, a, b *Entry) *CollisionError {
	err := &CollisionError{Name: name, First: a.Source, Second: b.Source}
	if a.Mount == "" || b.Mount == "" {
		return err
	}
	err.Escape = fmt.Sprintf("with no prefix their tools share one namespace: give each mount an explicit tool_prefix (%s; %s), or use tool_prefix_mode \"mount-name\" to derive them",
		prefixEscape(a), prefixEscape(b))
	return err
}

// prefixEscape says how to give e's mount an explicit tool prefix.
func prefixEscape(e *Entry) string {
	p := mount.SanitizePrefix(e.Mount)
	if p == "" || p[0] >= '0' && p[0] <= '9' {
		p = "P"
	}
	if e.Kind == KindKB {
		arg := e.Mount + "=DIR,prefix=" + p
		if strings.ContainsAny(e.Mount, " \t'\"$`\\|&;<>()*?[]#~!{}") {
			arg = "'" + strings.ReplaceAll(arg, "'", `'\''`) + "'" // as a shell takes it
		}
		return fmt.Sprintf("%s: --kb %s, or tool_prefix = %q in its [[kbs]] table", e.Source, arg, p)
	}
	return fmt.Sprintf("%s: \"tool_prefix\":%q in its --mcp-json, or tool_prefix = %q in its [[mcp_servers]] table", e.Source, p, p)
}

// reserve claims name for e, or reports who holds it.
func (r *Registry) reserve(e *Entry) error {
	if err := ValidateToolName(e.Name); err != nil {
		return fmt.Errorf("%s: %w", e.Source, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := r.entries[e.Name]; ok {
		return newCollision(e.Name, prev, e)
	}
	r.entries[e.Name] = e
	return nil
}

// AddTool registers a typed tool under e.Name (which t.Name must equal). Its
// schemas are t's, or inferred from In and Out; its calls are validated and
// answered as go-sdk's mcp.AddTool does ([typedHandler]), but nothing is
// decoded or resolved until the tool's first call.
func AddTool[In, Out any](r *Registry, e Entry, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) error {
	if t.Name != e.Name {
		return fmt.Errorf("registry: tool %q registered as %q", t.Name, e.Name)
	}
	if err := r.reserve(&e); err != nil {
		return err
	}
	c := *t
	if err := rawSchemas[In, Out](&c); err != nil {
		r.unreserve(e.Name)
		return fmt.Errorf("%s: tool %s: %w", e.Source, e.Name, err)
	}
	r.installed(e.Name, &c, func() { r.server.AddTool(&c, typedHandler(&c, h)) })
	return nil
}

// installed records a reserved tool's definition and installs it.
func (r *Registry) installed(name string, t *mcp.Tool, install func()) {
	r.mu.Lock()
	r.tools[name] = t
	r.gen++
	r.mu.Unlock()
	if r.server != nil {
		install()
	}
}

// rawSchemas sets t's schemas (inferring them from In and Out when unset) as
// pre-encoded JSON. Calls are still validated against them
// ([typedHandler]), but tools/list sends the bytes instead of re-encoding a
// *jsonschema.Schema for every tool on every list, which dominated the cost
// of a large tools/list.
func rawSchemas[In, Out any](t *mcp.Tool) error {
	encode := func(field *any, infer func() (*jsonschema.Schema, error)) error {
		if *field == nil {
			if infer == nil {
				return nil
			}
			s, err := infer()
			if err != nil {
				return err
			}
			*field = s
		}
		if _, ok := (*field).(json.RawMessage); ok {
			return nil
		}
		b, err := json.Marshal(*field)
		if err != nil {
			return err
		}
		*field = json.RawMessage(b)
		return nil
	}
	if err := encode(&t.InputSchema, func() (*jsonschema.Schema, error) { return jsonschema.For[In](nil) }); err != nil {
		return err
	}
	var inferOut func() (*jsonschema.Schema, error)
	if reflect.TypeFor[Out]() != reflect.TypeFor[any]() {
		inferOut = func() (*jsonschema.Schema, error) { return jsonschema.For[Out](nil) }
	}
	return encode(&t.OutputSchema, inferOut)
}

func (r *Registry) unreserve(name string) {
	r.mu.Lock()
	delete(r.entries, name)
	delete(r.tools, name)
	r.gen++
	r.mu.Unlock()
}

// AddRawTool registers a tool whose handler does its own argument handling.
func (r *Registry) AddRawTool(e Entry, t *mcp.Tool, h mcp.ToolHandler) error {
	if t.Name != e.Name {
		return fmt.Errorf("registry: tool %q registered as %q", t.Name, e.Name)
	}
	if err := r.reserve(&e); err != nil {
		return err
	}
	r.installed(e.Name, t, func() { r.server.AddTool(t, h) })
	return nil
}

// Remove takes a tool out of the registry and the server.
func (r *Registry) Remove(name string) {
	r.mu.Lock()
	_, ok := r.entries[name]
	delete(r.entries, name)
	delete(r.tools, name)
	r.gen++
	r.mu.Unlock()
	if ok && r.server != nil {
		r.server.RemoveTools(name)
	}
}

// Has reports whether name is registered.
func (r *Registry) Has(name string) bool {
	r.mu.RLock()
	_, ok := r.entries[name]
	r.mu.RUnlock()
	return ok
}

// IsBuiltin reports whether name is a registered built-in tool.
func (r *Registry) IsBuiltin(name string) bool {
	r.mu.RLock()
	e, ok := r.entries[name]
	r.mu.RUnlock()
	return ok && e.Kind == KindBuiltin
}

// Lookup returns the entry registered under name.
func (r *Registry) Lookup(name string) (Entry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[name]
	if !ok {
		return Entry{}, false
	}
	return *e, true
}

// Names returns every canonical name, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	names := make([]string, 0, len(r.entries))
	for n := range r.entries {
		names = append(names, n)
	}
	r.mu.RUnlock()
	sort.Strings(names)
	return names
}

// ValidateToolName checks a canonical name against the MCP tool-name rules
// (1 to 128 characters of A-Z a-z 0-9 _ - .); the SDK only logs bad names.
func ValidateToolName(name string) error {
	if name == "" {
		return fmt.Errorf("empty tool name")
	}
	if len(name) > 128 {
		return fmt.Errorf("tool name %q is longer than 128 characters", name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Errorf("tool name %q contains %q; tool names use letters, digits, '_', '-' and '.'", name, c)
		}
	}
	return nil
}

// Listed returns the definitions of the tools in service, sorted by name
// (the order tools/list has), with a generation that changes whenever
// they may have.
func (r *Registry) Listed() (uint64, []*mcp.Tool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*mcp.Tool, 0, len(r.entries))
	for name := range r.entries {
		if t := r.tools[name]; t != nil {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return r.gen, out
}

// Entries returns every registered entry, sorted by name.
func (r *Registry) Entries() []Entry {
	r.mu.RLock()
	out := make([]Entry, 0, len(r.entries))
	for _, e := range r.entries {
		out = append(out, *e)
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// typedHandler is the handler go-sdk's mcp.AddTool makes of h for t, whose
// schemas [rawSchemas] has set: arguments validated against
// the input schema, with its defaults applied, and decoded into In; Out
// encoded, validated against the output schema and sent as structured
// content (and as text when the handler gave none); the same errors, word
// for word. It differs in one thing: the schemas are decoded and resolved
// at the tool's first call, not when it is registered, so that an
// endpoint's start (and the client's first tools/list) does not wait for
// the schemas of tools that may never be called. go-sdk does that work in
// mcp.AddTool and does not export the handler it makes.
//
// This is go-sdk v1.8.0's toolForErr, setSchema and applySchema
// (mcp/server.go, mcp/tool.go); TestTypedHandlerMatchesSDK holds it to
// mcp.AddTool's answers, and must pass again after an SDK upgrade.
func typedHandler[In, Out any](t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) mcp.ToolHandler {
	var (
		once                    sync.Once
		inResolved, outResolved *jsonschema.Resolved
		elemZero                any // only non-nil if Out is a pointer type
		schemaErr               error
	)
	resolve := func() {
		if _, err := resolveSchema[In](t.InputSchema, &inResolved); err != nil {
			schemaErr = fmt.Errorf("tool %q: input schema: %w", t.Name, err)
			return
		}
		if t.OutputSchema != nil || reflect.TypeFor[Out]() != reflect.TypeFor[any]() {
			var err error
			if elemZero, err = resolveSchema[Out](t.OutputSchema, &outResolved); err != nil {
				schemaErr = fmt.Errorf("tool %q: output schema: %v", t.Name, err)
			}
		}
	}
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		once.Do(resolve)
		if schemaErr != nil {
			return nil, schemaErr
		}
		var input json.RawMessage
		if req.Params.Arguments != nil {
			input = req.Params.Arguments
		}
		// Validate input and apply defaults.
		input, err := applySchema(input, inResolved, false)
		if err != nil {
			var errRes mcp.CallToolResult
			errRes.SetError(fmt.Errorf("validating \"arguments\": %v", err))
			return &errRes, nil
		}
		var in In
		if input != nil {
			if err := sdkUnmarshal(input, &in); err != nil {
				var errRes mcp.CallToolResult
				errRes.SetError(err)
				return &errRes, nil
			}
		}
		res, out, err := h(ctx, req, in)
		if err != nil {
			// A JSON-RPC error is the call's answer; any other is the
			// tool's error, in its result.
			if wireErr, ok := err.(*jsonrpc.Error); ok {
				return nil, wireErr
			}
			var errRes mcp.CallToolResult
			errRes.SetError(err)
			return &errRes, nil
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		// Input requests (a multi round-trip) and content are exclusive on
		// the wire.
		var outval any = out
		if res.InputRequests != nil {
			outval = nil
		} else if elemZero != nil {
			var z Out
			if any(out) == any(z) {
				outval = elemZero
			}
		}
		if outval != nil {
			outbytes, err := json.Marshal(outval)
			if err != nil {
				return nil, fmt.Errorf("marshaling output: %w", err)
			}
			outJSON, err := applySchema(json.RawMessage(outbytes), outResolved, true)
			if err != nil {
				return nil, fmt.Errorf("validating tool output: %w", err)
			}
			res.StructuredContent = outJSON
			if res.Content == nil {
				res.Content = []mcp.Content{&mcp.TextContent{Text: string(outJSON)}}
			} else if !isObjectJSON(outJSON) {
				res.Content = append(res.Content, &mcp.TextContent{Text: string(outJSON)})
			}
		}
		return res, nil
	}
}

// resolveSchema resolves the schema s (set, as JSON or a value) for T, as
// go-sdk's setSchema does for a schema it is given; zero is the zero value
// of T's element type when T is a pointer.
func resolveSchema[T any](s any, resolved **jsonschema.Resolved) (zero any, err error) {
	rt := reflect.TypeFor[T]()
	if rt.Kind() == reflect.Pointer {
		zero = reflect.Zero(rt.Elem()).Interface()
	}
	schema, ok := s.(*jsonschema.Schema)
	if !ok {
		data, err := json.Marshal(s)
		if err != nil {
			return zero, err
		}
		if err := sdkUnmarshal(data, &schema); err != nil {
			return zero, err
		}
	}
	if schema == nil {
		return zero, fmt.Errorf("schema is nil for type %v", rt)
	}
	r, err := schema.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return zero, err
	}
	*resolved = r
	return zero, nil
}

// applySchema validates data against resolved after applying its defaults,
// and returns it with the defaults, as go-sdk's applySchema: for input, data
// must be an object.
func applySchema(data json.RawMessage, resolved *jsonschema.Resolved, forOutput bool) (json.RawMessage, error) {
	if resolved == nil {
		return data, nil
	}
	var unmarshaled any
	if !forOutput {
		v := make(map[string]any)
		if len(data) > 0 {
			if err := sdkUnmarshal(data, &v); err != nil {
				return nil, fmt.Errorf("unmarshaling arguments: %w", err)
			}
		}
		unmarshaled = v
	} else if len(data) > 0 {
		if err := sdkUnmarshal(data, &unmarshaled); err != nil {
			return nil, fmt.Errorf("unmarshaling output: %w", err)
		}
	}
	appliedDefaults := false
	if _, ok := unmarshaled.(map[string]any); ok {
		if err := resolved.ApplyDefaults(&unmarshaled); err != nil {
			return nil, fmt.Errorf("applying schema defaults:\n%w", err)
		}
		appliedDefaults = true
	} else if forOutput && unmarshaled == nil && resolved.Schema().Type == "object" {
		unmarshaled = make(map[string]any)
		if err := resolved.ApplyDefaults(&unmarshaled); err != nil {
			return nil, fmt.Errorf("applying schema defaults:\n%w", err)
		}
		appliedDefaults = true
	}
	if err := resolved.Validate(&unmarshaled); err != nil {
		return nil, err
	}
	if !appliedDefaults {
		return data, nil
	}
	out, err := json.Marshal(unmarshaled)
	if err != nil {
		return nil, fmt.Errorf("marshalling with defaults: %v", err)
	}
	return out, nil
}

// isObjectJSON reports whether data is a JSON object.
func isObjectJSON(data json.RawMessage) bool {
	for _, b := range data {
		switch b {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return true
		default:
			return false
		}
	}
	return false
}

// sdkMaxDepth is the nesting go-sdk's decoder accepts.
const sdkMaxDepth = 1000

var errSDKMaxDepth = fmt.Errorf("json: exceeded maximum nesting depth of %d", sdkMaxDepth)

// sdkUnmarshal decodes as go-sdk's internal/json.Unmarshal: segmentio's
// decoder, struct fields matched case-sensitively, at most [sdkMaxDepth]
// levels deep.
func sdkUnmarshal(data []byte, v any) error {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > sdkMaxDepth {
				return errSDKMaxDepth
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	dec := sdkjson.NewDecoder(bytes.NewReader(data))
	dec.DontMatchCaseInsensitiveStructFields()
	return dec.Decode(v)
}
