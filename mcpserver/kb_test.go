package mcpserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// writeKBFiles writes files (slash paths relative to dir) for a test KB.
func writeKBFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func openTestKB(t testing.TB, name string, files map[string]string, opts KBOptions) (*KB, string) {
	t.Helper()
	dir := t.TempDir()
	writeKBFiles(t, dir, files)
	kb, err := OpenKB(name, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kb.Close() })
	return kb, dir
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

// connectKB starts an endpoint with kb's tools registered under prefix and
// an in-memory client session for it.
func connectKB(t testing.TB, kb *KB, prefix string) (*Endpoint, *mcp.ClientSession) {
	t.Helper()
	ep, err := New(testConfig(agents.NamespacingPrefix, newFakeStore()))
	if err != nil {
		t.Fatal(err)
	}
	if err := RegisterKBTools(ep.Registry(), kb, prefix, kbMountName(prefix)); err != nil {
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
	kb, dir := openTestKB(t, "docs", sampleKB, KBOptions{})
	ep, cs := connectKB(t, kb, "docs")

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
	out = mustOK(t, callKB(t, cs, "docs__concept_search", map[string]any{"query": "binary install"}))
	results := out["results"].([]any)
	if len(results) != 2 {
		t.Fatalf("results %v", results)
	}
	first := results[0].(map[string]any)
	if first["id"] != "guides/setup" || !strings.Contains(first["snippet"].(string), "Install the binary") || first["score"].(float64) <= 0 {
		t.Fatalf("first %v", first)
	}
	mustToolError(t, callKB(t, cs, "docs__concept_search", map[string]any{"query": "  "}), "query is empty")
	out = mustOK(t, callKB(t, cs, "docs__concept_search", map[string]any{"query": "zebra"}))
	if r := out["results"].([]any); len(r) != 0 {
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
	kb, _ := openTestKB(t, "docs", sampleKB, KBOptions{ReadOnly: true})
	ep, err := New(testConfig(agents.NamespacingPrefix, newFakeStore()))
	if err != nil {
		t.Fatal(err)
	}
	if err := RegisterKBTools(ep.Registry(), kb, "", kbMountName("")); err != nil {
		t.Fatal(err)
	}
	for _, b := range KBToolBases(true) {
		if !ep.Registry().Has(b) {
			t.Errorf("%s not registered", b)
		}
	}
	kb2, _ := openTestKB(t, "notes", nil, KBOptions{})
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
	kb, dir := openTestKB(t, "docs", sampleKB, KBOptions{ReadOnly: true})
	_, cs := connectKB(t, kb, "docs")
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
	if _, err := kb.Write(context.Background(), "x", "y"); !errors.Is(err, ErrKBReadOnly) {
		t.Fatalf("Write on a read-only KB: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.md")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("read-only KB written")
	}
}

func TestKBListPagination(t *testing.T) {
	files := map[string]string{}
	var all []string
	for i := range 25 {
		id := fmt.Sprintf("p/c%02d", i)
		files[id+".md"] = fmt.Sprintf("# Concept %d\n", i)
		all = append(all, id)
	}
	files["q/other.md"] = "x"
	files["p-sibling.md"] = "x" // sorts between "p" and "p/" bytewise: "-" < "/"
	kb, dir := openTestKB(t, "docs", files, KBOptions{})
	ctx := context.Background()

	var got []string
	cursor, pages := "", 0
	for {
		out, err := kb.List(ctx, "p/", cursor, 10)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, c := range out.Concepts {
			got = append(got, c.ID)
			if want := "Concept " + strings.TrimLeft(strings.TrimPrefix(c.ID, "p/c"), "0"); c.Title != want && !(c.ID == "p/c00" && c.Title == "Concept 0") {
				t.Errorf("%s title %q", c.ID, c.Title)
			}
		}
		if out.NextCursor == "" {
			break
		}
		if pages == 1 {
			// A concept added behind the cursor does not disturb the pages.
			writeKBFiles(t, dir, map[string]string{"p/a-first.md": "x"})
		}
		cursor = out.NextCursor
	}
	if pages != 3 || !slices.Equal(got, all) {
		t.Fatalf("%d pages: %v", pages, got)
	}

	// Whole listing, deterministic and sorted.
	out, err := kb.List(ctx, "", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Concepts) != 28 || !slices.IsSortedFunc(out.Concepts, func(a, b ConceptSummary) int { return strings.Compare(a.ID, b.ID) }) {
		t.Fatalf("%d concepts", len(out.Concepts))
	}
	// Prefixes that are not folder boundaries, and ones that cannot match.
	for prefix, n := range map[string]int{"p": 27, "p/c1": 10, "q/": 1, "zz/": 0, "../": 0, "p/c00": 1, "/p": 0} {
		out, err := kb.List(ctx, prefix, "", 1000)
		if err != nil || len(out.Concepts) != n {
			t.Errorf("prefix %q: %d concepts, want %d (%v)", prefix, len(out.Concepts), n, err)
		}
	}
	if _, err := kb.List(ctx, "", "!!not-a-cursor", 10); !errors.Is(err, ErrInvalidKBRequest) {
		t.Fatalf("bad cursor: %v", err)
	}
	out, _ = kb.List(ctx, "", "", 5000)
	if len(out.Concepts) != 28 {
		t.Fatal("limit above the maximum is clamped")
	}
}

func TestKBTitles(t *testing.T) {
	for _, tc := range []struct {
		content, title, frontMatterTitle string
	}{
		{"---\ntitle: Plain\n---\nbody", "Plain", "Plain"},
		{"---\ntitle: \"Quoted: yes\"\n---\n", "Quoted: yes", "Quoted: yes"},
		{"---\ntitle: 'It''s single'\n---\n", "It's single", "It's single"},
		{"---\ntitle: \"esc \\\"q\\\"\"\n---\n", `esc "q"`, `esc "q"`},
		{"---\ntitle: With comment # note\n---\n", "With comment", "With comment"},
		{"---\r\ntitle: CRLF\r\n---\r\nbody", "CRLF", "CRLF"},
		{"\ufeff---\ntitle: BOM\n---\n", "BOM", "BOM"},
		{"---\ntitle: >\n  Folded\n  title\nother: x\n---\n", "Folded title", "Folded title"},
		{"---\nauthor: x\n---\n# From heading\n", "From heading", ""},
		{"---\n  title: nested, not top-level\n---\n# H\n", "H", ""},
		{"# Heading #\ntext", "Heading", ""},
		{"intro\n```\n# not a heading\n```\n# Real\n", "Real", ""},
		{"## Second level only\n", "", ""},
		{"---\ntitle: unterminated\n# Heading\n", "Heading", ""}, // no closing ---: no front matter
		{"", "", ""},
	} {
		if got := conceptTitle([]byte(tc.content)); got != tc.title {
			t.Errorf("conceptTitle(%q) = %q, want %q", tc.content, got, tc.title)
		}
		if got, _, _ := splitFrontMatter([]byte(tc.content)); got != tc.frontMatterTitle {
			t.Errorf("front matter title of %q = %q, want %q", tc.content, got, tc.frontMatterTitle)
		}
	}
	// Read gives the front-matter title only; list and search fall back to
	// the heading.
	kb, _ := openTestKB(t, "docs", map[string]string{"h.md": "# Heading only\n\nsome words\n"}, KBOptions{})
	ctx := context.Background()
	r, err := kb.Read(ctx, "h")
	if err != nil || r.Title != "" {
		t.Fatalf("read title %q %v", r.Title, err)
	}
	l, _ := kb.List(ctx, "", "", 0)
	s, _ := kb.Search(ctx, "words", 0)
	if l.Concepts[0].Title != "Heading only" || s.Results[0].Title != "Heading only" {
		t.Fatalf("list %v search %v", l, s)
	}
}

func TestCleanConceptID(t *testing.T) {
	for id, want := range map[string]string{
		"a": "a", "guides/setup": "guides/setup", "guides/setup.md": "guides/setup",
		"with space/ü": "with space/ü", "a.b": "a.b", "a..b": "a..b", "x.MD": "x.MD",
	} {
		if got, err := CleanConceptID(id); err != nil || got != want {
			t.Errorf("CleanConceptID(%q) = %q, %v; want %q", id, got, err, want)
		}
	}
	for id, why := range map[string]string{
		"":                       "empty",
		"../x":                   `".." component`,
		"a/../../x":              `".." component`,
		"a/./b":                  `"." component`,
		"/etc/passwd":            "absolute",
		`a\b`:                    "backslash",
		"a\x00b":                 "NUL",
		"a\nb":                   "control character",
		"a//b":                   "empty folder name",
		"a/":                     "names a folder",
		".hidden":                "hidden",
		"a/.git/x":               "hidden",
		".md":                    "no name",
		"x.md.md":                "twice",
		"\xff":                   "UTF-8",
		strings.Repeat("a", 300): "longer than 200",
	} {
		_, err := CleanConceptID(id)
		if !errors.Is(err, ErrInvalidConceptID) || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), `e.g. "guides/setup"`) {
			t.Errorf("CleanConceptID(%q) = %v; want an error about %q", id, err, why)
		}
	}
}

