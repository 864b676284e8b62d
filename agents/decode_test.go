package agents

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goodTOML = `id = "mine"
name = "My agent"
command = ["mine"]

[mcp]
config_format = "mcp-servers-json"

[capabilities.tool_names]
namespacing = "prefix"
template = "{server}__{tool}"
`

func TestDecodeGood(t *testing.T) {
	d, err := Decode("mine.toml", []byte(goodTOML))
	if err != nil {
		t.Fatal(err)
	}
	tn := d.Capabilities.ToolNames
	if tn.Namespacing != NamespacingPrefix || tn.MaxLength != DefaultMaxLength || tn.Charset != DefaultCharset {
		t.Fatalf("defaults not applied: %+v", tn)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, toml, want string
	}{
		{"near-miss key", strings.Replace(goodTOML, "namespacing =", "namespaceing =", 1),
			`mine.toml:9: key "capabilities.tool_names.namespaceing": unknown key (did you mean "namespacing"?)`},
		{"unknown key far from any", goodTOML + "colour = \"red\"\n",
			`mine.toml:11: key "capabilities.tool_names.colour": unknown key`},
		{"unknown top-level key", "flavour = 1\n" + goodTOML,
			`mine.toml:1: key "flavour": unknown key`},
		{"bad namespacing", strings.Replace(goodTOML, `"prefix"`, `"prefixed"`, 1),
			`mine.toml:9: key "capabilities.tool_names.namespacing": invalid namespacing "prefixed" (want one of none, prefix, suffix)`},
		{"wrong type", strings.Replace(goodTOML, `template = "{server}__{tool}"`, "template = \"{tool}\"\nmax_length = \"long\"", 1),
			`mine.toml:11: key "capabilities.tool_names.max_length": incompatible types`},
		{"template without tool", strings.Replace(goodTOML, `"{server}__{tool}"`, `"{server}"`, 1),
			`mine.toml:10: key "capabilities.tool_names.template": "{server}" has no {tool} placeholder`},
		{"unknown placeholder", strings.Replace(goodTOML, `"{server}__{tool}"`, `"{srv}__{tool}"`, 1),
			`unknown placeholder`},
		{"bad format", strings.Replace(goodTOML, `"mcp-servers-json"`, `"xml"`, 1),
			`mine.toml:6: key "mcp.config_format": unknown format "xml"`},
		{"missing id", strings.Replace(goodTOML, `id = "mine"`, ``, 1),
			`mine.toml: key "id": missing`},
		{"syntax", "id = \n", `mine.toml:1:`},
		{"bad charset", goodTOML + "charset = \"[\"\n", `key "capabilities.tool_names.charset": not a regular expression`},
		{"tool twice", strings.Replace(goodTOML, `"{server}__{tool}"`, `"{tool}__{tool}"`, 1),
			`mine.toml:10: key "capabilities.tool_names.template": "{tool}__{tool}" has {tool} 2 times`},
		{"max_length below the built-ins", goodTOML + "max_length = 20\n",
			`mine.toml:11: key "capabilities.tool_names.max_length": 20 is shorter than the built-in tool name "agentctl__ask_user_question_agentctl" (36 characters, rendered from template "{server}__{tool}" for server "agentctl"); raise it to at least 36 or shorten the template`},
		{"default max_length below the built-ins", strings.Replace(goodTOML, `"{server}__{tool}"`, `"a_very_long_prefix_that_every_tool_gets__{tool}"`, 1),
			`mine.toml:8: key "capabilities.tool_names.max_length": 64 is shorter than the built-in tool name "a_very_long_prefix_that_every_tool_gets__ask_user_question_agentctl" (67 characters`},
		{"suffix one short", strings.NewReplacer(`"prefix"`, `"suffix"`, `"{server}__{tool}"`, `"{tool}_{server}"`).Replace(goodTOML) + "max_length = 25\n",
			`mine.toml:11: key "capabilities.tool_names.max_length": 25 is shorter than the built-in tool name "ask_user_question_agentctl"`},
		{"charset without underscore", goodTOML + "charset = \"^[a-z]+$\"\n",
			`mine.toml:11: key "capabilities.tool_names.charset": ^[a-z]+$ does not accept the built-in tool name "agentctl__ask_user_question_agentctl"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode("mine.toml", []byte(tt.toml))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error\n  %v\nwant it to contain\n  %s", err, tt.want)
			}
		})
	}
}

// TestDecodeBuiltinNamesFit: definitions the built-in names just fit load.
func TestDecodeBuiltinNamesFit(t *testing.T) {
	for name, toml := range map[string]string{
		// Auggie-like: the endpoint sends "ask_user_question", the client
		// appends "_agentctl": 26 characters.
		"suffix exactly long enough": strings.NewReplacer(`"prefix"`, `"suffix"`, `"{server}__{tool}"`, `"{tool}_{server}"`).Replace(goodTOML) + "max_length = 26\n",
		"prefix exactly long enough": goodTOML + "max_length = 36\n",
		// '-' is sanitised to '_', which the charset accepts.
		"charset the client sanitises into": strings.Replace(goodTOML, `"{server}__{tool}"`, `"{server}-{tool}"`, 1) + "charset = \"^[a-z_]+$\"\n",
	} {
		if _, err := Decode("mine.toml", []byte(toml)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestCatalogHasRequiredAgents(t *testing.T) {
	c, err := Load(LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		ns       Namespacing
		template string
	}{
		"auggie":         {NamespacingSuffix, "{tool}_{server}"},
		"claude-code":    {NamespacingPrefix, "mcp__{server}__{tool}"},
		"codex":          {NamespacingPrefix, "mcp__{server}/{tool}"},
		"gemini":         {NamespacingPrefix, "mcp_{server}_{tool}"},
		"qwen-code":      {NamespacingPrefix, "mcp__{server}__{tool}"},
		"opencode":       {NamespacingPrefix, "{server}_{tool}"},
		"goose":          {NamespacingPrefix, "{server}__{tool}"},
		"vscode-copilot": {NamespacingPrefix, "mcp_{server}_{tool}"},
		"kiro":           {NamespacingNone, "{tool}"},
		"cursor":         {NamespacingNone, "{tool}"},
	}
	for id, w := range want {
		d, err := c.Lookup(id)
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		tn := d.Capabilities.ToolNames
		if tn.Namespacing != w.ns || tn.Template != w.template {
			t.Errorf("%s: got %s %q, want %s %q", id, tn.Namespacing, tn.Template, w.ns, w.template)
		}
		if d.Source != SourceCatalog {
			t.Errorf("%s: source %q", id, d.Source)
		}
	}
	if d, _ := c.Lookup("vscode-copilot"); d.Capabilities.ToolNames.ServerMaxLength != 13 {
		t.Errorf("vscode-copilot cuts the server to 13 characters")
	}
	if d, _ := c.Lookup("cursor"); d.Capabilities.ToolNames.CombinedMaxLength != 60 {
		t.Errorf("cursor drops a tool whose server and tool names are over 60 characters together")
	}
	if d, _ := c.Lookup("gemini"); !d.MCP.Trust {
		t.Errorf("gemini must trust the server by default for headless runs")
	}
}

func TestUserDefinitions(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("mine.toml", goodTOML)
	// Override a catalog id.
	write("auggie.toml", strings.NewReplacer(`"mine"`, `"auggie"`, `"My agent"`, `"My Auggie"`).Replace(goodTOML))
	// A broken override of codex, and a broken file whose id cannot be read.
	write("codex-override.toml", strings.Replace(strings.Replace(goodTOML, `"mine"`, `"codex"`, 1), "namespacing", "namespaceing", 1))
	write("zz-garbage.toml", "id = = =\n")

	c, err := Load(LoadOptions{UserDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := c.Lookup("mine"); err != nil || d.Source != filepath.Join(dir, "mine.toml") {
		t.Fatalf("new id: %v %+v", err, d)
	}
	if d, err := c.Lookup("auggie"); err != nil || d.Name != "My Auggie" || d.Capabilities.ToolNames.Namespacing != NamespacingPrefix {
		t.Fatalf("override: %v %+v", err, d)
	}
	_, err = c.Lookup("codex")
	var fp *FileProblem
	if !errors.As(err, &fp) || !strings.Contains(err.Error(), "codex-override.toml:9") {
		t.Fatalf("broken override must fail lookups of its id with its error, got %v", err)
	}
	if _, err := c.Lookup("zz-garbage"); err == nil {
		t.Fatal("broken file with unreadable id must claim its base name")
	}
	// The rest is untouched.
	if _, err := c.Lookup("claude-code"); err != nil {
		t.Fatal(err)
	}
	if got := len(c.Problems()); got != 2 {
		t.Fatalf("problems: %d", got)
	}
	for _, d := range c.Definitions() {
		if d.ID == "codex" {
			t.Fatal("an id whose override is broken must not be listed from the catalog as if nothing happened")
		}
	}
	_, err = c.Lookup("nosuch")
	var ue *UnknownAgentError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnknownAgent) || !strings.Contains(err.Error(), "claude-code") {
		t.Fatalf("unknown id: %v", err)
	}
}

func TestDuplicateUserID(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a.toml", "b.toml"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(goodTOML), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := Load(LoadOptions{UserDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lookup("mine"); err == nil || !strings.Contains(err.Error(), "already defined by") {
		t.Fatalf("got %v", err)
	}
}

func TestRenderProblems(t *testing.T) {
	n := ToolNaming{Template: "{tool}", MaxLength: 64, Charset: "^[A-Za-z][A-Za-z0-9_]*$"}
	r := RenderModelName(n, "s", "9lives")
	if len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "charset") {
		t.Fatalf("%+v", r)
	}
	r = RenderModelName(n, "s", "a.b-c")
	if r.Name != "a_b_c" || len(r.Problems) != 0 {
		t.Fatalf("%+v", r)
	}
}

func TestApplyTemplate(t *testing.T) {
	for _, tt := range []struct{ tmpl, want string }{
		{"{tool}_{server}", "fetch_agentctl"},
		{"mcp__{server}__{tool}", "mcp__agentctl__fetch"},
		{"{server}___{tool}", "agentctl___fetch"},
		{"", "fetch"},
		{"x{y}{tool}{", "x{y}fetch{"},
	} {
		if got := ApplyTemplate(ToolNaming{Template: tt.tmpl}, "agentctl", "fetch"); got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.tmpl, got, tt.want)
		}
	}
	// VS Code's cut of the server part.
	if got := ApplyTemplate(ToolNaming{Template: "mcp_{server}_{tool}", ServerMaxLength: 13}, "agentctl-frontend", "fetch"); got != "mcp_agentctl-fron_fetch" {
		t.Errorf("got %q", got)
	}
}

func TestOutsideCharset(t *testing.T) {
	if got := string(OutsideCharset("^[A-Za-z][A-Za-z0-9_]*$", "get-page.v2-x")); got != "-." {
		t.Errorf("got %q", got)
	}
	if got := OutsideCharset(DefaultCharset, "get-page"); got != nil {
		t.Errorf("got %q", got)
	}
	if MatchesCharset("^[a-z]+$", "a1") || !MatchesCharset("^[a-z]+$", "ab") {
		t.Error("MatchesCharset")
	}
}
