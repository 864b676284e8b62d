package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/agentctl/agentctl/mcpserver/kb"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func openTestKB(t testing.TB, name string, files map[string]string, opts kb.Options) (*kb.Base, string) {
	t.Helper()
	dir := t.TempDir()
	testkit.WriteFiles(t, dir, files)
	kbase, err := kb.Open(name, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kbase.Close() })
	return kbase, dir
}

// kbMountName is how the tests prefix a mount's tools (the endpoint's
// "<prefix>__<tool>" convention).
func kbMountName(prefix string) func(string) string {
	return func(base string) string {
		if prefix == "" {
			return base
		}
		return prefix + "__" + base
	}
}

// connectKB starts an endpoint with kbase's tools registered under prefix and
// an in-memory client session for it.
func connectKB(t testing.TB, kbase *kb.Base, prefix string) (*Endpoint, *mcp.ClientSession) {
	t.Helper()
	ep, err := New(testConfig(agents.NamespacingPrefix, newFakeStore()))
	if err != nil {
		t.Fatal(err)
	}
	if err := RegisterKBTools(ep.Registry(), kbase, prefix, kbMountName(prefix)); err != nil {
		t.Fatal(err)
	}
	return ep, sessionFor(t, ep.Server(), nil)
}

// callKB calls a tool that must answer with a result (not a protocol error).
func callKB(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return res
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func mustOK(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", resultText(res))
	}
	return res.StructuredContent.(map[string]any)
}

func mustToolError(t testing.TB, res *mcp.CallToolResult, want ...string) string {
	t.Helper()
	msg := resultText(res)
	if !res.IsError {
		t.Fatalf("want a tool error, got %s", msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("tool error %q does not mention %q", msg, w)
		}
	}
	return msg
}

var sampleKB = map[string]string{
	"index.md":          "---\ntitle: Welcome\n---\nStart here. See guides/setup for installation.\n",
	"guides/setup.md":   "---\ntitle: \"Setup: installing agentctl\"\ntags: [a]\n---\n# Ignored heading\n\nInstall the binary, then run agentctl instance create.\n",
	"guides/upgrade.md": "# Upgrading\n\nReplace the binary. Your instances keep working; the store migrates itself.\n",
	"notes/plain.md":    "No title here, just words about zebras.\n",
	"notes/.hidden.md":  "hidden zebra",
	".git/config.md":    "hidden folder zebra",
	"notes/readme.txt":  "not markdown zebra",
	"notes/x.md.md":     "double suffix zebra",
}

