package agents

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const runTOML = goodTOML + `
[run]
program     = "mine-cli"
config_args = ["--mcp-config", "{config}"]
config_env  = { MINE_HOME = "{config_dir}" }
headless    = ["-p", "{prompt}"]
unattended  = ["--yes"]
`

func TestDecodeRun(t *testing.T) {
	d, err := Decode("mine.toml", []byte(runTOML))
	if err != nil {
		t.Fatal(err)
	}
	r := d.Run
	if d.ProgramOrDefault() != "mine-cli" || r.ConfigEnv["MINE_HOME"] != "{config_dir}" || strings.Join(r.Headless, " ") != "-p {prompt}" || r.Unattended[0] != "--yes" {
		t.Fatalf("run decoded as %+v", r)
	}
	d, err = Decode("mine.toml", []byte(goodTOML))
	if err != nil {
		t.Fatal(err)
	}
	if d.ProgramOrDefault() != "mine" {
		t.Fatalf("without run.program the program is %q, want the command's %q", d.ProgramOrDefault(), "mine")
	}
}

func TestDecodeRunErrors(t *testing.T) {
	tests := []struct{ name, toml, want string }{
		{"unknown key", strings.Replace(runTOML, "unattended ", "unatended ", 1),
			`key "run.unatended": unknown key (did you mean "unattended"?)`},
		{"unknown placeholder", strings.Replace(runTOML, `"{config}"`, `"{cfg}"`, 1),
			`key "run.config_args": "{cfg}" has the unknown placeholder {cfg}`},
		{"unknown placeholder in env", strings.Replace(runTOML, `"{config_dir}"`, `"{home}"`, 1),
			`key "run.config_env.MINE_HOME": "{home}" has the unknown placeholder {home}`},
		{"prompt twice", strings.Replace(runTOML, `["-p", "{prompt}"]`, `["-p", "{prompt}", "{prompt}"]`, 1),
			`has {prompt} 2 times`},
		{"no prompt in headless", strings.Replace(runTOML, `["-p", "{prompt}"]`, `["-p"]`, 1),
			`has {prompt} 0 times`},
		{"prompt outside headless", strings.Replace(runTOML, `["--yes"]`, `["--yes", "{prompt}"]`, 1),
			`key "run.unattended": "{prompt}": {prompt} belongs in run.headless only`},
		{"no headless and no reason", strings.Replace(runTOML, `headless    = ["-p", "{prompt}"]`, ``, 1),
			`key "run.headless": missing; give the one-prompt form`},
		{"wrong type", strings.Replace(runTOML, `["--yes"]`, `"--yes"`, 1),
			`run.unattended`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode("mine.toml", []byte(tt.toml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error\n  %v\nwant it to contain\n  %s", err, tt.want)
			}
		})
	}
	// A reason instead of the headless form, and literal braces (a TOML
	// inline table in an argument), are fine.
	ok := strings.Replace(runTOML, `headless    = ["-p", "{prompt}"]`, `no_headless = "an editor"`+"\ninteractive = [\"-c\", \"x={a = 1}\"]", 1)
	if _, err := Decode("mine.toml", []byte(ok)); err != nil {
		t.Fatal(err)
	}
}

// TestCatalogRun: every catalog client says how to run it, or why it cannot
// be run, and its recipe uses the instance's configuration somehow.
func TestCatalogRun(t *testing.T) {
	c, err := Load(LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range c.Definitions() {
		r := d.Run
		switch {
		case r.Unsupported != "":
			continue
		case len(r.Headless) == 0 && r.NoHeadless == "":
			t.Errorf("%s: no headless form and no reason", d.ID)
		}
		told := r.WorkspaceConfig || len(r.ConfigEnv) > 0
		for _, a := range append(append(r.ConfigArgs, r.Headless...), r.Interactive...) {
			told = told || strings.Contains(a, "{config}") || strings.Contains(a, "{entry_toml}") || strings.Contains(a, "{command_line}")
		}
		if !told {
			t.Errorf("%s: the recipe never tells the client about the instance's MCP configuration", d.ID)
		}
	}
}

// TestUserDefinitionKeepsCatalogRun: a user file that overrides a catalog
// client without a [run] table keeps the catalog's recipe; one with a
// [run] table replaces it.
func TestUserDefinitionKeepsCatalogRun(t *testing.T) {
	dir := t.TempDir()
	noRun := strings.Replace(goodTOML, `id = "mine"`, `id = "claude-code"`, 1)
	if err := os.WriteFile(filepath.Join(dir, "claude.toml"), []byte(noRun), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(LoadOptions{UserDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Lookup("claude-code")
	if err != nil {
		t.Fatal(err)
	}
	if d.Capabilities.ToolNames.Template != "{server}__{tool}" || strings.Join(d.Run.Headless, " ") != "-p {prompt}" || d.Run.ConfigArgs[0] != "--mcp-config" {
		t.Fatalf("override without [run]: template %q, run %+v", d.Capabilities.ToolNames.Template, d.Run)
	}
	withRun := strings.Replace(runTOML, `id = "mine"`, `id = "claude-code"`, 1)
	if err := os.WriteFile(filepath.Join(dir, "claude.toml"), []byte(withRun), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err = Load(LoadOptions{UserDir: dir}); err != nil {
		t.Fatal(err)
	}
	if d, err = c.Lookup("claude-code"); err != nil {
		t.Fatal(err)
	}
	if d.ProgramOrDefault() != "mine-cli" || d.Run.Unattended[0] != "--yes" {
		t.Fatalf("override with [run]: %+v", d.Run)
	}
}

func TestExpandRun(t *testing.T) {
	v := map[string]string{"config": "/c f.json", "server": "s"}
	for in, want := range map[string]string{
		"{config}":               "/c f.json",
		"@{config}":              "@/c f.json",
		"mcp_servers.{server}=x": "mcp_servers.s=x",
		"{unknown} {":            "{unknown} {",
		"x={a = 1}":              "x={a = 1}",
		"plain":                  "plain",
	} {
		if got := ExpandRun(in, v); got != want {
			t.Errorf("ExpandRun(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLoadOnly: loading one definition decodes its catalog file (named
// after its id, which every catalog file is) and the user files, and
// yields the same definition as a full load.
func TestLoadOnly(t *testing.T) {
	all, err := Load(LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range all.Definitions() {
		one, err := Load(LoadOptions{Only: d.ID})
		if err != nil {
			t.Fatal(err)
		}
		got, err := one.Lookup(d.ID)
		if err != nil {
			t.Fatalf("%s: %v (is catalog/%s.toml named after its id?)", d.ID, err, d.ID)
		}
		if len(one.IDs()) != 1 || got.Name != d.Name || got.ProgramOrDefault() != d.ProgramOrDefault() {
			t.Errorf("%s: Only loaded %v", d.ID, one.IDs())
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.toml"), []byte(runTOML), 0o644); err != nil {
		t.Fatal(err)
	}
	one, err := Load(LoadOptions{UserDir: dir, Only: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := one.Lookup("mine"); err != nil {
		t.Fatalf("a user definition with Only: %v", err)
	}
}