func FuzzCleanConceptID(f *testing.F) {
	for _, s := range []string{"a", "guides/setup.md", "../x", "a/../../x", "/etc/passwd", `a\b`, "a\x00b", "", ".", "..", "a/..", "...", "a/.../b", "x.md.md", "C:/x", "~/x", "a//b"} {
		f.Add(s)
	}
	root := filepath.FromSlash("/kb/root")
	f.Fuzz(func(t *testing.T, id string) {
		c, err := CleanConceptID(id)
		if err != nil {
			if !errors.Is(err, ErrInvalidConceptID) {
				t.Fatalf("%q: unexpected error %v", id, err)
			}
			return
		}
		for part := range strings.SplitSeq(c, "/") {
			if part == ".." || part == "." || part == "" {
				t.Fatalf("%q accepted as %q with component %q", id, c, part)
			}
		}
		rel := c + ".md"
		joined := filepath.Join(root, filepath.FromSlash(rel))
		if !strings.HasPrefix(joined, root+string(filepath.Separator)) || !filepath.IsLocal(filepath.FromSlash(rel)) {
			t.Fatalf("%q accepted as %q, which leaves the root: %s", id, c, joined)
		}
		if again, err := CleanConceptID(c); err != nil || again != c {
			t.Fatalf("%q: canonical id %q is not stable: %q %v", id, c, again, err)
		}
	})
}

