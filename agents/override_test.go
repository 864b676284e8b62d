package agents

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// loadOne writes body as the only user definition and looks id up.
func loadOne(t *testing.T, body, id string) (*Definition, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "def.toml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(LoadOptions{UserDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return c.Lookup(id)
}

// An override of a catalog id changes only what it sets: run.program
// alone (what `instance run` tells a user whose client is elsewhere)
// keeps the rest of the recipe, the name and the capabilities. Before,
// the file had to repeat name and capabilities, and its [run] replaced the
// catalog's whole: Claude Code then ran without --mcp-config, that is
// without the endpoint, and the run was recorded done.
func TestOverrideProgramAlone(t *testing.T) {
	d, err := loadOne(t, "id = \"claude-code\"\n[run]\nprogram = \"/opt/claude/bin/claude\"\n", "claude-code")
	if err != nil {
		t.Fatal(err)
	}
	cat := catalogDefinition("claude-code")
	if d.ProgramOrDefault() != "/opt/claude/bin/claude" || d.Name != cat.Name ||
		strings.Join(d.Run.ConfigArgs, " ") != "--mcp-config {config} --strict-mcp-config" ||
		strings.Join(d.Run.Unattended, " ") != "--allowedTools mcp__{server}" || d.Run.ConfigEnv["MCP_TOOL_TIMEOUT"] == "" ||
		d.Capabilities != cat.Capabilities || d.MCP.File != cat.MCP.File {
		t.Fatalf("override of run.program lost the rest: %+v", d)
	}
	if cat.Run.Program != "" || catalogDefinition("claude-code").ProgramOrDefault() != "claude" {
		t.Fatal("the override changed the catalog's own definition")
	}
	// A table of the file merges key by key; its lists replace.
	d, err = loadOne(t, "id = \"claude-code\"\n[run]\nheadless = [\"--print\", \"{prompt}\"]\n[run.config_env]\nEXTRA = \"1\"\n", "claude-code")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(d.Run.Headless, " ") != "--print {prompt}" || d.Run.ConfigEnv["EXTRA"] != "1" || d.Run.ConfigEnv["MCP_TOOL_TIMEOUT"] == "" {
		t.Fatalf("run: %+v", d.Run)
	}
	if _, ok := catalogDefinition("claude-code").Run.ConfigEnv["EXTRA"]; ok {
		t.Fatal("the override's environment leaked into the catalog's map")
	}
}

// A [capabilities.tool_names] of an override is a naming scheme of its
// own: the catalog's separator or limits do not stay behind.
func TestOverrideToolNamesWhole(t *testing.T) {
	d, err := loadOne(t, "id = \"codex\"\n[capabilities.tool_names]\nnamespacing = \"none\"\ntemplate = \"{tool}\"\n", "codex")
	if err != nil {
		t.Fatal(err)
	}
	if tn := d.Capabilities.ToolNames; tn.PartSeparator != "" || tn.Template != "{tool}" || tn.MaxLength != DefaultMaxLength {
		t.Fatalf("tool_names: %+v", tn)
	}
	if d.Capabilities.Questions != catalogDefinition("codex").Capabilities.Questions {
		t.Fatalf("questions lost: %+v", d.Capabilities.Questions)
	}
}

// Gemini's trust and tool-timeout limit come with its shape: to an
// override that sets capabilities only, and to a new id that names the
// format alone. Without trust, Gemini's and Qwen's headless runs ignore
// the server's tools; without the limit a long question timeout is
// written past Node's 2^31-1 ms, which fires at once.
func TestFormatBringsTrustAndLimit(t *testing.T) {
	caps := "[capabilities]\ntools_list_changed = true\n[capabilities.tool_names]\nnamespacing = \"prefix\"\ntemplate = \"mcp_{server}_{tool}\"\n"
	for _, c := range []struct{ name, body, id string }{
		{"override", "id = \"gemini\"\nname = \"G\"\n" + caps, "gemini"},
		{"format", "id = \"my-gemini\"\nname = \"G\"\n[mcp]\nconfig_format = \"gemini\"\n" + caps, "my-gemini"},
	} {
		d, err := loadOne(t, c.body, c.id)
		if err != nil {
			t.Fatal(err)
		}
		if !d.MCP.Trust || time.Duration(d.MCP.ToolTimeoutMax) != time.Duration(catalogDefinition("gemini").MCP.ToolTimeoutMax) {
			t.Errorf("%s: trust %v, tool_timeout_max %v", c.name, d.MCP.Trust, d.MCP.ToolTimeoutMax)
		}
	}
	d, err := loadOne(t, "id = \"my-gemini\"\nname = \"G\"\n[mcp]\nconfig_format = \"gemini\"\ntrust = false\n"+caps, "my-gemini")
	if err != nil || d.MCP.Trust {
		t.Fatalf("trust = false in the file must stand: %v %+v", err, d)
	}
}