func TestKBToolsHappyPath(t *testing.T) {
	kbase, dir := openTestKB(t, "docs", sampleKB, kb.Options{})
	ep, cs := connectKB(t, kbase, "docs")

	want := []string{"docs__concept_list", "docs__concept_read", "docs__concept_search", "docs__concept_write"}
	var got []string
	for _, n := range listNames(t, cs) {
		if strings.HasPrefix(n, "docs__") {
			got = append(got, n)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("tools/list = %v", got)
	}
	e, ok := ep.Registry().Lookup("docs__concept_read")
	if !ok || e.Source != "kb docs" || e.Kind != KindKB || e.Mount != "docs" || e.Prefix != "docs" || e.Base != "concept_read" {
		t.Fatalf("entry %+v", e)
	}
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if strings.HasPrefix(tool.Name, "docs__") && (!strings.Contains(tool.Description, `knowledge base "docs"`) || tool.InputSchema == nil) {
			t.Errorf("%s: description must name the knowledge base: %q", tool.Name, tool.Description)
		}
	}

	// list (arguments sent as JSON null: all optional)
	out := mustOK(t, callKB(t, cs, "docs__concept_list", nil))
	var ids, titles []string
	for _, c := range out["concepts"].([]any) {
		m := c.(map[string]any)
		ids = append(ids, m["id"].(string))
		title, _ := m["title"].(string)
		titles = append(titles, title)
	}
	if !slices.Equal(ids, []string{"guides/setup", "guides/upgrade", "index", "notes/plain"}) {
		t.Fatalf("ids %v (hidden, non-.md and *.md.md files are not concepts)", ids)
	}
	if !slices.Equal(titles, []string{"Setup: installing agentctl", "Upgrading", "Welcome", ""}) {
		t.Fatalf("titles %q", titles)
	}
	if _, ok := out["next_cursor"]; ok {
		t.Fatal("one page has no next_cursor")
	}

	// read, with and without the .md suffix
	for _, id := range []string{"guides/setup", "guides/setup.md"} {
		res := callKB(t, cs, "docs__concept_read", map[string]any{"id": id})
		out := mustOK(t, res)
		if out["id"] != "guides/setup" || out["title"] != "Setup: installing agentctl" || out["content"] != sampleKB["guides/setup.md"] {
			t.Fatalf("read %q: %v", id, out)
		}
		if resultText(res) != sampleKB["guides/setup.md"] {
			t.Fatalf("the text content is the Markdown: %q", resultText(res))
		}
	}

	// search
	// Stemming: "install" also finds index's "installation".
	out = mustOK(t, callKB(t, cs, "docs__concept_search", map[string]any{"query": "binary install"}))
	results := out["results"].([]any)
	if len(results) != 3 || results[1].(map[string]any)["id"] != "index" || results[2].(map[string]any)["id"] != "guides/upgrade" {
		t.Fatalf("results %v", results)
	}
	first := results[0].(map[string]any)
	if first["id"] != "guides/setup" || !strings.Contains(first["snippet"].(string), "Install the binary") || first["score"].(float64) <= 0 {
		t.Fatalf("first %v", first)
	}
	mustToolError(t, callKB(t, cs, "docs__concept_search", map[string]any{"query": "  "}), "query is empty")
	// Only notes/plain ("zebras", by stemming): the other zebras are in
	// hidden and non-concept files.
	out = mustOK(t, callKB(t, cs, "docs__concept_search", map[string]any{"query": "zebra"}))
	if r := out["results"].([]any); len(r) != 1 || r[0].(map[string]any)["id"] != "notes/plain" {
		t.Fatalf("hidden and non-concept files are not searched: %v", r)
	}

	// write: create (with folders), then update
	out = mustOK(t, callKB(t, cs, "docs__concept_write", map[string]any{"id": "new/deep/idea", "content": "# Idea\n\nquokkas everywhere\n"}))
	if out["id"] != "new/deep/idea" || out["created"] != true || out["bytes"].(float64) != 27 {
		t.Fatalf("write %v", out)
	}
	out = mustOK(t, callKB(t, cs, "docs__concept_write", map[string]any{"id": "new/deep/idea.md", "content": "# Idea\n\nwombats\n"}))
	if out["created"] != false {
		t.Fatalf("update %v", out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "new", "deep", "idea.md")); err != nil || string(b) != "# Idea\n\nwombats\n" {
		t.Fatalf("on disk %q %v", b, err)
	}
	out = mustOK(t, callKB(t, cs, "docs__concept_search", map[string]any{"query": "wombats"}))
	if r := out["results"].([]any); len(r) != 1 || r[0].(map[string]any)["title"] != "Idea" {
		t.Fatalf("a write is searchable at once: %v", r)
	}

	// unknown id
	mustToolError(t, callKB(t, cs, "docs__concept_read", map[string]any{"id": "nope"}),
		`concept "nope" not found in knowledge base "docs"; use concept_list or concept_search`)
	mustToolError(t, callKB(t, cs, "docs__concept_read", map[string]any{"id": "guides"}), `"guides" is a folder`, `prefix "guides/"`)
	// the schema bounds the limits
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "docs__concept_list", Arguments: map[string]any{"limit": 5000}}); err == nil && !res.IsError {
		t.Fatal("limit 5000 accepted")
	}
}

func TestKBBareNamesAndCollisions(t *testing.T) {
	kbase, _ := openTestKB(t, "docs", sampleKB, kb.Options{ReadOnly: true})
	ep, err := New(testConfig(agents.NamespacingPrefix, newFakeStore()))
	if err != nil {
		t.Fatal(err)
	}
	if err := RegisterKBTools(ep.Registry(), kbase, "", kbMountName("")); err != nil {
		t.Fatal(err)
	}
	for _, b := range KBToolBases(true) {
		if !ep.Registry().Has(b) {
			t.Errorf("%s not registered", b)
		}
	}
	kb2, _ := openTestKB(t, "notes", nil, kb.Options{})
	err = RegisterKBTools(ep.Registry(), kb2, "", kbMountName(""))
	var ce *CollisionError
	if !errors.As(err, &ce) || ce.Name != "concept_list" || ce.First != "kb docs" || ce.Second != "kb notes" {
		t.Fatalf("got %v", err)
	}
	if ep.Registry().Has("concept_write") {
		t.Fatal("a refused registration must register nothing")
	}
}

func TestKBReadOnlyHasNoWrite(t *testing.T) {
	if got := KBToolBases(true); !slices.Equal(got, []string{"concept_list", "concept_read", "concept_search"}) {
		t.Fatal(got)
	}
	if got := KBToolBases(false); !slices.Equal(got, []string{"concept_list", "concept_read", "concept_search", "concept_write"}) {
		t.Fatal(got)
	}
	kbase, dir := openTestKB(t, "docs", sampleKB, kb.Options{ReadOnly: true})
	_, cs := connectKB(t, kbase, "docs")
	for _, n := range listNames(t, cs) {
		if strings.HasSuffix(n, "concept_write") {
			t.Fatalf("read-only mount lists %s", n)
		}
	}
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "docs__concept_write", Arguments: map[string]any{"id": "x", "content": "y"}})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("want -32602 unknown tool, got %v", err)
	}
	if _, err := kbase.Write(context.Background(), "x", "y"); !errors.Is(err, kb.ErrReadOnly) {
		t.Fatalf("Write on a read-only KB: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.md")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("read-only KB written")
	}
}