func TestKBPathSafety(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.md")
	const secretText = "TOP SECRET outsider content"
	if err := os.WriteFile(secret, []byte(secretText), 0o644); err != nil {
		t.Fatal(err)
	}
	kb, dir := openTestKB(t, "docs", map[string]string{"ok.md": "fine"}, KBOptions{})
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
	_, cs := connectKB(t, kb, "docs")

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
	r, err := kb.Read(context.Background(), "alias")
	if err != nil || r.Content != "fine" {
		t.Fatalf("in-root link: %v %v", r, err)
	}
	if _, err := kb.Write(context.Background(), "alias", "x"); !errors.Is(err, ErrNotAConcept) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("write through an in-root link: %v", err)
	}
	// Listing and search show neither the links out nor what is behind them.
	l, _ := kb.List(context.Background(), "", "", 0)
	var ids []string
	for _, c := range l.Concepts {
		ids = append(ids, c.ID)
	}
	if !slices.Equal(ids, []string{"alias", "ok"}) {
		t.Fatalf("list %v", ids)
	}
	if s, _ := kb.Search(context.Background(), "secret outsider", 10); len(s.Results) != 0 {
		t.Fatalf("search found %v", s.Results)
	}
}

func TestKBSizeLimits(t *testing.T) {
	kb, dir := openTestKB(t, "docs", map[string]string{
		"small.md": strings.Repeat("s", 100),
		"big.md":   strings.Repeat("b", 101),
	}, KBOptions{MaxBytes: 100})
	_, cs := connectKB(t, kb, "docs")
	mustOK(t, callKB(t, cs, "docs__concept_read", map[string]any{"id": "small"}))
	mustToolError(t, callKB(t, cs, "docs__concept_read", map[string]any{"id": "big"}), "101 bytes", "100-byte limit")
	mustOK(t, callKB(t, cs, "docs__concept_write", map[string]any{"id": "w", "content": strings.Repeat("w", 100)}))
	mustToolError(t, callKB(t, cs, "docs__concept_write", map[string]any{"id": "w2", "content": strings.Repeat("w", 101)}), "101 bytes", "100-byte limit")
	if _, err := os.Stat(filepath.Join(dir, "w2.md")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("oversized content written")
	}
	// Oversized files are listed (a read explains the limit) but not searched.
	if s, _ := kb.Search(context.Background(), "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", 10); len(s.Results) != 0 {
		t.Fatal(s.Results)
	}
	// The default limit is 1 MiB.
	kb2, _ := openTestKB(t, "d2", map[string]string{"mib.md": strings.Repeat("m", DefaultKBMaxBytes)}, KBOptions{})
	if _, err := kb2.Read(context.Background(), "mib"); err != nil {
		t.Fatal(err)
	}
	if _, err := kb2.Write(context.Background(), "over", strings.Repeat("m", DefaultKBMaxBytes+1)); !errors.Is(err, ErrConceptTooLarge) {
		t.Fatal(err)
	}
}

func TestOpenKBErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	for _, dir := range []string{file, filepath.Join(t.TempDir(), "missing")} {
		if _, err := OpenKB("docs", dir, KBOptions{}); err == nil || !strings.Contains(err.Error(), `knowledge base "docs"`) {
			t.Errorf("OpenKB(%s): %v", dir, err)
		}
	}
	kb, _ := openTestKB(t, "docs", nil, KBOptions{})
	kb.Close()
	if _, err := kb.Read(context.Background(), "x"); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("read after close: %v", err)
	}
	// Close stops the background refresher of a searched knowledge base.
	kb2, _ := openTestKB(t, "docs", map[string]string{"a.md": "alpha"}, KBOptions{RefreshInterval: time.Millisecond})
	if _, err := kb2.Search(context.Background(), "alpha", 1); err != nil {
		t.Fatal(err)
	}
	if err := kb2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := kb2.Search(context.Background(), "alpha", 1); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("search after close: %v", err)
	}
}

const (
	crashEnv  = "KB_CRASH_WRITER"
	crashSize = 512 << 10
)

// TestKBCrashWriter is the child process of TestKBCrashSafety: it writes a
// large concept in a loop, alternating two contents, until it is killed.
func TestKBCrashWriter(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("helper process of TestKBCrashSafety")
	}
	kb, err := OpenKB("crash", dir, KBOptions{})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	contents := []string{strings.Repeat("A", crashSize), strings.Repeat("B", crashSize)}
	fmt.Println("ready")
	deadline := time.Now().Add(time.Minute) // never outlive a parent that died
	for i := 0; time.Now().Before(deadline); i++ {
		if _, err := kb.Write(context.Background(), "big", contents[i%2]); err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
	}
	os.Exit(0)
}

