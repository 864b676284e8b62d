package instance_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/internal/testkit"
)

// connectCase is a client's file before `instance connect`, in the scope
// where the client reads it.
type connectCase struct {
	name, agent, scope, rel string // rel: the file under the workspace (workspace) or home (user)
}

var connectCases = []connectCase{
	{"cursor", "cursor", instance.ScopeWorkspace, ".cursor/mcp.json"},
	{"vscode", "vscode-copilot", instance.ScopeWorkspace, ".vscode/mcp.json"},
	{"gemini", "gemini", instance.ScopeWorkspace, ".gemini/settings.json"},
	{"claude-code", "claude-code", instance.ScopeWorkspace, ".mcp.json"},
	{"claude-code-user", "claude-code", instance.ScopeUser, ".claude.json"},
	{"opencode", "opencode", instance.ScopeWorkspace, "opencode.json"},
	{"codex", "codex", instance.ScopeUser, "codex-home/config.toml"},
}

// connectEnv is a home directory for user scope, with CODEX_HOME under it.
func connectEnv(home string) func(string) string {
	return func(k string) string {
		switch k {
		case "HOME":
			return home
		case "CODEX_HOME":
			return filepath.Join(home, "codex-home")
		}
		return ""
	}
}

// stable replaces what differs between runs (the instance id, the state
// directory) in a file written by connect.
func stable(data []byte, rec *instance.Record, st *instance.Store) []byte {
	return []byte(strings.NewReplacer(rec.ID, "ID", st.Dir(), "STATE").Replace(string(data)))
}

