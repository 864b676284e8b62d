package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/mcpserver/kb"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// typedDiffIn and typedDiffOut exercise what go-sdk's typed handler does
// with arguments and results: required and optional fields, a pointer, a
// slice, a nested object, a default and an enum (set in typedDiffTool).
type typedDiffIn struct {
	Text   string   `json:"text" jsonschema:"what to do"`
	Items  []string `json:"items,omitempty"`
	N      *float64 `json:"n,omitempty"`
	Mode   string   `json:"mode,omitempty"`
	Nested *struct {
		A int `json:"a"`
	} `json:"nested,omitempty"`
}

type typedDiffOut struct {
	Echo  string `json:"echo"`
	Count int    `json:"count"`
	Mode  string `json:"mode,omitempty"`
}

// typedDiffHandler answers by what the arguments' text says.
func typedDiffHandler(_ context.Context, _ *mcp.CallToolRequest, in typedDiffIn) (*mcp.CallToolResult, typedDiffOut, error) {
	out := typedDiffOut{Echo: in.Text, Count: len(in.Items), Mode: in.Mode}
	switch in.Text {
	case "fail":
		return nil, out, errors.New("the tool failed")
	case "rpc":
		return nil, out, &jsonrpc.Error{Code: 1234, Message: "a protocol error"}
	case "nil":
		return nil, typedDiffOut{}, nil
	case "content":
		return textResult("some text"), out, nil
	case "error-result":
		return toolError("a tool error"), out, nil
	case "negative":
		out.Count = -1 // against the output schema's minimum
		return nil, out, nil
	case "input":
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"answer": &mcp.ElicitParams{Message: "?",
			RequestedSchema: map[string]any{"type": "object"}}}}, out, nil
	}
	return nil, out, nil
}

// typedDiffArgs are the arguments each tool is called with: valid ones,
// and every way to get them wrong that a client can send. Not null, on
// which go-sdk v1.8.0 panics given a schema with defaults (and so does
// typedHandler): the endpoint passes {} instead ([proxy.Arguments]).
var typedDiffArgs = []string{
	``, // no arguments at all
	`{"text":"hi"}`, `{}`, `[]`, `[1]`, `"text"`, `5`, `true`,
	`{"text":5}`, `{"text":"hi","extra":1}`, `{"Text":"hi"}`, `{"TEXT":"hi","text":"x"}`,
	`{"text":"hi","n":1e400}`, `{"text":"hi","n":"x"}`, `{"text":"hi","n":50}`, `{"text":"hi","n":-1}`,
	`{"text":"hi","items":null}`, `{"text":"hi","items":[1]}`, `{"text":"hi","items":["a","b"]}`,
	`{"text":"hi","nested":{"a":1}}`, `{"text":"hi","nested":{"a":"x"}}`, `{"text":"hi","nested":{"b":1}}`,
	`{"text":"hi","nested":` + strings.Repeat(`[`, 1001) + strings.Repeat(`]`, 1001) + `}`,
	`{"text":"hi","mode":"slow"}`, `{"text":"hi","mode":"fast"}`, `{"text":"hi","mode":null}`,
	`{"text":"hi","text":"dup"}`, `{"text":"\ud800"}`, `{"text":"é\u0000"}`,
	`{"text":"fail"}`, `{"text":"rpc"}`, `{"text":"nil"}`, `{"text":"content"}`, `{"text":"error-result"}`,
	`{"text":"negative"}`, `{"text":"input"}`,
	// The built-ins' own.
	`{"question":"Why?"}`, `{"question":"Why?","choices":["a","b"]}`, `{"question":""}`, `{"question":"q","choices":"a"}`,
	`{"message":"m"}`, `{"message":"m","status":"done","percent":100}`, `{"message":"m","status":"asleep"}`,
	`{"message":"m","percent":101}`, `{"message":"m","percent":null}`, `{"message":5}`,
	// The knowledge bases'.
	`{"prefix":"guides/"}`, `{"limit":0}`, `{"limit":5000}`, `{"limit":"5"}`, `{"cursor":"bogus"}`,
	`{"id":"guides/setup"}`, `{"id":"missing"}`, `{"id":"../etc/passwd"}`, `{"query":"deploy"}`, `{"query":""}`,
	`{"query":"deploy","limit":-1}`,
}

