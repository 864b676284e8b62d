package mcpserver

import (
	"errors"
	"fmt"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/agents"
)

func kbMounts(t *testing.T, mode mount.PrefixMode, specs ...mount.Mount) []mount.Resolved {
	t.Helper()
	for i := range specs {
		specs[i].Kind = mount.KindKB
		specs[i].Path = "/kb/" + specs[i].Name
	}
	rs, err := mount.Resolve("agentctl", mode, specs)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func canonicals(tools []NamedTool) string {
	var names []string
	for _, t := range tools {
		names = append(names, t.Canonical+"="+t.Transport)
	}
	return strings.Join(names, " ")
}

func TestNameTools(t *testing.T) {
	suffixNaming := namings[agents.NamespacingSuffix]
	t.Run("two derived", func(t *testing.T) {
		tools, err := NameTools("agentctl", suffixNaming, kbMounts(t, mount.PrefixModeMountName, mount.Mount{Name: "docs"}, mount.Mount{Name: "notes"}))
		if err != nil {
			t.Fatal(err)
		}
		want := "ask_user_question_agentctl=ask_user_question docs__concept_list=docs__concept_list docs__concept_read=docs__concept_read docs__concept_search=docs__concept_search docs__concept_write=docs__concept_write get_instance_agentctl=get_instance notes__concept_list=notes__concept_list notes__concept_read=notes__concept_read notes__concept_search=notes__concept_search notes__concept_write=notes__concept_write report_progress_agentctl=report_progress"
		if got := canonicals(tools); got != want {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
		for _, tl := range tools {
			if tl.Mount == "docs" && (tl.PrefixOrigin != mount.OriginDerived || tl.Source != "kb docs") {
				t.Fatalf("%+v", tl)
			}
			if tl.Canonical == "docs__concept_read" && tl.ModelVisible != "docs__concept_read_agentctl" {
				t.Fatalf("model sees %q", tl.ModelVisible)
			}
		}
	})
	t.Run("single mount is bare, read-only has no write", func(t *testing.T) {
		ms := kbMounts(t, mount.PrefixModeMountName, mount.Mount{Name: "docs"})
		ms[0].ReadOnly = true
		tools, err := NameTools("agentctl", suffixNaming, ms)
		if err != nil {
			t.Fatal(err)
		}
		if got := canonicals(tools); !strings.Contains(got, "concept_read=concept_read ") || strings.Contains(got, "concept_write") {
			t.Fatalf("got %s", got)
		}
	})
	t.Run("mode off collides", func(t *testing.T) {
		_, err := NameTools("agentctl", suffixNaming, kbMounts(t, mount.PrefixModeOff, mount.Mount{Name: "a"}, mount.Mount{Name: "b"}))
		var ce *CollisionError
		if !errors.As(err, &ce) || ce.Name != "concept_list" || ce.First != "kb a" || ce.Second != "kb b" {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("the client renders two names the same", func(t *testing.T) {
		letters := agents.ToolNaming{Namespacing: agents.NamespacingNone, Template: "{tool}", MaxLength: 64, Charset: "^[a-z_]+$"}
		ms := kbMounts(t, mount.PrefixModeMountName, mount.Mount{Name: "a", ToolPrefix: "kb1"}, mount.Mount{Name: "b", ToolPrefix: "kb2"})
		tools, err := NameTools("agentctl", letters, ms)
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, tl := range tools {
			if tl.Canonical == "kb1__concept_read" {
				found = true
				// Also a charset problem: '1' is outside the charset.
				if tl.ModelVisible != "kb___concept_read" || len(tl.Problems) != 2 || !strings.Contains(tl.Problems[1], `the client shows kb2__concept_read as "kb___concept_read" too`) {
					t.Fatalf("%+v", tl)
				}
			}
		}
		if !found {
			t.Fatal("kb1__concept_read not planned")
		}
	})
}

func TestExpandPlaceholders(t *testing.T) {
	tools, err := NameTools("agentctl", namings[agents.NamespacingSuffix], kbMounts(t, mount.PrefixModeMountName, mount.Mount{Name: "docs"}, mount.Mount{Name: "notes"}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ExpandPlaceholders("skill.md", "Ask with {{tool:ask_user_question}}.\nRead {{tool:docs/concept_read}} or {{ tool:notes__concept_search }}.\n", tools)
	if err != nil {
		t.Fatal(err)
	}
	// Auggie's model sees the knowledge bases' tools with _agentctl after them.
	if want := "Ask with ask_user_question_agentctl.\nRead docs__concept_read_agentctl or notes__concept_search_agentctl.\n"; got != want {
		t.Fatalf("got %q", got)
	}
	for text, want := range map[string]string{
		"ok\n{{tool:nosuch}}":             "skill.md:2: unknown placeholder {{tool:nosuch}}: no such tool",
		"{{tool:wiki/concept_read}}":      `skill.md:1: unknown placeholder {{tool:wiki/concept_read}}: no mount "wiki" (mounts: docs, notes)`,
		"a\nb\n{{tool:docs/fetch}}":       `skill.md:3: unknown placeholder {{tool:docs/fetch}}: mount "docs" has no tool "fetch"`,
		"{{tool:concept_read}}":           `several mounts offer "concept_read"; write one of {{tool:docs/concept_read}}, {{tool:notes/concept_read}}`,
		"{{tool:docs/concept_read|wire}}": `skill.md:1: unknown placeholder {{tool:docs/concept_read|wire}}: unknown form "wire"; write {{tool:docs/concept_read}} for the name the model calls the tool by, or {{tool:docs/concept_read|model}} for the whole name the client shows its model`,
	} {
		if _, err := ExpandPlaceholders("skill.md", text, tools); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %s", text, err, want)
		}
	}
}

// TestExpandPlaceholdersForEveryClient pins the text for a suffix, a prefix
// and a none client: {{tool:NAME}} is the name the model calls: the
// canonical name of a built-in everywhere, a knowledge base's tool as Auggie
// shows it (with _agentctl after it), its canonical name elsewhere (the
// tail of what a prefix client shows); {{tool:NAME|model}} is all of what
// each client's model sees.
func TestExpandPlaceholdersForEveryClient(t *testing.T) {
	const text = "Ask with {{tool:ask_user_question}}, read with {{tool:docs/concept_read}}.\n" +
		"Your model calls {{ tool:ask_user_question | model }} and {{tool:docs__concept_read|model}}.\n"
	for style, want := range map[agents.Namespacing]string{
		agents.NamespacingSuffix: "Ask with ask_user_question_agentctl, read with docs__concept_read_agentctl.\n" +
			"Your model calls ask_user_question_agentctl and docs__concept_read_agentctl.\n",
		agents.NamespacingPrefix: "Ask with ask_user_question_agentctl, read with docs__concept_read.\n" +
			"Your model calls mcp__agentctl__ask_user_question_agentctl and mcp__agentctl__docs__concept_read.\n",
		agents.NamespacingNone: "Ask with ask_user_question_agentctl, read with docs__concept_read.\n" +
			"Your model calls ask_user_question_agentctl and docs__concept_read.\n",
	} {
		tools, err := NameTools("agentctl", namings[style], kbMounts(t, mount.PrefixModeMountName, mount.Mount{Name: "docs"}, mount.Mount{Name: "notes"}))
		if err != nil {
			t.Fatal(err)
		}
		got, err := ExpandPlaceholders("guide.md", text, tools)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s:\ngot  %q\nwant %q", style, got, want)
		}
	}
}

func TestRenderInstructions(t *testing.T) {
	ms := kbMounts(t, mount.PrefixModeMountName, mount.Mount{Name: "docs"}, mount.Mount{Name: "notes", ToolPrefix: "n"})
	naming := namings[agents.NamespacingSuffix]
	tools, err := NameTools("agentctl", naming, ms)
	if err != nil {
		t.Fatal(err)
	}
	out := RenderInstructions(InstructionsInput{InstanceID: "i1", Agent: "auggie", ServerName: "agentctl", Naming: naming, Mounts: ms, Tools: tools})
	for _, want := range []string{
		"# Tools of agentctl instance i1",
		"The names below are the ones your client (auggie) shows you.",
		"## Built-in tools\n\n- `ask_user_question_agentctl`: ask the person",
		"- `get_instance_agentctl`: describe this instance",
		"## Knowledge base \"docs\"\n\n- `docs__concept_list_agentctl`",
		"Its tools are prefixed `docs__` (derived).",
		"## Knowledge base \"notes\"",
		"- `n__concept_search_agentctl`: search the concepts",
		"Its tools are prefixed `n__` (explicit).",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("instructions lack %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "may show") || strings.Contains(out, "`docs__concept_read`") {
		t.Errorf("instructions name a tool as Auggie's model does not see it:\n%s", out)
	}
}

// TestInstructionsAtInitialize pins the text a client gets at initialize
// for a suffix, a prefix and a none client: the built-ins by their
// canonical names, and how the client shows them.
func TestInstructionsAtInitialize(t *testing.T) {
	const names = "agentctl endpoint for instance i1 (a). Ask the person questions with ask_user_question_agentctl, " +
		"report progress with report_progress_agentctl, and describe the instance and its tools with get_instance_agentctl."
	for style, note := range map[agents.Namespacing]string{
		agents.NamespacingSuffix: " These names are the ones your client (a) shows you.",
		agents.NamespacingPrefix: " Your client (a) shows you each of these names with mcp__agentctl__ in front, such as mcp__agentctl__get_instance_agentctl.",
		agents.NamespacingNone:   " These names are the ones your client (a) shows you.",
	} {
		cfg := Config{Instance: Instance{ID: "i1", Agent: "a"}, ServerName: "agentctl", Naming: namings[style]}
		if got := instructions(cfg, nil); got != names+note {
			t.Errorf("%s:\ngot  %q\nwant %q", style, got, names+note)
		}
	}
}

// TestInstructionsNameWhatPlanToolsNames: the instructions name the
// built-ins as NameTools does (the canonical name; where the client's
// sanitising changes it, as changed), also for a server name that makes
// their names invalid (none named).
func TestInstructionsNameWhatPlanToolsNames(t *testing.T) {
	for _, server := range []string{"agentctl", "my.server-2", "has space", strings.Repeat("s", 120), ""} {
		cfg := Config{Instance: Instance{ID: "i1", Agent: "a"}, ServerName: server, Naming: namings[agents.NamespacingPrefix]}
		name := map[string]string{}
		if tools, err := NameTools(server, cfg.Naming, nil); err == nil {
			for _, t := range tools {
				name[t.Base] = t.Prompt
			}
		}
		if server == "agentctl" && name[BaseGetInstance] != "get_instance_agentctl" || server == "my.server-2" && name[BaseGetInstance] != "get_instance_my_server-2" {
			t.Errorf("server %q: get_instance is named %q", server, name[BaseGetInstance])
		}
		want := fmt.Sprintf("agentctl endpoint for instance i1 (a). Ask the person questions with %s, report progress with %s, and describe the instance and its tools with %s.",
			name[BaseAskUserQuestion], name[BaseReportProgress], name[BaseGetInstance])
		if got := instructions(cfg, nil); !strings.HasPrefix(got, want) {
			t.Errorf("server %q:\ngot  %q\nwant %q", server, got, want)
		}
	}
}