// TestConnectDisconnectGolden connects an instance into a client file that
// has other servers and other top-level keys, and disconnects it again:
// the results are golden files, the others are kept in their order, a
// second connect changes nothing, the backup holds the file as it was, and
// the entry carries the tool timeout that covers the question timeout.
func TestConnectDisconnectGolden(t *testing.T) {
	st := openStore(t)
	for _, c := range connectCases {
		t.Run(c.name, func(t *testing.T) {
			ws, home := t.TempDir(), t.TempDir()
			rec := create(t, st, c.agent, func(o *instance.CreateOptions) {
				o.Workspace = ws
				o.QuestionTimeout = 10 * time.Minute
			})
			root := ws
			if c.scope == instance.ScopeUser {
				root = home
			}
			path := filepath.Join(root, c.rel)
			before, err := os.ReadFile(filepath.Join("testdata", "connect", c.name+".before"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			// 0640: neither the mode os.CreateTemp gives the new file
			// (0600) nor the default a new file gets (0644).
			if err := os.WriteFile(path, before, 0o640); err != nil {
				t.Fatal(err)
			}
			o := instance.ConnectOptions{Scope: c.scope, Getenv: connectEnv(home)}
			res, err := instance.Connect(rec, o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Path != path || res.Action != "added" || res.Backup != path+instance.BackupSuffix {
				t.Errorf("connect result %+v, want path %s, added, a backup", res, path)
			}
			after, _ := os.ReadFile(path)
			golden(t, "connect/"+c.name+".after", stable(after, rec, st))
			if bak, _ := os.ReadFile(path + instance.BackupSuffix); !bytes.Equal(bak, before) {
				t.Errorf("backup differs from the file before:\n%s", bak)
			}
			if prev, _ := os.ReadFile(path + instance.BackupSuffix + ".1"); res.Previous != path+instance.BackupSuffix+".1" || !bytes.Equal(prev, before) {
				t.Errorf("per-change backup %q holds\n%s\nwant the file before", res.Previous, prev)
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
				t.Errorf("mode %v, want the file's own 0640", fi.Mode().Perm())
			}
			timeout := `660000` // 10 min + 1 min, in the client's unit
			switch c.agent {
			case "codex":
				timeout = `tool_timeout_sec = 660`
			case "gemini", "opencode":
			default:
				timeout = ""
			}
			if !strings.Contains(string(after), timeout) {
				t.Errorf("no tool timeout %q covering the question timeout in\n%s", timeout, after)
			}

			// Connecting again changes nothing.
			res, err = instance.Connect(rec, o)
			if err != nil || res.Action != "unchanged" {
				t.Fatalf("second connect: %+v, %v", res, err)
			}
			if again, _ := os.ReadFile(path); !bytes.Equal(again, after) {
				t.Errorf("second connect changed the file:\n%s", again)
			}

			res, err = instance.Disconnect(rec, o)
			if err != nil || res.Action != "removed" {
				t.Fatalf("disconnect: %+v, %v", res, err)
			}
			gone, _ := os.ReadFile(path)
			golden(t, "connect/"+c.name+".disconnected", gone)
			if !bytes.Equal(gone, before) {
				t.Errorf("connect and disconnect did not give the file back byte for byte:\n%s", gone)
			}
			if bak, _ := os.ReadFile(path + instance.BackupSuffix); !bytes.Equal(bak, before) {
				t.Errorf("the backup of the first version was overwritten:\n%s", bak)
			}
			prev1, _ := os.ReadFile(path + instance.BackupSuffix + ".1")
			prev2, _ := os.ReadFile(path + instance.BackupSuffix + ".2")
			if !bytes.Equal(prev1, after) || !bytes.Equal(prev2, before) {
				t.Errorf("per-change backups: .1\n%s\n.2\n%s\nwant the connected file, then the one before", prev1, prev2)
			}
			res, err = instance.Disconnect(rec, o)
			if err != nil || res.Action != "absent" {
				t.Fatalf("second disconnect: %+v, %v", res, err)
			}
		})
	}
}

// TestConnectNewFileAndLastEntry: connect creates the file (and its
// directory) when there is none; disconnecting the only entry leaves an
// empty map, not a deleted file. A file agentctl made has no version from
// before agentctl: later changes keep each previous version, but no
// FILE.agentctl-bak that would pass agentctl's own entry off as the user's.
func TestConnectNewFileAndLastEntry(t *testing.T) {
	st := openStore(t)
	ws := t.TempDir()
	rec := create(t, st, "cursor", func(o *instance.CreateOptions) { o.Workspace = ws })
	other := create(t, st, "cursor", func(o *instance.CreateOptions) { o.Workspace, o.ServerName = ws, "second" })
	path := filepath.Join(ws, ".cursor", "mcp.json")
	res, err := instance.Connect(rec, instance.ConnectOptions{})
	if err != nil || res.Action != "added" || res.Backup != "" || res.Previous != "" {
		t.Fatalf("connect: %+v, %v", res, err)
	}
	made, _ := os.ReadFile(path)
	noFirst := func(what string, res *instance.ConnectResult, prev []byte) {
		t.Helper()
		if res.Backup != "" {
			t.Errorf("%s: Backup = %q, want none (agentctl made the file)", what, res.Backup)
		}
		if _, err := os.Lstat(path + instance.BackupSuffix); err == nil {
			data, _ := os.ReadFile(path + instance.BackupSuffix)
			t.Errorf("%s: %s kept as the file before agentctl:\n%s", what, instance.BackupSuffix, data)
		}
		if got, _ := os.ReadFile(res.Previous); res.Previous != path+instance.BackupSuffix+".1" || !bytes.Equal(got, prev) {
			t.Errorf("%s: Previous %q holds %q, want %q", what, res.Previous, got, prev)
		}
	}
	res, err = instance.Connect(other, instance.ConnectOptions{})
	if err != nil || res.Action != "added" {
		t.Fatalf("connect another: %+v, %v", res, err)
	}
	noFirst("a second connect", res, made)
	two, _ := os.ReadFile(path)
	if _, err := instance.Disconnect(other, instance.ConnectOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err = instance.Disconnect(rec, instance.ConnectOptions{})
	if err != nil || res.Action != "removed" {
		t.Fatalf("disconnect: %+v, %v", res, err)
	}
	noFirst("the last disconnect", res, made)
	if prev2, _ := os.ReadFile(path + instance.BackupSuffix + ".2"); !bytes.Equal(prev2, two) {
		t.Errorf(".2 holds %q, want the file with both entries %q", prev2, two)
	}
	data, err := os.ReadFile(path)
	if err != nil || string(data) != "{\n  \"mcpServers\": {}\n}\n" {
		t.Errorf("after the last entry went: %q, %v", data, err)
	}
	// Connected again: what disconnect left is agentctl's too.
	res, err = instance.Connect(rec, instance.ConnectOptions{})
	if err != nil || res.Action != "added" {
		t.Fatalf("connect again: %+v, %v", res, err)
	}
	noFirst("a connect after the last disconnect", res, data)
}

// TestConnectRefusesWhatItShouldNotReplace: a directory where the file
// should be, and a read-only file, are refused (exit code 4) and left as
// they are; a link to a file not made yet makes that file, the link kept.
func TestConnectRefusesWhatItShouldNotReplace(t *testing.T) {
	st := openStore(t)
	for _, c := range []struct {
		name string
		make func(path string) error
		want string
	}{
		{"directory", func(path string) error { return os.Mkdir(path, 0o755) }, "is a directory, not a client's file"},
		{"read-only", func(path string) error { return os.WriteFile(path, []byte(`{"mcpServers": {}}`), 0o444) }, "is read-only (mode -r--r--r--)"},
		// A pipe, whose opening for writing waits for a reader; a link to
		// a device takes the same way (not tried here: without the check,
		// as root, the device would be replaced).
		{"pipe", mkfifo, "is not a plain file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, path, o := clientFile(t, st, "cursor", ".cursor/mcp.json", "")
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := c.make(path); errors.Is(err, errors.ErrUnsupported) {
				t.Skip(err)
			} else if err != nil {
				t.Fatal(err)
			}
			before, _ := os.Lstat(path)
			errc := make(chan error, 1)
			go func() { _, err := instance.Connect(rec, o); errc <- err }()
			var err error
			select {
			case err = <-errc:
			case <-time.After(testkit.Wait):
				t.Fatalf("connect did not return within %s", testkit.Wait)
			}
			if err == nil || !errors.Is(err, instance.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("connect: %v; want it refused: %s", err, c.want)
			}
			if after, _ := os.Lstat(path); !os.SameFile(before, after) || after.Mode() != before.Mode() {
				t.Errorf("%s was replaced or changed", path)
			}
		})
	}
	t.Run("dangling link", func(t *testing.T) {
		rec, path, o := clientFile(t, st, "cursor", ".cursor/mcp.json", "")
		target := filepath.Join(t.TempDir(), "dotfiles", "cursor-mcp.json")
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
		if res, err := instance.Connect(rec, o); err != nil || res.Action != "added" || res.Target != target || res.Path != path {
			t.Fatalf("connect through a link to a file not made yet: %+v, %v; want target %s", res, err, target)
		}
		if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link is gone: %v", err)
		}
		if data, _ := os.ReadFile(target); !strings.Contains(string(data), rec.ID) {
			t.Errorf("the link's file holds %q", data)
		}
	})
	// A relative link in a linked folder names a file beside the folder
	// linked to, as the client will find it, not beside the link's name.
	t.Run("dangling link in a linked folder", func(t *testing.T) {
		rec, path, o := clientFile(t, st, "cursor", ".cursor/mcp.json", "")
		dot := filepath.Join(t.TempDir(), "dot")
		if err := os.MkdirAll(filepath.Join(dot, "cursor"), 0o755); err != nil {
			t.Fatal(err)
		}
		ws := filepath.Dir(filepath.Dir(path))
		if err := os.RemoveAll(filepath.Dir(path)); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(dot, "cursor"), filepath.Join(ws, ".cursor")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../shared-mcp.json", filepath.Join(dot, "cursor", "mcp.json")); err != nil {
			t.Fatal(err)
		}
		want := filepath.Join(dot, "shared-mcp.json")
		if res, err := instance.Connect(rec, o); err != nil || res.Target != want {
			t.Fatalf("connect through a relative link in a linked folder: %+v, %v; want target %s", res, err, want)
		}
		if data, _ := os.ReadFile(path); !strings.Contains(string(data), rec.ID) {
			t.Errorf("the client's file, through its links, holds %q", data)
		}
		if _, err := os.Stat(filepath.Join(ws, "shared-mcp.json")); err == nil {
			t.Error("a file was made beside the link's name, where the client does not look")
		}
	})
}

// clientFile makes an instance of agent with body as the client's file at
// rel (under the workspace, or for Codex under a home directory, in user
// scope) and returns it, the file's path and the options that reach it.
func clientFile(t *testing.T, st *instance.Store, agent, rel, body string) (*instance.Record, string, instance.ConnectOptions) {
	t.Helper()
	ws, home := t.TempDir(), t.TempDir()
	rec := create(t, st, agent, func(o *instance.CreateOptions) { o.Workspace = ws })
	scope, root := instance.ScopeWorkspace, ws
	if agent == "codex" {
		scope, root = instance.ScopeUser, home
	}
	path := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return rec, path, instance.ConnectOptions{Scope: scope, Getenv: connectEnv(home)}
}

// TestConnectRefusesUnparsable: a file that does not parse, or has
// comments, is refused naming the file and line, and left unchanged.
func TestConnectRefusesUnparsable(t *testing.T) {
	st := openStore(t)
	for _, c := range []struct{ agent, rel, body, want string }{
		{"cursor", ".cursor/mcp.json", "{\n  \"mcpServers\": {\n    \"a\": {,}\n  }\n}\n", "line 3, column 11"},
		{"vscode-copilot", ".vscode/mcp.json", "{\n  // my servers\n  \"servers\": {}\n}\n", "the file has comments"},
		{"cursor", ".cursor/mcp.json", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n  }\n}\n", "line 4, column 3: invalid character '}' looking for beginning of object key string; a comma before the closing bracket (a trailing comma)"},
		{"cursor", ".cursor/mcp.json", "{\"mcpServers\": {\"a\": {\"args\": [\"x\",]}}}", "a trailing comma"},
		{"codex", "codex-home/config.toml", "model = \"x\"\n[mcp_servers\n", "to end table name"},
		// Written back, one of the two would be lost.
		{"cursor", ".cursor/mcp.json", "{\n  \"mcpServers\": {\"x\": {}},\n  \"mcpServers\": {\"a\": {}}\n}\n", `line 3, column 3: the member "mcpServers" comes twice in one object`},
		{"cursor", ".cursor/mcp.json", "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"command\": \"y\"}}}", `the member "command" comes twice`},
	} {
		t.Run(c.agent, func(t *testing.T) {
			rec, path, o := clientFile(t, st, c.agent, c.rel, c.body)
			for _, op := range []func(*instance.Record, instance.ConnectOptions) (*instance.ConnectResult, error){instance.Connect, instance.Disconnect} {
				_, err := op(rec, o)
				if err == nil || !strings.Contains(err.Error(), path+" does not parse") || !strings.Contains(err.Error(), c.want) ||
					!strings.Contains(err.Error(), "nothing was changed") || !errors.Is(err, instance.ErrInvalid) {
					t.Errorf("err = %v, want it to name %s, %q and say nothing was changed", err, path, c.want)
				}
				if data, _ := os.ReadFile(path); string(data) != c.body {
					t.Errorf("file changed:\n%s", data)
				}
				if _, err := os.Stat(path + instance.BackupSuffix); err == nil {
					t.Errorf("a backup was written for a refused file")
				}
			}
		})
	}
}

