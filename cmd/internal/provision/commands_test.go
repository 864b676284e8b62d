package provision_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/cmd/internal/provision"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver/mount"
)

// TestCheckCommands: relative commands are made absolute against the
// directory given and must be executable files; bare names, absolute
// commands, URLs and knowledge bases are left alone.
func TestCheckCommands(t *testing.T) {
	dir := t.TempDir()
	for name, mode := range map[string]os.FileMode{"ev.sh": 0o755, "notes.txt": 0o644} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := func(cmd string) mount.Mount { return mount.Mount{Kind: mount.KindServer, Name: "s", Command: cmd} }
	in := []mount.Mount{srv("./ev.sh"), srv("npx"), srv("/opt/none"), {Kind: mount.KindServer, Name: "h", URL: "https://x"}, {Kind: mount.KindKB, Name: "k", Path: "./kb"}}
	got, err := provision.CheckCommands(in, dir, "here")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "ev.sh"), "npx", "/opt/none", "", ""}
	for i, m := range got {
		if m.Command != want[i] {
			t.Errorf("mount %d: command %q, want %q", i, m.Command, want[i])
		}
	}
	if in[0].Command != "./ev.sh" || got[4].Path != "./kb" {
		t.Error("the input was changed, or a knowledge base touched")
	}
	for cmd, problem := range map[string]string{
		"./missing":   "which does not exist",
		"notes.txt":   "", // a bare name: a PATH lookup, not checked here
		"./notes.txt": "which is not executable (chmod +x it)",
		"./bin":       "which is a directory",
	} {
		_, err := provision.CheckCommands([]mount.Mount{srv(cmd)}, dir, "here")
		if problem == "" {
			if err != nil {
				t.Errorf("%s: %v", cmd, err)
			}
			continue
		}
		abs := filepath.Join(dir, cmd)
		if err == nil || !errors.Is(err, instance.ErrInvalid) ||
			!strings.Contains(err.Error(), `MCP server "s": command "`+cmd+`" is `+abs+" (a relative command is taken from here, "+dir+"), "+problem) {
			t.Errorf("%s: error %v", cmd, err)
		}
	}
}