// typedDiffTool is the test tool with its schemas encoded, as the registry
// installs it, with a default, an enum and bounds added.
func typedDiffTool(t *testing.T, name string) *mcp.Tool {
	tool := &mcp.Tool{Name: name, Description: "A test tool."}
	if err := rawSchemas[typedDiffIn, typedDiffOut](tool); err != nil {
		t.Fatal(err)
	}
	var in, out map[string]any
	if err := json.Unmarshal(tool.InputSchema.(json.RawMessage), &in); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(tool.OutputSchema.(json.RawMessage), &out); err != nil {
		t.Fatal(err)
	}
	props := in["properties"].(map[string]any)
	props["mode"].(map[string]any)["default"] = "fast"
	props["mode"].(map[string]any)["enum"] = []string{"fast", "slow"}
	props["n"].(map[string]any)["minimum"] = 0
	out["properties"].(map[string]any)["count"].(map[string]any)["minimum"] = 0
	for field, v := range map[*any]any{&tool.InputSchema: in, &tool.OutputSchema: out} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		*field = json.RawMessage(b)
	}
	return tool
}

// typedPair serves tool with handler h twice: through go-sdk's mcp.AddTool,
// and as the registry does ([typedHandler]); it returns a client of each.
func typedPair[In, Out any](t *testing.T, tool *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) (sdk, ours *mcp.ClientSession) {
	t.Helper()
	ctx := context.Background()
	connect := func(add func(*mcp.Server)) *mcp.ClientSession {
		s := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
		add(s)
		st, ct := mcp.NewInMemoryTransports()
		ss, err := s.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close(); ss.Wait() })
		return cs
	}
	a, b := *tool, *tool
	return connect(func(s *mcp.Server) { mcp.AddTool(s, &a, h) }),
		connect(func(s *mcp.Server) { s.AddTool(&b, typedHandler(&b, h)) })
}

// callBoth calls tool with each of typedDiffArgs on both clients and fails
// where the answers differ.
func callBoth(t *testing.T, name string, sdk, ours *mcp.ClientSession) {
	t.Helper()
	ctx := context.Background()
	answer := func(cs *mcp.ClientSession, args string) string {
		p := &mcp.CallToolParams{Name: name}
		if args != "" {
			p.Arguments = json.RawMessage(args)
		}
		res, err := cs.CallTool(ctx, p)
		b, _ := json.Marshal(res)
		return sortedExtras(fmt.Sprintf("%s / %v", b, err))
	}
	for _, args := range typedDiffArgs {
		want, got := answer(sdk, args), answer(ours, args)
		if got != want {
			t.Errorf("%s(%.60s):\n got %s\nwant %s (go-sdk's mcp.AddTool)", name, args, got, want)
		}
	}
}

// additionalProps is jsonschema's list of unexpected properties, which it
// writes in Go's map order.
var additionalProps = regexp.MustCompile(`unexpected additional properties \[([^\]]*)\]`)

// sortedExtras sorts the names in each such list of s.
func sortedExtras(s string) string {
	return additionalProps.ReplaceAllStringFunc(s, func(m string) string {
		names := strings.Fields(additionalProps.FindStringSubmatch(m)[1])
		slices.Sort(names)
		return "unexpected additional properties [" + strings.Join(names, " ") + "]"
	})
}

