package instance_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/instance"
)

// TestConnectCompareAndSwap: a program that takes no lock (an editor)
// writes the file while connect or disconnect edits it: its version is
// what agentctl edits, whenever it lands.
func TestConnectCompareAndSwap(t *testing.T) {
	st := openStore(t)
	const start = "{\n  \"mcpServers\": {\n    \"mine\": {\"command\": \"x\"}\n  },\n  \"n\": 1\n}\n"
	for _, c := range []struct {
		name, stage string
		write       func(path string, data []byte) error
	}{
		// Saved as a new file renamed over the old one, after agentctl
		// read the file and before its own rename.
		{"renamed", "edited", renameOver},
		// Written in place, after agentctl's last check, into the file
		// agentctl is about to replace.
		{"in place", "checked", func(path string, data []byte) error { return os.WriteFile(path, data, 0o644) }},
		// Saved as a new file renamed over the old one after agentctl's
		// last check, just before its own rename.
		{"renamed after the check", "checked", renameOver},
		// A file with another name is written into, not replaced: the
		// same, after agentctl opened it to write into it.
		{"in place, into a hard-linked file", "in-place", func(path string, data []byte) error { return os.WriteFile(path, data, 0o644) }},
		{"renamed, over a hard-linked file", "in-place", renameOver},
		// An editor that read the file before agentctl did saves it.
		{"renamed, over a hard-linked file written into", "written in place", func(path string, _ []byte) error {
			return renameOver(path, []byte(strings.Replace(start, `"mine"`, `"editor": {"command": "e"},`+"\n    \"mine\"", 1)))
		}},
	} {
		for _, op := range []struct {
			name string
			fn   func(*instance.Record, instance.ConnectOptions) (*instance.ConnectResult, error)
		}{{"connect", instance.Connect}, {"disconnect", instance.Disconnect}} {
			for _, linked := range []bool{false, true} {
				inPlace := c.stage == "in-place" || c.stage == "written in place"
				if inPlace && !linked {
					continue // a file of one name is replaced, not written into
				}
				name := c.name + "/" + op.name
				if linked && !inPlace {
					name += "/hard-linked"
				}
				t.Run(name, func(t *testing.T) {
					rec, path, o := clientFile(t, st, "cursor", ".cursor/mcp.json", start)
					if linked {
						if err := os.Link(path, path+".other-name"); err != nil {
							t.Fatal(err)
						}
					}
					if op.name == "disconnect" {
						if _, err := instance.Connect(rec, o); err != nil {
							t.Fatal(err)
						}
					}
					written := false
					defer instance.SetConnectHookForTest(func(stage, p string) {
						if stage != c.stage || written {
							return
						}
						written = true
						data, _ := os.ReadFile(p)
						data = []byte(strings.Replace(string(data), `"mine"`, `"editor": {"command": "e"},`+"\n    \"mine\"", 1))
						if err := c.write(p, data); err != nil {
							t.Error(err)
						}
					})()
					if _, err := op.fn(rec, o); err != nil {
						t.Fatal(err)
					}
					data, _ := os.ReadFile(path)
					if !written || !strings.Contains(string(data), `"editor": {"command": "e"}`) || !strings.Contains(string(data), `"n": 1`) {
						t.Errorf("the other program's edit was lost:\n%s", data)
					}
					if (op.name == "connect") != strings.Contains(string(data), rec.ID) {
						t.Errorf("%s did not do its own edit:\n%s", op.name, data)
					}
				})
			}
		}
	}
}

// renameOver saves data at path as an editor does: a new file renamed over
// the old one.
func renameOver(path string, data []byte) error {
	if err := os.WriteFile(path+".editor", data, 0o644); err != nil {
		return err
	}
	return os.Rename(path+".editor", path)
}

// TestDisconnectBlockReplacedAfterCheck: the user saves their own version
// of agentctl's block file (Continue's) just as disconnect removes it: their
// version is put back and kept, and disconnect says the entry is not what
// agentctl wrote.
func TestDisconnectBlockReplacedAfterCheck(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux renames without replacing in one step")
	}
	st := openStore(t)
	ws := t.TempDir()
	rec := create(t, st, "continue", func(o *instance.CreateOptions) { o.Workspace = ws })
	if _, err := instance.Connect(rec, instance.ConnectOptions{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(ws, ".continue", "mcpServers", "agentctl.yaml")
	theirs := []byte("# the user's own\nmcpServers: []\n")
	defer instance.SetConnectHookForTest(func(stage, p string) {
		if stage == "checked" && p == path {
			if err := renameOver(p, theirs); err != nil {
				t.Error(err)
			}
		}
	})()
	_, err := instance.Disconnect(rec, instance.ConnectOptions{})
	if err == nil {
		t.Error("disconnect removed a block file the user had just saved")
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, theirs) {
		t.Errorf("the user's version is lost: %q (%v)", got, err)
	}
}

// TestConnectKeepsChanging: a file that changes on every attempt is left
// to the program writing it, with an error saying so (exit code 4).
func TestConnectKeepsChanging(t *testing.T) {
	st := openStore(t)
	rec, path, o := clientFile(t, st, "cursor", ".cursor/mcp.json", `{"mcpServers": {}, "n": 0}`)
	n := 0
	defer instance.SetConnectHookForTest(func(stage, p string) {
		if stage == "edited" {
			n++
			_ = os.WriteFile(p, []byte(`{"mcpServers": {}, "n": `+strings.Repeat("1", n)+`}`), 0o644)
		}
	})()
	_, err := instance.Connect(rec, o)
	if err == nil || !strings.Contains(err.Error(), "kept changing") || !errors.Is(err, instance.ErrConflict) {
		t.Fatalf("err = %v, want one saying the file kept changing", err)
	}
	if data, _ := os.ReadFile(path); string(data) != `{"mcpServers": {}, "n": `+strings.Repeat("1", n)+`}` {
		t.Errorf("the file is not the other program's last version:\n%s", data)
	}
}