func TestKBCrashSafety(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("needs SIGKILL and subprocesses")
	}
	dir := t.TempDir()
	initial := "# Initial\n"
	writeKBFiles(t, dir, map[string]string{"big.md": initial})
	valid := map[string]string{initial: "initial", strings.Repeat("A", crashSize): "A", strings.Repeat("B", crashSize): "B"}
	seen := map[string]int{}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 6 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKBCrashWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		ready := false
		for !ready && sc.Scan() {
			if strings.HasPrefix(sc.Text(), "error:") {
				t.Fatal(sc.Text())
			}
			ready = sc.Text() == "ready"
		}
		if !ready {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the writer never became ready")
		}
		time.Sleep(time.Duration(1+rng.IntN(40)) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil { // SIGKILL
			t.Fatal(err)
		}
		cmd.Wait()

		kb, err := OpenKB("crash", dir, KBOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := kb.Read(context.Background(), "big")
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		which, ok := valid[r.Content]
		if !ok {
			t.Fatalf("round %d: torn concept: %d bytes, starts %q, ends %q", round, len(r.Content), r.Content[:min(8, len(r.Content))], r.Content[max(0, len(r.Content)-8):])
		}
		seen[which]++
		l, err := kb.List(context.Background(), "", "", 0)
		if err != nil || len(l.Concepts) != 1 || l.Concepts[0].ID != "big" {
			t.Fatalf("round %d: list %v %v", round, l, err)
		}
		if s, err := kb.Search(context.Background(), "initial", 10); err != nil || len(s.Results) > 1 {
			t.Fatalf("round %d: search %v %v", round, s, err)
		}
		kb.Close()
	}
	ents, _ := os.ReadDir(dir)
	var temps []string
	for _, e := range ents {
		if isKBTempName(e.Name()) {
			temps = append(temps, e.Name())
		}
	}
	t.Logf("contents seen after SIGKILL: %v; temporary files left behind: %d", seen, len(temps))

	// Leftover temporary files are removed by a walk once they are stale.
	kb, err := OpenKB("crash", dir, KBOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	kb.staleTempAge = 0
	if _, err := kb.List(context.Background(), "", "", 0); err != nil {
		t.Fatal(err)
	}
	ents, _ = os.ReadDir(dir)
	for _, e := range ents {
		if isKBTempName(e.Name()) {
			t.Fatalf("stale temporary file %s not removed", e.Name())
		}
	}
}

func TestKBTempFiles(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		t.Run(fmt.Sprint("read-only=", readOnly), func(t *testing.T) {
			stale := ".a.md" + kbTempMarker + "0011"
			fresh := ".a.md" + kbTempMarker + "2233"
			kb, dir := openTestKB(t, "docs", map[string]string{
				"a.md": "alpha", "sub/" + stale: "half a write", stale: "half", fresh: "in flight",
			}, KBOptions{ReadOnly: readOnly})
			old := time.Now().Add(-2 * kbStaleTempAge)
			for _, p := range []string{stale, "sub/" + stale} {
				if err := os.Chtimes(filepath.Join(dir, p), old, old); err != nil {
					t.Fatal(err)
				}
			}
			l, err := kb.List(context.Background(), "", "", 0)
			if err != nil || len(l.Concepts) != 1 || l.Concepts[0].ID != "a" {
				t.Fatalf("list %v %v", l, err)
			}
			if s, _ := kb.Search(context.Background(), "half write flight", 10); len(s.Results) != 0 {
				t.Fatalf("temporary files searched: %v", s.Results)
			}
			for p, wantGone := range map[string]bool{stale: !readOnly, "sub/" + stale: !readOnly, fresh: false} {
				_, err := os.Stat(filepath.Join(dir, p))
				if gone := errors.Is(err, os.ErrNotExist); gone != wantGone {
					t.Errorf("%s: removed=%v, want %v", p, gone, wantGone)
				}
			}
		})
	}
}