// TestTypedHandlerMatchesSDK: a tool the registry installs answers every
// call as go-sdk's mcp.AddTool would have: the same results, structured
// content and errors, word for word. typedHandler is a copy of the SDK's
// handler that resolves its schemas late; after an SDK upgrade this test
// says whether the copy still holds.
func TestTypedHandlerMatchesSDK(t *testing.T) {
	t.Run("generic", func(t *testing.T) {
		tool := typedDiffTool(t, "diff")
		sdk, ours := typedPair(t, tool, typedDiffHandler)
		callBoth(t, tool.Name, sdk, ours)
	})
	t.Run("pointer_output", func(t *testing.T) {
		tool := typedDiffTool(t, "diff_ptr")
		h := func(ctx context.Context, req *mcp.CallToolRequest, in typedDiffIn) (*mcp.CallToolResult, *typedDiffOut, error) {
			res, out, err := typedDiffHandler(ctx, req, in)
			if in.Text == "nil" {
				return res, nil, err
			}
			return res, &out, err
		}
		sdk, ours := typedPair(t, tool, h)
		callBoth(t, tool.Name, sdk, ours)
	})
	t.Run("no_output_schema", func(t *testing.T) {
		tool := typedDiffTool(t, "diff_any")
		tool.OutputSchema = nil
		h := func(ctx context.Context, req *mcp.CallToolRequest, in typedDiffIn) (*mcp.CallToolResult, any, error) {
			res, out, err := typedDiffHandler(ctx, req, in)
			if in.Text == "nil" {
				return res, nil, err
			}
			return res, out, err
		}
		sdk, ours := typedPair(t, tool, h)
		callBoth(t, tool.Name, sdk, ours)
	})
	// The built-ins, with the schemas the endpoint serves and handlers
	// that answer with their zero results.
	ask, prog, get := servedBuiltins("agentctl")
	t.Run("ask_user_question", func(t *testing.T) {
		sdk, ours := typedPair(t, ask, func(context.Context, *mcp.CallToolRequest, AskInput) (*mcp.CallToolResult, AskOutput, error) {
			return nil, AskOutput{Status: AskExpired}, nil
		})
		callBoth(t, ask.Name, sdk, ours)
	})
	t.Run("report_progress", func(t *testing.T) {
		sdk, ours := typedPair(t, prog, func(_ context.Context, _ *mcp.CallToolRequest, in ProgressInput) (*mcp.CallToolResult, ProgressOutput, error) {
			return nil, ProgressOutput{Recorded: true, Status: in.Status}, nil
		})
		callBoth(t, prog.Name, sdk, ours)
	})
	t.Run("get_instance", func(t *testing.T) {
		sdk, ours := typedPair(t, get, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, InstanceOutput, error) {
			return nil, InstanceOutput{Instance: Instance{ID: "i"}, Conflicts: []Conflict{}}, nil
		})
		callBoth(t, get.Name, sdk, ours)
	})
}

// TestTypedHandlerMatchesSDKForKBs: the same for a knowledge base's tools,
// with their real handlers (the reading ones: a write would change what
// the other side reads).
func TestTypedHandlerMatchesSDKForKBs(t *testing.T) {
	kbase, _ := openTestKB(t, "docs", map[string]string{
		"guides/setup.md": "# Setup\n\nHow to deploy the service.\n",
		"notes.md":        "# Notes\n\nNothing to deploy here.\n",
	}, kb.Options{})
	defs, err := kbTools(kbase, kbMountName("docs"))
	if err != nil {
		t.Fatal(err)
	}
	// As the registry installs them: with their schemas encoded.
	list, read, search := *defs.list, *defs.read, *defs.search
	for _, err := range []error{rawSchemas[ConceptListInput, kb.ListOutput](&list),
		rawSchemas[ConceptReadInput, kb.ReadOutput](&read), rawSchemas[ConceptSearchInput, kb.SearchOutput](&search)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Run("concept_list", func(t *testing.T) {
		sdk, ours := typedPair(t, &list, kbList(kbase))
		callBoth(t, list.Name, sdk, ours)
	})
	t.Run("concept_read", func(t *testing.T) {
		sdk, ours := typedPair(t, &read, kbRead(kbase))
		callBoth(t, read.Name, sdk, ours)
	})
	t.Run("concept_search", func(t *testing.T) {
		sdk, ours := typedPair(t, &search, kbSearch(kbase))
		callBoth(t, search.Name, sdk, ours)
	})
}

// TestTypedHandlerBadSchema: a schema that does not resolve, which
// mcp.AddTool refuses at registration (a panic), makes every call of the
// tool fail with a protocol error naming the tool.
func TestTypedHandlerBadSchema(t *testing.T) {
	tool := &mcp.Tool{Name: "bad", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string","default":5}}}`)}
	s := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	s.AddTool(tool, typedHandler(tool, func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
		return textResult("ran"), nil, nil
	}))
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cs.Close(); ss.Wait() }()
	for range 2 {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bad", Arguments: map[string]any{}})
		if err == nil || !strings.Contains(err.Error(), `tool "bad": input schema`) {
			t.Fatalf("call of a tool whose schema does not resolve: %v", err)
		}
	}
}