// TestConnectOthersEntry: an entry under the server name that starts
// something else is neither replaced nor removed without Force.
func TestConnectOthersEntry(t *testing.T) {
	st := openStore(t)
	ws := t.TempDir()
	other := create(t, st, "cursor", func(o *instance.CreateOptions) { o.Workspace = ws })
	rec := create(t, st, "cursor", func(o *instance.CreateOptions) { o.Workspace = ws })
	if _, err := instance.Connect(other, instance.ConnectOptions{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(ws, ".cursor", "mcp.json")
	before, _ := os.ReadFile(path)
	for i, op := range []func(*instance.Record, instance.ConnectOptions) (*instance.ConnectResult, error){instance.Connect, instance.Disconnect} {
		_, err := op(rec, instance.ConnectOptions{})
		if err == nil || !strings.Contains(err.Error(), "is not instance "+rec.ID+"'s (it starts instance "+other.ID+")") || !strings.Contains(err.Error(), "--force") ||
			!errors.Is(err, instance.ErrInvalid) {
			t.Errorf("err = %v", err)
		}
		// disconnect has no --server-name to suggest.
		if disconnect := i == 1; disconnect == strings.Contains(err.Error(), "--server-name") {
			t.Errorf("disconnect %v: %v", disconnect, err)
		}
		if data, _ := os.ReadFile(path); !bytes.Equal(data, before) {
			t.Errorf("file changed:\n%s", data)
		}
	}
	res, err := instance.Connect(rec, instance.ConnectOptions{Force: true})
	if err != nil || res.Action != "replaced" {
		t.Fatalf("forced connect: %+v, %v", res, err)
	}
	if data, _ := os.ReadFile(path); !strings.Contains(string(data), rec.ID) || strings.Contains(string(data), other.ID) {
		t.Errorf("forced connect did not replace the entry:\n%s", data)
	}
}

// TestConnectRefusedScopes: a client with no file for a scope is refused
// with what it reads instead.
func TestConnectRefusedScopes(t *testing.T) {
	st := openStore(t)
	rec := create(t, st, "codex", nil)
	_, err := instance.Connect(rec, instance.ConnectOptions{Scope: instance.ScopeWorkspace})
	if err == nil || !strings.Contains(err.Error(), "Codex reads MCP servers only from $CODEX_HOME/config.toml") {
		t.Errorf("codex workspace: %v", err)
	}
	if _, err := instance.Connect(rec, instance.ConnectOptions{Scope: "global"}); err == nil || !strings.Contains(err.Error(), `unknown scope "global"`) {
		t.Errorf("bad scope: %v", err)
	}
}

// TestConnectContinueBlock: Continue reads every block file under
// .continue/mcpServers/; connect writes one of its own, disconnect removes it.
func TestConnectContinueBlock(t *testing.T) {
	st := openStore(t)
	ws := t.TempDir()
	rec := create(t, st, "continue", func(o *instance.CreateOptions) { o.Workspace = ws })
	res, err := instance.Connect(rec, instance.ConnectOptions{})
	if err != nil || res.Action != "added" {
		t.Fatalf("connect: %+v, %v", res, err)
	}
	path := filepath.Join(ws, ".continue", "mcpServers", "agentctl.yaml")
	want, _ := os.ReadFile(rec.MCPConfigPath)
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
		t.Errorf("block file:\n%s\nwant the instance's own:\n%s", got, want)
	}
	if res, _ := instance.Connect(rec, instance.ConnectOptions{}); res.Action != "unchanged" {
		t.Errorf("second connect: %+v", res)
	}
	if res, err := instance.Disconnect(rec, instance.ConnectOptions{}); err != nil || res.Action != "removed" {
		t.Fatalf("disconnect: %+v, %v", res, err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("block file left: %v", err)
	}
}

// TestConnectFollowsSymlink: a config file that is a link (a dotfiles
// manager's) is edited where it points, the link kept.
func TestConnectFollowsSymlink(t *testing.T) {
	st := openStore(t)
	ws, dots := t.TempDir(), t.TempDir()
	rec := create(t, st, "cursor", func(o *instance.CreateOptions) { o.Workspace = ws })
	target := filepath.Join(dots, "mcp.json")
	os.WriteFile(target, []byte(`{"mcpServers": {}}`), 0o644)
	os.MkdirAll(filepath.Join(ws, ".cursor"), 0o755)
	link := filepath.Join(ws, ".cursor", "mcp.json")
	if err := os.Symlink(target, link); err != nil {
		t.Skip(err)
	}
	if _, err := instance.Connect(rec, instance.ConnectOptions{}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced by a file")
	}
	if data, _ := os.ReadFile(target); !strings.Contains(string(data), rec.ID) {
		t.Errorf("target not edited:\n%s", data)
	}
}

// TestDisconnectEmptyFile: an empty file holds no entry; nothing to remove.
func TestDisconnectEmptyFile(t *testing.T) {
	st := openStore(t)
	rec, _, o := clientFile(t, st, "codex", "codex-home/config.toml", "")
	res, err := instance.Disconnect(rec, o)
	if err != nil || res.Action != "absent" {
		t.Fatalf("disconnect from an empty config.toml: %+v, %v", res, err)
	}
}

// TestConnectRefusesWrongShape: a file that parses but does not hold its
// servers where the client reads them is refused as invalid input (exit
// code 4), left unchanged, with what to do.
func TestConnectRefusesWrongShape(t *testing.T) {
	st := openStore(t)
	for _, c := range []struct{ agent, rel, body, want string }{
		{"cursor", ".cursor/mcp.json", "[]\n", "is not a JSON object"},
		{"cursor", ".cursor/mcp.json", "{\"mcpServers\": []}\n", `"mcpServers" is not an object of servers`},
		{"codex", "codex-home/config.toml", "mcp_servers = 3\n", "mcp_servers is not a table"},
	} {
		t.Run(c.agent, func(t *testing.T) {
			rec, path, o := clientFile(t, st, c.agent, c.rel, c.body)
			_, err := instance.Connect(rec, o)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "nothing was changed") || !errors.Is(err, instance.ErrInvalid) {
				t.Errorf("err = %v, want invalid input saying %q and that nothing was changed", err, c.want)
			}
			if data, _ := os.ReadFile(path); string(data) != c.body {
				t.Errorf("file changed:\n%s", data)
			}
		})
	}
}

// TestConnectKeepsBOM: a file that begins with a UTF-8 byte order mark (as
// some Windows editors write it) is read past it, and written back with it.
func TestConnectKeepsBOM(t *testing.T) {
	st := openStore(t)
	rec, path, o := clientFile(t, st, "cursor", ".cursor/mcp.json", "\xef\xbb\xbf{\n  \"mcpServers\": {\n    \"mine\": {\"command\": \"x\"}\n  }\n}\n")
	if _, err := instance.Connect(rec, o); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if !bytes.HasPrefix(data, []byte("\xef\xbb\xbf{")) || !strings.Contains(string(data), `"mine"`) || !strings.Contains(string(data), rec.ID) {
		t.Errorf("after connect:\n%q", data)
	}
	if _, err := instance.Disconnect(rec, o); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); !bytes.HasPrefix(data, []byte("\xef\xbb\xbf{")) || strings.Contains(string(data), rec.ID) {
		t.Errorf("after disconnect:\n%q", data)
	}
}