// waitForSearch polls until check accepts the search's ids.
func waitForSearch(t *testing.T, kb *KB, query string, check func(ids []string) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var ids []string
	for time.Now().Before(deadline) {
		out, err := kb.Search(context.Background(), query, 50)
		if err != nil {
			t.Fatal(err)
		}
		ids = ids[:0]
		for _, r := range out.Results {
			ids = append(ids, r.ID)
		}
		if check(ids) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("search %q: still %v", query, ids)
}

func TestKBSearchFreshness(t *testing.T) {
	kb, dir := openTestKB(t, "docs", map[string]string{"a.md": "alpha beta", "sub/b.md": "beta"}, KBOptions{RefreshInterval: 10 * time.Millisecond})
	has := func(want ...string) func([]string) bool {
		return func(ids []string) bool { return slices.Equal(ids, want) }
	}
	waitForSearch(t, kb, "alpha", has("a"))

	// Edits outside agentctl: added, changed (same size too), removed.
	writeKBFiles(t, dir, map[string]string{"sub/new.md": "gamma", "a.md": "delta beta"})
	waitForSearch(t, kb, "gamma", has("sub/new"))
	waitForSearch(t, kb, "alpha", has())
	waitForSearch(t, kb, "delta", has("a"))
	writeKBFiles(t, dir, map[string]string{"a.md": "omega beta"}) // same size, same second
	waitForSearch(t, kb, "omega", has("a"))
	if err := os.RemoveAll(filepath.Join(dir, "sub")); err != nil {
		t.Fatal(err)
	}
	waitForSearch(t, kb, "beta gamma", has("a"))

	// Writes through the KB are searchable at once, without a refresh.
	kb2, _ := openTestKB(t, "docs", map[string]string{"a.md": "alpha"}, KBOptions{RefreshInterval: time.Hour})
	ctx := context.Background()
	if s, _ := kb2.Search(ctx, "alpha", 10); len(s.Results) != 1 {
		t.Fatal(s)
	}
	for _, step := range []struct{ id, content, query, want string }{
		{"q/quokka", "# Quokka\nsmiling marsupial", "quokka", "q/quokka"},
		{"a", "now about wombats", "wombats", "a"},
		{"a", "now about wombats", "alpha", ""},
	} {
		if _, err := kb2.Write(ctx, step.id, step.content); err != nil {
			t.Fatal(err)
		}
		s, err := kb2.Search(ctx, step.query, 10)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if len(s.Results) > 0 {
			got = s.Results[0].ID
		}
		if got != step.want || len(s.Results) > 1 {
			t.Fatalf("after writing %s, search %q = %v", step.id, step.query, s.Results)
		}
	}
}

func TestKBSearchRanking(t *testing.T) {
	filler := strings.Repeat("lorem ipsum dolor sit amet consectetur ", 20)
	kb, _ := openTestKB(t, "docs", map[string]string{
		"title.md":   "---\ntitle: Deploying services\n---\n" + filler,
		"body.md":    "---\ntitle: Something else\n---\n" + filler + " we mention deploying once here, near the end of a long text. " + filler,
		"both.md":    "# Deploying with rollbacks\n\nDeploying is easy; rollbacks are easier.\n",
		"nothing.md": filler,
	}, KBOptions{})
	s, err := kb.Search(context.Background(), "Deploying rollbacks", 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range s.Results {
		ids = append(ids, r.ID)
	}
	if !slices.Equal(ids, []string{"both", "title", "body"}) {
		t.Fatalf("ranking %v", s.Results)
	}
	for i := 1; i < len(s.Results); i++ {
		if s.Results[i].Score > s.Results[i-1].Score {
			t.Fatal("not sorted by score")
		}
	}
	body := s.Results[2]
	if !strings.Contains(body.Snippet, "mention deploying once") || !strings.HasPrefix(body.Snippet, "…") || !strings.HasSuffix(body.Snippet, "…") || len(body.Snippet) > 260 {
		t.Fatalf("snippet %q", body.Snippet)
	}
	if s, _ := kb.Search(context.Background(), "Deploying", 1); len(s.Results) != 1 {
		t.Fatal("limit ignored")
	}
	if s, _ := kb.Search(context.Background(), "!!!", 1); len(s.Results) != 0 {
		t.Fatal("a query without words matches nothing")
	}
	if s, _ := kb.Search(context.Background(), "ÜBER", 1); len(s.Results) != 0 {
		t.Fatal(s)
	}
}

func TestKBSnippet(t *testing.T) {
	body := []byte("Short text about Ünïcode wörds and more.")
	if got := kbSnippet(body, []string{"wörds"}); got != string(body) {
		t.Fatalf("short body: %q", got)
	}
	long := []byte(strings.Repeat("aaa ", 100) + "needle in the haystack " + strings.Repeat("é ", 200))
	got := kbSnippet(long, []string{"needle"})
	if !strings.Contains(got, "needle in the haystack") || !strings.HasPrefix(got, "…") || !strings.HasSuffix(got, "…") {
		t.Fatalf("%q", got)
	}
	if !utf8Valid(got) {
		t.Fatalf("invalid UTF-8 snippet %q", got)
	}
	// The window with most distinct terms wins over the first match.
	long = []byte("alpha " + strings.Repeat("x ", 300) + "alpha beta gamma")
	if got := kbSnippet(long, []string{"alpha", "beta", "gamma"}); !strings.Contains(got, "alpha beta gamma") {
		t.Fatalf("%q", got)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\ufffd") == s }

func TestKBTokens(t *testing.T) {
	var toks []string
	kbTokens([]byte("Hello, World! max_bytes Ünïcode 2026-07 "+strings.Repeat("z", 65)), nil, func(tok []byte, s, e int) {
		toks = append(toks, string(tok))
	})
	if !slices.Equal(toks, []string{"hello", "world", "max", "bytes", "ünïcode", "2026", "07"}) {
		t.Fatalf("%q", toks)
	}
}

func TestKBIndexCompaction(t *testing.T) {
	x := newKBIndex()
	an := newKBAnalyzer()
	x.add("keep", 1, 1, an.analyze([]byte("# Keep\nsteady words")))
	for i := range 3000 {
		x.add(fmt.Sprintf("churn%d", i%3), 1, 1, an.analyze([]byte(fmt.Sprintf("round%d common", i))))
		x.maybeCompact()
	}
	if x.live != 4 || len(x.docs) > 1100 || len(x.byID) != 4 {
		t.Fatalf("live %d, docs %d: tombstones not compacted", x.live, len(x.docs))
	}
	hits := x.search([]string{"common", "steady", "round2999"}, 10)
	var ids []string
	for _, h := range hits {
		ids = append(ids, h.id)
	}
	if !slices.Equal(ids, []string{"churn2", "keep", "churn0", "churn1"}) || hits[1].title != "Keep" {
		t.Fatalf("after compaction: %+v", hits)
	}
	if h := x.search([]string{"round5"}, 10); len(h) != 0 {
		t.Fatalf("removed content still found: %+v", h)
	}
}

// TestKBConcurrentUse runs writes, searches and lists at once (for -race).
func TestKBConcurrentUse(t *testing.T) {
	kb, _ := openTestKB(t, "docs", sampleKB, KBOptions{RefreshInterval: time.Millisecond})
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 30 {
				id := fmt.Sprintf("w%d/c%d", w, i%5)
				if _, err := kb.Write(ctx, id, fmt.Sprintf("# C%d\nconcurrent word%d", i, i)); err != nil {
					t.Error(err)
				}
				if _, err := kb.Search(ctx, "concurrent binary", 5); err != nil {
					t.Error(err)
				}
				if _, err := kb.List(ctx, fmt.Sprintf("w%d/", w), "", 3); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	s, err := kb.Search(ctx, "concurrent", 50)
	if err != nil || len(s.Results) != 20 {
		t.Fatalf("%d results, %v", len(s.Results), err)
	}
}