func TestKBPathSafety(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.md")
	const secretText = "TOP SECRET outsider content"
	if err := os.WriteFile(secret, []byte(secretText), 0o644); err != nil {
		t.Fatal(err)
	}
	kbase, dir := openTestKB(t, "docs", map[string]string{"ok.md": "fine"}, kb.Options{})
	if err := os.Symlink(secret, filepath.Join(dir, "leak.md")); err != nil {
		t.Skip("symlinks unavailable:", err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "ext")); err != nil {
		t.Fatal(err)
	}
	// A relative link that climbs out, and a link that stays inside.
	if err := os.Symlink("../"+filepath.Base(outside)+"/secret.md", filepath.Join(dir, "rel.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("ok.md", filepath.Join(dir, "alias.md")); err != nil {
		t.Fatal(err)
	}
	_, cs := connectKB(t, kbase, "docs")

	for _, tc := range []struct {
		id   string
		want string
	}{
		{"../x", `".." component`},
		{"a/../../x", `".." component`},
		{"/etc/passwd", "absolute path"},
		{`a\b`, "backslash"},
		{"a\x00b", "NUL"},
		{"", "empty"},
		{"leak", "outside"},
		{"rel", "outside"},
		{"ext/secret", "outside"},
		{"ext/new", "outside"},
		{"ext/sub/new", "outside"},
	} {
		t.Run(fmt.Sprintf("%q", tc.id), func(t *testing.T) {
			msg := mustToolError(t, callKB(t, cs, "docs__concept_read", map[string]any{"id": tc.id}))
			if !strings.Contains(msg, tc.want) {
				t.Errorf("read: %q does not say %q", msg, tc.want)
			}
			if strings.Contains(msg, secretText) {
				t.Fatal("the outside file was read")
			}
			mustToolError(t, callKB(t, cs, "docs__concept_write", map[string]any{"id": tc.id, "content": "overwritten"}), tc.want)
		})
	}
	if b, _ := os.ReadFile(secret); string(b) != secretText {
		t.Fatalf("the outside file changed: %q", b)
	}
	ents, _ := os.ReadDir(outside)
	if len(ents) != 1 {
		t.Fatalf("files created outside: %v", ents)
	}
	if _, err := os.Lstat(filepath.Join(dir, "etc")); err == nil {
		t.Fatal("an absolute id created a folder inside the knowledge base")
	}
	// A link inside the knowledge base is read, not replaced.
	r, err := kbase.Read(context.Background(), "alias")
	if err != nil || r.Content != "fine" {
		t.Fatalf("in-root link: %v %v", r, err)
	}
	if _, err := kbase.Write(context.Background(), "alias", "x"); !errors.Is(err, kb.ErrNotAConcept) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("write through an in-root link: %v", err)
	}
	// Listing and search show neither the links out nor what is behind them.
	l, _ := kbase.List(context.Background(), "", "", 0)
	var ids []string
	for _, c := range l.Concepts {
		ids = append(ids, c.ID)
	}
	if !slices.Equal(ids, []string{"alias", "ok"}) {
		t.Fatalf("list %v", ids)
	}
	if s, _ := kbase.Search(context.Background(), "secret outsider", 10); len(s.Results) != 0 {
		t.Fatalf("search found %v", s.Results)
	}
}

func TestKBSizeLimits(t *testing.T) {
	kbase, dir := openTestKB(t, "docs", map[string]string{
		"small.md": strings.Repeat("s", 100),
		"big.md":   strings.Repeat("b", 101),
	}, kb.Options{MaxBytes: 100})
	_, cs := connectKB(t, kbase, "docs")
	mustOK(t, callKB(t, cs, "docs__concept_read", map[string]any{"id": "small"}))
	mustToolError(t, callKB(t, cs, "docs__concept_read", map[string]any{"id": "big"}), "101 bytes", "100-byte limit")
	mustOK(t, callKB(t, cs, "docs__concept_write", map[string]any{"id": "w", "content": strings.Repeat("w", 100)}))
	mustToolError(t, callKB(t, cs, "docs__concept_write", map[string]any{"id": "w2", "content": strings.Repeat("w", 101)}), "101 bytes", "100-byte limit")
	if _, err := os.Stat(filepath.Join(dir, "w2.md")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("oversized content written")
	}
	// Oversized files are listed (a read explains the limit) but not searched.
	if s, _ := kbase.Search(context.Background(), "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", 10); len(s.Results) != 0 {
		t.Fatal(s.Results)
	}
	// The default limit is 1 MiB.
	kb2, _ := openTestKB(t, "d2", map[string]string{"mib.md": strings.Repeat("m", kb.DefaultMaxBytes)}, kb.Options{})
	if _, err := kb2.Read(context.Background(), "mib"); err != nil {
		t.Fatal(err)
	}
	if _, err := kb2.Write(context.Background(), "over", strings.Repeat("m", kb.DefaultMaxBytes+1)); !errors.Is(err, kb.ErrConceptTooLarge) {
		t.Fatal(err)
	}
}