// TestConnectEntryWithFlagsBefore: an entry whose arguments put other
// flags between `mcp serve` and --instance (or write --instance=ID, or run
// it from a shell's command text, or reach it at a URL of its own) starts
// the instance it names: its own instance's entry is replaced without
// Force (and, not being what connect wrote, removed only with Force), and
// Connected says so; another instance's is refused
// naming that instance. (The check and the message once read entries
// apart, and refused an instance's own entry as "instance ID's".)
func TestConnectEntryWithFlagsBefore(t *testing.T) {
	st := openStore(t)
	other := create(t, st, "cursor", nil)
	for _, c := range []struct{ name, agent, rel, body string }{
		{"state-dir", "cursor", ".cursor/mcp.json", `{"mcpServers": {"agentctl": {"command": "/x/agentctl", "args": ["mcp", "serve", "--state-dir", "/d", "--instance", "ID"]}}}`},
		{"equals", "cursor", ".cursor/mcp.json", `{"mcpServers": {"agentctl": {"command": "/x/agentctl", "args": ["mcp", "serve", "--log-level", "debug", "--instance=ID"]}}}`},
		{"shell", "cursor", ".cursor/mcp.json", `{"mcpServers": {"agentctl": {"command": "sh", "args": ["-c", "exec /x/agentctl mcp serve --state-dir /d --instance ID"]}}}`},
		{"url", "cursor", ".cursor/mcp.json", `{"mcpServers": {"agentctl": {"url": "http://127.0.0.1:9000/mcp?instance=ID"}}}`},
		{"toml", "codex", "codex-home/config.toml", "[mcp_servers.agentctl]\ncommand = \"/x/agentctl\"\nargs = [\"mcp\", \"serve\", \"--state-dir\", \"/d\", \"--instance\", \"ID\"]\n"},
		{"block", "continue", ".continue/mcpServers/agentctl.yaml", "name: agentctl\nmcpServers:\n  - name: \"agentctl\"\n    command: \"/x/agentctl\"\n    args: [\"mcp\", \"serve\", \"--state-dir\", \"/d\", \"--instance\", \"ID\"]\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, op := range []struct {
				name string
				fn   func(*instance.Record, instance.ConnectOptions) (*instance.ConnectResult, error)
				want string
			}{{"connect", instance.Connect, "replaced"}, {"disconnect", instance.Disconnect, "removed"}} {
				rec, path, o := clientFile(t, st, c.agent, c.rel, "")
				mine := strings.ReplaceAll(c.body, "ID", rec.ID)
				if err := os.WriteFile(path, []byte(mine), 0o644); err != nil {
					t.Fatal(err)
				}
				if _, ok := instance.Connected(rec, o); !ok {
					t.Errorf("Connected: false for an entry that starts the instance")
				}
				if op.name == "disconnect" {
					// Written by hand, not by connect: disconnect leaves it
					// unless forced.
					_, err := op.fn(rec, o)
					if err == nil || !strings.Contains(err.Error(), "was changed since agentctl connected it") || !errors.Is(err, instance.ErrInvalid) {
						t.Errorf("disconnect a hand-written entry: %v; want it refused", err)
					}
					if data, _ := os.ReadFile(path); string(data) != mine {
						t.Errorf("disconnect changed a hand-written entry:\n%s", data)
					}
					o.Force = true
				}
				if res, err := op.fn(rec, o); err != nil || res.Action != op.want {
					t.Errorf("%s its own entry: %+v, %v; want %s", op.name, res, err, op.want)
				}
				o.Force = false

				theirs := strings.ReplaceAll(c.body, "ID", other.ID)
				if err := os.WriteFile(path, []byte(theirs), 0o644); err != nil {
					t.Fatal(err)
				}
				if _, ok := instance.Connected(rec, o); ok {
					t.Errorf("Connected: true for another instance's entry")
				}
				_, err := op.fn(rec, o)
				if err == nil || !strings.Contains(err.Error(), "is not instance "+rec.ID+"'s (it starts instance "+other.ID+")") {
					t.Errorf("%s another instance's entry: %v", op.name, err)
				}
				if data, _ := os.ReadFile(path); string(data) != theirs {
					t.Errorf("%s changed another instance's entry:\n%s", op.name, data)
				}
			}
		})
	}
}

