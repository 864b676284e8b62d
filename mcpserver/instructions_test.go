package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// catalogNaming is the tool naming of a catalog client.
func catalogNaming(t *testing.T, id string) agents.ToolNaming {
	t.Helper()
	cat, err := agents.Load(agents.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	def, err := cat.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	return def.Capabilities.ToolNames
}

// TestPromptNamesForEveryClient: on every catalog client the built-ins keep
// their canonical names (the seed decision), and a knowledge base's tool is
// named as the model calls it: with Auggie's _agentctl after it; its
// canonical name elsewhere (all of what a none client shows, the tail of
// what a prefix client shows, the function's name in Codex's namespace).
func TestPromptNamesForEveryClient(t *testing.T) {
	cat, err := agents.Load(agents.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ms := kbMounts(t, mount.PrefixModeMountName, mount.Mount{Name: "docs"}, mount.Mount{Name: "notes"})
	for _, def := range cat.Definitions() {
		tools, err := NameTools("agentctl", def.Capabilities.ToolNames, ms)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools {
			want := tl.Canonical
			if def.ID == "auggie" && tl.Mount != "" {
				want = tl.Canonical + "_agentctl"
			}
			if tl.Prompt != want {
				t.Errorf("%s: %s is named %q in prompts (model sees %q), want %q", def.ID, tl.Canonical, tl.Prompt, tl.ModelVisible, want)
			}
		}
	}
}

// TestGeneratedInstructionsLintClean: for every catalog client, the
// instructions.md agentctl writes for two knowledge bases and an external
// server names each tool as the model calls it, says how the client shows
// the names, and gives LintTexts nothing to report.
func TestGeneratedInstructionsLintClean(t *testing.T) {
	cat, err := agents.Load(agents.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	specs := []mount.Mount{{Kind: mount.KindKB, Name: "docs"}, {Kind: mount.KindKB, Name: "notes"}, {Name: "web"}}
	for _, def := range cat.Definitions() {
		naming := def.Capabilities.ToolNames
		d := describe(t, "agentctl", naming, mount.PrefixModeMountName, append([]mount.Mount(nil), specs...), map[string][]string{"web": {"fetch", "ask_user_question"}})
		rs, err := mount.Resolve("agentctl", mount.PrefixModeMountName, []mount.Mount{
			{Kind: mount.KindKB, Name: "docs", Path: "/kb/docs"}, {Kind: mount.KindKB, Name: "notes", Path: "/kb/notes"}, {Kind: mount.KindServer, Name: "web", Command: "srv"}})
		if err != nil {
			t.Fatal(err)
		}
		tools, err := NameTools("agentctl", naming, rs)
		if err != nil {
			t.Fatal(err)
		}
		text := RenderInstructions(InstructionsInput{InstanceID: "i1", Agent: def.ID, ServerName: "agentctl", Naming: naming, Mounts: rs, Tools: tools})
		if fs := LintTexts(d.Tools, []Text{{File: InstructionsFile, Body: text}}); len(fs) != 0 {
			t.Errorf("%s: %+v\n%s", def.ID, fs, text)
		}
		for _, tl := range tools {
			if !strings.Contains(text, "- `"+tl.Prompt+"`: ") {
				t.Errorf("%s: instructions do not list %q:\n%s", def.ID, tl.Prompt, text)
			}
		}
		if strings.Contains(text, "may show") || !strings.Contains(text, "("+def.ID+")") {
			t.Errorf("%s: no note on how the client shows the names:\n%s", def.ID, text)
		}
	}
}

// TestInstructionsGolden pins instructions.md for a suffix (Auggie), a
// prefix (Claude Code) and a namespace client (Codex) with two knowledge
// bases and an external server.
func TestInstructionsGolden(t *testing.T) {
	rs, err := mount.Resolve("agentctl", mount.PrefixModeMountName, []mount.Mount{
		{Kind: mount.KindKB, Name: "docs", Path: "/kb/docs"}, {Kind: mount.KindKB, Name: "notes", Path: "/kb/notes", ReadOnly: true}, {Kind: mount.KindServer, Name: "web", Command: "srv"}})
	if err != nil {
		t.Fatal(err)
	}
	head := "# Tools of agentctl instance i1\n\nThis instance (%[1]s) reaches agentctl's tools through the MCP server \"agentctl\". %[2]s\n\n" +
		"## Built-in tools\n\n" +
		"- `ask_user_question_agentctl`: ask the person a question and wait for the answer (it may take minutes; if none comes, continue with your best judgement)\n" +
		"- `get_instance_agentctl`: describe this instance: its workspace, mounts and tool names\n" +
		"- `report_progress_agentctl`: record what you are doing: a message, a status (running, blocked, done, failed) and an optional percent\n\n" +
		"## Knowledge base \"docs\"\n\n" +
		"- `docs__concept_list%[3]s`: list the concepts (Markdown documents) by id, optionally under an id prefix\n" +
		"- `docs__concept_read%[3]s`: read one concept by id\n" +
		"- `docs__concept_search%[3]s`: search the concepts; ranked ids, titles and snippets\n" +
		"- `docs__concept_write%[3]s`: create or replace a concept\n\n" +
		"Its tools are prefixed `docs__` (derived). Concept ids are paths without `.md`, such as `guides/setup`; find them with the list or search tool.\n\n" +
		"## Knowledge base \"notes\"\n\n" +
		"- `notes__concept_list%[3]s`: list the concepts (Markdown documents) by id, optionally under an id prefix\n" +
		"- `notes__concept_read%[3]s`: read one concept by id\n" +
		"- `notes__concept_search%[3]s`: search the concepts; ranked ids, titles and snippets\n\n" +
		"Its tools are prefixed `notes__` (derived). Concept ids are paths without `.md`, such as `guides/setup`; find them with the list or search tool. It is read-only.\n\n" +
		"## MCP server \"web\"\n\n" +
		"Its tools are prefixed `web__` (derived). They are listed once the server is connected, as `web__{tool}%[3]s`.\n"
	for _, c := range []struct{ agent, note, suffix string }{
		{"auggie", "The names below are the ones your client (auggie) shows you.", "_agentctl"},
		{"claude-code", "Your client (claude-code) shows you each of the names below with `mcp__agentctl__` in front, such as `mcp__agentctl__get_instance_agentctl`.", ""},
		{"codex", "Your client (codex) gives you these tools as functions in the namespace `mcp__agentctl`; the names below are their names in it.", ""},
	} {
		naming := catalogNaming(t, c.agent)
		tools, err := NameTools("agentctl", naming, rs)
		if err != nil {
			t.Fatal(err)
		}
		got := RenderInstructions(InstructionsInput{InstanceID: "i1", Agent: c.agent, ServerName: "agentctl", Naming: naming, Mounts: rs, Tools: tools})
		if want := fmt.Sprintf(head, c.agent, c.note, c.suffix); got != want {
			t.Errorf("%s:\n--- got\n%s\n--- want\n%s", c.agent, got, want)
		}
	}
}

// TestInstructionsAtInitializeNameMountTools: the initialize instructions
// say how each mount's tools are named for the client, and how it shows
// the names.
func TestInstructionsAtInitializeNameMountTools(t *testing.T) {
	rs, err := mount.Resolve("agentctl", mount.PrefixModeMountName, []mount.Mount{
		{Kind: mount.KindKB, Name: "docs", Path: "/kb/docs"}, {Kind: mount.KindKB, Name: "notes", Path: "/kb/notes"}, {Kind: mount.KindServer, Name: "web", Command: "srv"}})
	if err != nil {
		t.Fatal(err)
	}
	const builtins = "agentctl endpoint for instance i1 (%s). Ask the person questions with ask_user_question_agentctl, " +
		"report progress with report_progress_agentctl, and describe the instance and its tools with get_instance_agentctl."
	for agent, want := range map[string]string{
		"auggie": ` The tools of knowledge base "docs" are named docs__{tool}_agentctl; of knowledge base "notes", notes__{tool}_agentctl; of MCP server "web", web__{tool}_agentctl.` +
			" These names are the ones your client (auggie) shows you.",
		"claude-code": ` The tools of knowledge base "docs" are named docs__{tool}; of knowledge base "notes", notes__{tool}; of MCP server "web", web__{tool}.` +
			" Your client (claude-code) shows you each of these names with mcp__agentctl__ in front, such as mcp__agentctl__get_instance_agentctl.",
		"codex": ` The tools of knowledge base "docs" are named docs__{tool}; of knowledge base "notes", notes__{tool}; of MCP server "web", web__{tool}.` +
			" Your client (codex) gives you these tools as functions in the namespace mcp__agentctl; these names are their names in it.",
	} {
		cfg := Config{Instance: Instance{ID: "i1", Agent: agent}, ServerName: "agentctl", Naming: catalogNaming(t, agent)}
		if got, want := instructions(cfg, rs), strings.Replace(builtins, "%s", agent, 1)+want; got != want {
			t.Errorf("%s:\ngot  %q\nwant %q", agent, got, want)
		}
	}
}

func TestMountToolPattern(t *testing.T) {
	two := kbMounts(t, mount.PrefixModeMountName, mount.Mount{Name: "docs"}, mount.Mount{Name: "notes"})
	one := kbMounts(t, mount.PrefixModeMountName, mount.Mount{Name: "docs"})
	for _, c := range []struct {
		agent string
		m     mount.Resolved
		want  string
	}{
		{"auggie", two[0], "docs__{tool}_agentctl"},
		{"auggie", one[0], "{tool}_agentctl"},
		{"claude-code", two[0], "docs__{tool}"},
		{"codex", two[1], "notes__{tool}"},
		{"kiro", one[0], "{tool}"},
	} {
		if got := MountToolPattern("agentctl", catalogNaming(t, c.agent), c.m); got != c.want {
			t.Errorf("%s %s: got %q, want %q", c.agent, c.m.Name, got, c.want)
		}
	}
}

// TestLintTexts: a text naming a tool under a name the model does not see
// is a warning naming the line and the way out; the names the model calls
// and sees, prose, and words in no tool's names are not.
func TestLintTexts(t *testing.T) {
	specs := func() []mount.Mount {
		return []mount.Mount{{Kind: mount.KindKB, Name: "docs"}, {Kind: mount.KindKB, Name: "notes"}, {Name: "web"}}
	}
	web := map[string][]string{"web": {"fetch"}}
	text := "Ask with ask_user_question_agentctl; read with docs__concept_read_agentctl.\n" + // 1: right on Auggie
		"Fetch the page and echo it.\n" + // 2: prose
		"Read `docs__concept_read` and notes__concept_search.\n" + // 3: canonical names
		"```\n" +
		"fetch\n" + // 5: a bare tool name in a fenced block
		"```\n" +
		"See `guides/setup` and instructions.md; docs__concept_read again.\n" // 7
	d := describe(t, "agentctl", catalogNaming(t, "auggie"), mount.PrefixModeMountName, specs(), web)
	fs := LintTexts(d.Tools, []Text{{File: "skills/guide.md", Body: text, Template: "templates/skills/guide.md"}})
	var got []string
	for _, f := range fs {
		if f.Severity != SeverityWarning || f.Source != "skills/guide.md" {
			t.Errorf("%+v", f)
		}
		got = append(got, f.Code+" "+f.Tool+": "+f.Problem+" ("+f.Fix+")")
	}
	want := []string{
		`unseen-name docs__concept_read: lines 3 and 7 names "docs__concept_read", but the model sees that tool (kb docs) as "docs__concept_read_agentctl" ` +
			`(write {{tool:docs/concept_read}} ("docs__concept_read_agentctl" for this client) in the template templates/skills/guide.md, then re-create the instance with it)`,
		`unseen-name notes__concept_search: line 3 names "notes__concept_search", but the model sees that tool (kb notes) as "notes__concept_search_agentctl" ` +
			`(write {{tool:notes/concept_search}} ("notes__concept_search_agentctl" for this client) in the template templates/skills/guide.md, then re-create the instance with it)`,
		`unseen-name web__fetch: line 5 names "fetch", but the model sees that tool (mcp web) as "web__fetch_agentctl" ` +
			`(write {{tool:web/fetch}} ("web__fetch_agentctl" for this client) in the template templates/skills/guide.md, then re-create the instance with it)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("auggie:\ngot\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The same text on Claude Code: the canonical names are the tails of
	// what its model sees; only the bare fetch is wrong.
	d = describe(t, "agentctl", catalogNaming(t, "claude-code"), mount.PrefixModeMountName, specs(), web)
	fs = LintTexts(d.Tools, []Text{{File: InstructionsFile, Body: text}})
	if len(fs) != 1 || fs[0].Tool != "web__fetch" {
		t.Fatalf("claude-code: %+v", fs)
	}
	wantIn(t, "problem", fs[0].Problem, `line 5 names "fetch", but the model sees that tool (mcp web) as "mcp__agentctl__web__fetch", which instructions give as "web__fetch"`)
	wantIn(t, "fix", fs[0].Fix, `re-create the instance to have instructions.md written again (the name to give is "web__fetch")`)

	// Codex: the function's name, and all of what it shows, are right.
	d = describe(t, "agentctl", catalogNaming(t, "codex"), mount.PrefixModeMountName, specs(), web)
	if fs := LintTexts(d.Tools, []Text{{File: InstructionsFile, Body: "Call `docs__concept_read` (mcp__agentctl/docs__concept_read), then web__fetch.\n"}}); len(fs) != 0 {
		t.Fatalf("codex: %+v", fs)
	}
	// A built-in's base name is no name any client shows.
	if fs := LintTexts(d.Tools, []Text{{File: InstructionsFile, Body: "Use the ask_user_question tool.\n"}}); len(fs) != 1 || fs[0].Tool != "ask_user_question_agentctl" {
		t.Fatalf("codex, base name: %+v", fs)
	}
}

// TestGetInstanceNamesToolsAsTheModelSeesThem: get_instance gives each
// tool the name the model calls it by, each mount's pattern, and how the
// client shows the names.
func TestGetInstanceNamesToolsAsTheModelSeesThem(t *testing.T) {
	for _, c := range []struct {
		agent, kbName, pattern, note string
	}{
		{"auggie", "docs__concept_read_agentctl", "docs__{tool}_agentctl", "The tools' names are the ones your client (auggie) shows you."},
		{"claude-code", "docs__concept_read", "docs__{tool}", "Your client (claude-code) shows you each of the tools' names with mcp__agentctl__ in front, such as mcp__agentctl__get_instance_agentctl."},
		{"codex", "docs__concept_read", "docs__{tool}", "Your client (codex) gives you these tools as functions in the namespace mcp__agentctl; the tools' names are their names in it."},
	} {
		cfg := testConfig(agents.NamespacingSuffix, newFakeStore())
		cfg.Instance.Agent, cfg.Naming = c.agent, catalogNaming(t, c.agent)
		cfg.Mounts = []mount.Mount{{Kind: mount.KindKB, Name: "docs", Path: t.TempDir()}, {Kind: mount.KindKB, Name: "notes", Path: t.TempDir()}}
		_, cs := connect(t, cfg, nil)
		get := PresentToolName(mustBuiltins(t), cfg.Naming.Namespacing, "agentctl", "get_instance_agentctl")
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: get, Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", c.agent, err, res)
		}
		var out InstanceOutput
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		if out.NamingNote != c.note {
			t.Errorf("%s: naming_note %q, want %q", c.agent, out.NamingNote, c.note)
		}
		if len(out.Mounts) != 2 || out.Mounts[0].ToolNames != c.pattern {
			t.Errorf("%s: mounts %+v, want docs's tool_names %q", c.agent, out.Mounts, c.pattern)
		}
		names := map[string]string{}
		for _, tl := range out.Tools {
			names[tl.Canonical] = tl.Name
		}
		if names["docs__concept_read"] != c.kbName || names["ask_user_question_agentctl"] != "ask_user_question_agentctl" {
			t.Errorf("%s: names %v", c.agent, names)
		}
	}
}

func mustBuiltins(t *testing.T) *Registry {
	t.Helper()
	reg, err := BuiltinRegistry("agentctl")
	if err != nil {
		t.Fatal(err)
	}
	return reg
}