// A user file that names no id is no override of the catalog id its file
// name spells.
func TestOverrideNeedsID(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "auggie.toml"), []byte("[run]\nprogram = \"/x\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(LoadOptions{UserDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lookup("auggie"); err == nil || !strings.Contains(err.Error(), `key "id": missing`) {
		t.Fatalf("got %v", err)
	}
}

func TestDecodeDefinitionChecks(t *testing.T) {
	const head = "id = \"x\"\nname = \"X\"\n[capabilities.tool_names]\nnamespacing = \"none\"\ntemplate = \"{tool}\"\n"
	entry := "entry = { command = \"{command}\", args = \"{args}\" }\n"
	for _, c := range []struct{ name, body, want string }{
		{"yaml connect without {server}", head + "[mcp]\nfile = \"gy/config.yaml\"\nkey = \"extensions\"\n" + entry + "connect = { workspace = \".gy/config.yaml\" }\n",
			`key "mcp.connect.workspace": ".gy/config.yaml": connect writes a YAML file whole, one server to a file, so its name holds {server}`},
		{"entry without command", head + "[mcp]\nfile = \"m.json\"\nentry = { type = \"stdio\" }\n",
			`key "mcp.entry": the template has no {command}, so the client could not reach the endpoint; it needs {command} and {args}`},
		{"remote entry without headers", head + "[mcp]\nfile = \"m.json\"\n" + entry + "remote_entry = { url = \"{url}\" }\n",
			`key "mcp.remote_entry": the template has no {headers}`},
		{"file under ~", head + "[mcp]\nfile = \"~/.tl/mcp.json\"\n" + entry,
			`key "mcp.file": "~/.tl/mcp.json": mcp.file names the file written in the instance's own directory`},
		{"nan", head + "[mcp]\nfile = \"m.json\"\nentry = { command = \"{command}\", args = \"{args}\", t = nan }\n",
			`key "mcp.entry.t": NaN cannot be written`},
		{"date", head + "[mcp]\nfile = \"m.yaml\"\nentry = { command = \"{command}\", args = \"{args}\", t = 1979-05-27 }\n",
			`key "mcp.entry.t": a `},
		{"id all", strings.Replace(head, `"x"`, `"all"`, 1) + "[mcp]\nconfig_format = \"auggie\"\n",
			`key "id": "all" is taken`},
		{"recipe without the endpoint", head + "[mcp]\nconfig_format = \"auggie\"\n[run]\nheadless = [\"-p\", \"{prompt}\"]\n",
			`key "run.config_args": the recipe never tells the client where the instance's MCP configuration is`},
		{"misspelled table", strings.Replace(head, "[capabilities.tool_names]", "[capabilites.tool_names]", 1),
			`key "capabilites.tool_names": unknown key "capabilites" (did you mean "capabilities"?)`},
		{"unknown key far from any", head + "[run]\nflavour = 1\n",
			`key "run.flavour": unknown key (known in [run]: config_args, config_env, config_root_owned, headless, interactive, known_issue, no_headless, program, rewrites_config, tool_timeout, unattended, unsupported, workspace_config)`},
	} {
		_, err := Decode("x.toml", []byte(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	// Kept: arrays of tables in a template (the client's own keys), a
	// workspace-config recipe, and a definition without a command is [].
	d, err := Decode("x.toml", []byte(head+"[mcp]\nfile = \"m.json\"\nentry = { command = \"{command}\", args = \"{args}\", permissions = [{ tool = \"*\", allow = true }] }\n[run]\nworkspace_config = true\nheadless = [\"-p\", \"{prompt}\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Command == nil {
		t.Fatal("command must be [], not null, in JSON")
	}
}

// An unknown agent's error says where user definitions are read from.
func TestUnknownAgentNamesDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agnets")
	c, err := Load(LoadOptions{UserDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lookup("myc"); err == nil || !strings.Contains(err.Error(), "under "+dir+", which does not exist") {
		t.Fatalf("got %v", err)
	}
}