// TestDisconnectTakesTheTokenOutOfBackups: disconnecting an HTTP instance
// leaves its bearer token in none of the workspace's files: the backup
// disconnect keeps (the file with the entry) and any other backup that held
// it have the token replaced, and still parse; so too when the client's
// file was removed by hand before the disconnect. The backups of other
// instances' entries are not touched, and neither are those of a stdio
// instance.
func TestDisconnectTakesTheTokenOutOfBackups(t *testing.T) {
	st := openStore(t)
	ws := t.TempDir()
	mk := func(transport instance.Transport) *instance.Record {
		return create(t, st, "cursor", func(o *instance.CreateOptions) {
			o.Workspace, o.Transport = ws, transport
		})
	}
	rec := mk(instance.Transport{Kind: instance.TransportHTTP, URL: "http://127.0.0.1:8765/instances/{id}/mcp"})
	path := filepath.Join(ws, ".cursor", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"mcpServers": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	o := instance.ConnectOptions{Scope: instance.ScopeWorkspace}
	token := rec.NewToken()
	if token == "" {
		t.Fatal("an HTTP instance without a token")
	}
	if _, err := instance.Connect(rec, o); err != nil {
		t.Fatal(err)
	}
	res, err := instance.Disconnect(rec, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := filesHolding(t, ws, token); len(got) != 0 {
		t.Errorf("after disconnect the token is in %v", got)
	}
	if want := []string{res.Previous}; res.Previous == "" || !slices.Equal(res.Scrubbed, want) {
		t.Errorf("scrubbed %v; want %v", res.Scrubbed, want)
	}
	data, _ := os.ReadFile(res.Previous)
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil || !strings.Contains(string(data), "Bearer <token removed") {
		t.Errorf("backup after scrubbing: %v\n%s", err, data)
	}

	// Removed by hand after a connect, with a backup holding the token.
	if _, err := instance.Connect(rec, o); err != nil {
		t.Fatal(err)
	}
	withToken, _ := os.ReadFile(path) // as a backup would hold it (an older connect's)
	if err := os.WriteFile(path+instance.BackupSuffix+".3", withToken, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if got := filesHolding(t, ws, token); len(got) == 0 {
		t.Fatal("the setup left no backup holding the token")
	}
	if res, err = instance.Disconnect(rec, o); err != nil || res.Action != "absent" {
		t.Fatalf("disconnect of a removed file: %+v, %v", res, err)
	}
	if got := filesHolding(t, ws, token); len(got) != 0 {
		t.Errorf("after disconnect of a removed file the token is in %v", got)
	}

	// Another instance's token, and a stdio instance: left alone.
	other := mk(instance.Transport{Kind: instance.TransportHTTP, URL: "http://127.0.0.1:8765/instances/{id}/mcp"})
	if err := os.WriteFile(path, []byte(`{"mcpServers": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := instance.Connect(other, instance.ConnectOptions{Scope: instance.ScopeWorkspace}); err != nil {
		t.Fatal(err)
	}
	withOther, _ := os.ReadFile(path)
	if err := os.WriteFile(path+instance.BackupSuffix+".4", withOther, 0o600); err != nil {
		t.Fatal(err)
	}
	stdio := mk(instance.Transport{})
	if err := os.WriteFile(path, []byte(`{"mcpServers": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	held := filesHolding(t, ws, other.NewToken())
	for _, r := range []*instance.Record{rec, stdio} {
		if res, err := instance.Disconnect(r, o); err != nil || len(res.Scrubbed) != 0 {
			t.Errorf("disconnect %s: %+v, %v; want nothing scrubbed", r.ID, res, err)
		}
	}
	if got := filesHolding(t, ws, other.NewToken()); !slices.Equal(got, held) || len(held) == 0 {
		t.Errorf("another instance's token: in %v before, %v after", held, got)
	}
}

// TestDisconnectScrubsBesideALinksTarget: where the client's file is a
// link (a dotfiles checkout), the backups are kept beside the file it
// leads to, and disconnect takes the token out of them there, also once
// that file was removed by hand.
func TestDisconnectScrubsBesideALinksTarget(t *testing.T) {
	st := openStore(t)
	ws, dotfiles := t.TempDir(), t.TempDir()
	rec := httpInstance(t, st, ws)
	target := filepath.Join(dotfiles, "mcp.json")
	if err := os.WriteFile(target, []byte(`{"mcpServers": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, ".cursor"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(ws, ".cursor", "mcp.json")); err != nil {
		t.Fatal(err)
	}
	tokenLeftInBackup(t, rec, target, 2)
	res, err := instance.Disconnect(rec, instance.ConnectOptions{Scope: instance.ScopeWorkspace})
	if err != nil {
		t.Fatal(err)
	}
	if got := filesHolding(t, dotfiles, rec.NewToken()); len(got) != 0 || len(res.Scrubbed) != 1 {
		t.Errorf("after disconnect the token is in %v (scrubbed %v)", got, res.Scrubbed)
	}
}

// httpInstance creates a cursor instance that its client reaches over
// HTTP (its entry holds its bearer token), in workspace ws.
func httpInstance(t *testing.T, st *instance.Store, ws string) *instance.Record {
	t.Helper()
	return create(t, st, "cursor", func(o *instance.CreateOptions) {
		o.Workspace, o.Transport = ws, instance.Transport{Kind: instance.TransportHTTP, URL: "http://127.0.0.1:8765/instances/{id}/mcp"}
	})
}

// tokenLeftInBackup connects rec into the file at path (its workspace
// scope), keeps that version, which holds the token, as the file's backup
// .n, and removes the file, as by hand.
func tokenLeftInBackup(t *testing.T, rec *instance.Record, path string, n int) {
	t.Helper()
	if _, err := instance.Connect(rec, instance.ConnectOptions{Scope: instance.ScopeWorkspace}); err != nil {
		t.Fatal(err)
	}
	withToken, _ := os.ReadFile(path)
	if err := os.WriteFile(path+instance.BackupSuffix+"."+strconv.Itoa(n), withToken, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}
