package instance_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/instance"
)

// writerShape is a client's shape with what each writer must get right:
// members of the document, nested tables, a literal list with {args}
// spliced into it, a literal that YAML must quote, an empty placeholder
// left out.
const writerShape = `id = "w"
name = "W"
command = ["w"]

[mcp]
file = "FILE"
key = "servers"
document = { version = "0.0.1", "$schema" = "s" }
entry = { name = "{server}", run = { exe = "{command}", argv = ["--x", "{args}"] }, env = "{env}", on = true, wait_s = "{tool_timeout_s}", tags = ["*", "yes"] }
remote_entry = { url = "{url}", headers = "{headers}" }

[capabilities.tool_names]
namespacing = "prefix"
template = "{server}__{tool}"
`

// TestWriters writes one shape as each kind of file, byte for byte.
func TestWriters(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"c.json", `{
  "$schema": "s",
  "servers": {
    "tools": {
      "name": "tools",
      "on": true,
      "run": {
        "argv": [
          "--x",
          "mcp",
          "a\u003cb"
        ],
        "exe": "/bin/a b"
      },
      "tags": [
        "*",
        "yes"
      ],
      "wait_s": 90
    }
  },
  "version": "0.0.1"
}
`},
		{"c.toml", `"$schema" = "s"
version = "0.0.1"

[servers]
  [servers.tools]
    name = "tools"
    on = true
    tags = ["*", "yes"]
    wait_s = 90
    [servers.tools.run]
      argv = ["--x", "mcp", "a<b"]
      exe = "/bin/a b"
`},
		// YAML keeps the template's order; the instance's strings are
		// quoted, the template's only where YAML would read them otherwise.
		{"c.yaml", `version: 0.0.1
"$schema": s
servers:
  "tools":
    name: "tools"
    run:
      exe: "/bin/a b"
      argv: ["--x", "mcp", "a\u003cb"]
    "on": true
    wait_s: 90
    tags: ["*", "yes"]
`},
	} {
		t.Run(c.file, func(t *testing.T) {
			def, err := agents.Decode("w.toml", []byte(strings.Replace(writerShape, "FILE", c.file, 1)))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			e := instance.ServerEntry{Command: "/bin/a b", Args: []string{"mcp", "a<b"}, ToolTimeout: 89500 * time.Millisecond}
			rel, err := instance.WriteClientConfig(dir, &def.MCP, "tools", e)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(filepath.Join(dir, rel))
			if string(got) != c.want {
				t.Errorf("%s:\n%s\nwant\n%s", rel, got, c.want)
			}
		})
	}
}

// TestWriteNoRemoteEntry: a client without a remote entry cannot be given
// an HTTP instance.
func TestWriteNoRemoteEntry(t *testing.T) {
	src := strings.NewReplacer("FILE", "c.json", `remote_entry = { url = "{url}", headers = "{headers}" }`, "").Replace(writerShape)
	def, err := agents.Decode("w.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	_, err = instance.WriteClientConfig(t.TempDir(), &def.MCP, "tools", instance.ServerEntry{URL: "http://x/mcp"})
	if err == nil || !strings.Contains(err.Error(), "no mcp.remote_entry") {
		t.Errorf("HTTP entry without a remote shape: %v", err)
	}
}
