package agents

import (
	"encoding/json"
	"strings"
	"testing"
)

// newClientTOML describes a client no catalog knows, shapes included.
const newClientTOML = `id = "newclient"
name = "New client"
command = ["newclient"]

[mcp]
file = "nc/servers.yaml"
key = "servers"
list = true
document = { version = 2, kind = "mcp" }
entry = { name = "{server}", run = { exe = "{command}", argv = ["--", "{args}"] }, env = "{env}", wait_ms = "{tool_timeout_ms}" }
remote_entry = { name = "{server}", endpoint = "{url}", headers = "{headers}" }
connect = { workspace = ".nc/{server}.yaml", user_reads = "reads only the workspace" }

[capabilities.tool_names]
namespacing = "prefix"
template = "{server}__{tool}"
`

// TestDecodeShape: a definition's own shape is decoded with its keys in
// the file's order, nested tables included, and its format is its id.
func TestDecodeShape(t *testing.T) {
	d, err := Decode("newclient.toml", []byte(newClientTOML))
	if err != nil {
		t.Fatal(err)
	}
	m := d.MCP
	if m.ConfigFormat != "newclient" || m.File != "nc/servers.yaml" || !m.List || m.Connect.Workspace != ".nc/{server}.yaml" || m.Connect.UserReads == "" {
		t.Fatalf("shape %+v", m)
	}
	b, err := json.Marshal(m.Entry)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"name":"{server}","run":{"exe":"{command}","argv":["--","{args}"]},"env":"{env}","wait_ms":"{tool_timeout_ms}"}`; string(b) != want {
		t.Errorf("entry %s\nwant  %s", b, want)
	}
	if b, _ := json.Marshal(m.Document); string(b) != `{"version":2,"kind":"mcp"}` {
		t.Errorf("document %s", b)
	}
	d, err = Decode("newclient.toml", []byte(strings.Replace(newClientTOML, "key = \"servers\"\n", "", 1)))
	if err != nil || d.MCP.Key != "mcpServers" {
		t.Errorf("default key: %+v, %v", d, err)
	}
}

// TestDecodeShapeFromFormat: a definition that names a format alone takes
// its shape; one that overrides a catalog id without a shape keeps the
// catalog's, with its own connect file where it names one (the catalog's
// for the other scope).
func TestDecodeShapeFromFormat(t *testing.T) {
	d, err := Decode("mine.toml", []byte(goodTOML))
	if err != nil {
		t.Fatal(err)
	}
	if d.MCP.File != "mcp.json" || d.MCP.Key != "mcpServers" || len(d.MCP.RemoteEntry) == 0 || d.MCP.Connect != (Connect{}) {
		t.Errorf("mcp-servers-json shape %+v", d.MCP)
	}
	over := strings.NewReplacer(`id = "mine"`, `id = "cursor"`, `config_format = "mcp-servers-json"`, `connect = { workspace = "x/mcp.json" }`).Replace(goodTOML)
	d, err = Decode("cursor.toml", []byte(over))
	if err != nil {
		t.Fatal(err)
	}
	if d.MCP.ConfigFormat != "cursor" || d.MCP.File != ".cursor/mcp.json" || d.MCP.Connect != (Connect{Workspace: "x/mcp.json", User: "~/.cursor/mcp.json"}) {
		t.Errorf("cursor override %+v", d.MCP)
	}
	d, err = Decode("v.toml", []byte(strings.Replace(goodTOML, `"mcp-servers-json"`, `"vscode"`, 1)))
	if err != nil || d.MCP.Key != "servers" || d.MCP.ConfigFormat != "vscode" {
		t.Errorf("format vscode: %+v, %v", d, err)
	}
}

func TestDecodeShapeErrors(t *testing.T) {
	for _, c := range []struct{ name, from, to, want string }{
		{"unknown placeholder", `"{tool_timeout_ms}"`, `"{timeout}"`,
			`newclient.toml:10: key "mcp.entry.wait_ms": unknown placeholder {timeout} (known: {server}, {command}, {args}, {env}, {trust}, {tool_timeout_ms}, {tool_timeout_s})`},
		{"remote placeholder in a stdio entry", `"{tool_timeout_ms}"`, `"{url}"`, `key "mcp.entry.wait_ms": unknown placeholder {url}`},
		{"placeholder in a text", `exe = "{command}"`, `exe = "run {command}"`, `key "mcp.entry.run.exe": {command} must be the whole value, not part of "run {command}"`},
		{"no extension", `"nc/servers.yaml"`, `"nc/servers"`, `newclient.toml:6: key "mcp.file": "nc/servers" is not a file name in the instance's directory ending in .json, .toml or .yaml`},
		{"outside the instance", `"nc/servers.yaml"`, `"../servers.yaml"`, `key "mcp.file"`},
		{"list in JSON", `"nc/servers.yaml"`, `"nc/servers.json"`, `key "mcp.list": a list of servers is written only in a YAML file`},
		{"user file not at home", `user_reads = "reads only the workspace"`, `user = ".nc/x.yaml"`, `key "mcp.connect.user": ".nc/x.yaml" is not in the home directory`},
		{"placeholder in capitals", `"{tool_timeout_ms}"`, `"{Command}"`, `key "mcp.entry.wait_ms": unknown placeholder {Command}`},
		{"placeholder as a key", `wait_ms = "{tool_timeout_ms}"`, `"{server}" = "x"`, `key "mcp.entry.{server}": {server} is in a key: placeholders fill values only`},
		{"unknown placeholder in the document", `version = 2`, `version = "{bogus}"`, `key "mcp.document.version": unknown placeholder {bogus}`},
		{"unknown placeholder in a connect path", `".nc/{server}.yaml"`, `"{workspace}/nc.yaml"`, `key "mcp.connect.workspace": unknown placeholder {workspace} in "{workspace}/nc.yaml"`},
		{"connect file of another kind", `".nc/{server}.yaml"`, `".nc/settings.json"`, `key "mcp.connect.workspace": ".nc/settings.json" is not a yaml file, as mcp.file is`},
		{"workspace file outside it", `".nc/{server}.yaml"`, `"../nc.yaml"`, `key "mcp.connect.workspace": "../nc.yaml" is not a path inside the workspace`},
		{"workspace file at an absolute path", `".nc/{server}.yaml"`, `"/tmp/nc.yaml"`, `is not a path inside the workspace`},
		{"workspace file through a variable", `".nc/{server}.yaml"`, `"$NC_DIR/nc.yaml"`, `is not a path inside the workspace`},
		{"workspace file in the home directory", `".nc/{server}.yaml"`, `"~/nc.yaml"`, `is not a path inside the workspace`},
		{"workspace file in the user's config", `".nc/{server}.yaml"`, `"{xdgconfig}/nc/nc.yaml"`, `is not a path inside the workspace`},
		{"workspace file in the app config", `".nc/{server}.yaml"`, `"{appconfig}/nc/nc.yaml"`, `is not a path inside the workspace`},
		{"tilde without a slash", `user_reads = "reads only the workspace"`, `user = "~.nc.yaml"`, `key "mcp.connect.user": "~.nc.yaml" is not in the home directory`},
		{"user file above home", `user_reads = "reads only the workspace"`, `user = "~/../../etc/nc.yaml"`, `key "mcp.connect.user": "~/../../etc/nc.yaml" leaves the directory it starts in`},
		{"absolute user file above its start", `user_reads = "reads only the workspace"`, `user = "/etc/../nc.yaml"`, `leaves the directory it starts in`},
		{"user file above a variable", `user_reads = "reads only the workspace"`, `user = "${NC_HOME}/../nc.yaml"`, `leaves the directory it starts in`},
		{"file without an entry", `entry = { name = "{server}", run = { exe = "{command}", argv = ["--", "{args}"] }, env = "{env}", wait_ms = "{tool_timeout_ms}" }`, `config_format = "cursor"`,
			`key "mcp.entry": missing: mcp.file is set ("nc/servers.yaml"), so describe the entry too`},
		{"a path as the key", `key = "servers"`, `key = "mcp.servers"`, `key "mcp.key": "mcp.servers" is a path`},
		{"typo in entry", `entry = {`, `entri = {`, `key "mcp.entri": unknown key (did you mean "entry"?)`},
		{"near-miss", `connect =`, `conect =`, `key "mcp.conect": unknown key (did you mean "connect"?)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(newClientTOML, c.from, c.to, 1)
			if src == newClientTOML {
				t.Fatalf("test bug: %q not in the definition", c.from)
			}
			_, err := Decode("newclient.toml", []byte(src))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error\n  %v\nwant it to contain\n  %s", err, c.want)
			}
		})
	}
	_, err := Decode("mine.toml", []byte(strings.Replace(goodTOML, `config_format = "mcp-servers-json"`, `trust = true`, 1)))
	if err == nil || !strings.Contains(err.Error(), `key "mcp.config_format": missing; one of auggie, claude-code,`) {
		t.Errorf("no format, no shape: %v", err)
	}
}

// TestCatalogMCP: old records find their shape by agent and format.
func TestCatalogMCP(t *testing.T) {
	for _, c := range []struct{ id, format, file string }{
		{"kilo", "opencode", "opencode.json"},
		{"gone", "opencode", "opencode.json"},
		{"vscode-copilot", "vscode", ".vscode/mcp.json"},
		{"", "vscode", ".vscode/mcp.json"},
		{"x", GenericFormat, "mcp.json"},
	} {
		m, ok := CatalogMCP(c.id, c.format)
		if !ok || m.File != c.file {
			t.Errorf("CatalogMCP(%q, %q) = %+v, %v; want file %s", c.id, c.format, m, ok, c.file)
		}
	}
	if m, _ := CatalogMCP("kilo", "opencode"); m.Connect.Workspace != "" {
		t.Errorf("kilo connects like opencode: %+v", m.Connect)
	}
	if _, ok := CatalogMCP("x", "xml"); ok {
		t.Error("an unknown format has a shape")
	}
}
