package instance_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/instance"
	pelletier "github.com/pelletier/go-toml/v2"
)

// weirdJSON is a client file with what a decode and encode would change:
// invalid UTF-8, a lone surrogate escape, numbers no float64 holds,
// escapes, a compact object and tabs, and no final newline.
const weirdJSON = "{\n\t\"note\": \"caf\xe9 \xff\xfe latin-1\",\n\t\"lone\": \"\\ud800 and \\uDFFF\",\n" +
	"\t\"big\": 1e400, \"huge\": 12345678901234567890, \"neg\": -0.000000000000000000001e-400,\n" +
	"\t\"esc\": \"\\u00e9\\/\\t<&>\",\n" +
	"\t\"mcpServers\": {\n\t\t\"mine\": {\"command\": \"x\", \"timeout\": 1E+2, \"args\": [\"\xc3\x28\"]}\n\t},\n" +
	"\t\"after\": [1.0, 2.50, {\"k\":  \"v\"}]\n}"

// TestConnectKeepsBytes: connect adds its entry and disconnect removes it
// without changing a byte of the rest of the file, whatever it holds, and
// with the entry between other servers the rest stays as it was too.
func TestConnectKeepsBytes(t *testing.T) {
	st := openStore(t)
	for _, c := range []struct{ name, body string }{
		{"weird", weirdJSON},
		{"bom", "\xef\xbb\xbf" + weirdJSON + "\n"},
		{"no servers", "{\"big\": 1e400, \"s\": \"\\ud800\xff\"}"},
		{"empty servers", "{\n  \"mcpServers\": {},\n  \"big\": 1e400\n}\n"},
		{"crlf", "{\r\n  \"mcpServers\": {\r\n    \"a\": {\"command\": \"a\"}\r\n  }\r\n}\r\n"},
		{"compact", `{"mcpServers":{"a":{"command":"a"},"b":{"command":"b"}},"n":12345678901234567890}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, path, o := clientFile(t, st, "cursor", ".cursor/mcp.json", c.body)
			res, err := instance.Connect(rec, o)
			if err != nil || res.Action != "added" {
				t.Fatalf("connect: %+v, %v", res, err)
			}
			after, _ := os.ReadFile(path)
			for _, keep := range []string{"caf\xe9 \xff\xfe", `\ud800 and \uDFFF`, "1e400", "12345678901234567890", "1E+2", "\xc3\x28", `\u00e9\/\t<&>`, "\t\"after\": [1.0, 2.50, {\"k\":  \"v\"}]\n}"} {
				if strings.Contains(c.body, keep) && !strings.Contains(string(after), keep) {
					t.Errorf("connect lost %q:\n%s", keep, after)
				}
			}
			if _, ok := instance.Connected(rec, o); !ok {
				t.Errorf("Connected: false after connect")
			}
			if strings.Contains(c.body, "\r\n") && strings.Count(string(after), "\n") != strings.Count(string(after), "\r\n") {
				t.Errorf("connect mixed line ends into a CRLF file:\n%q", after)
			}
			if res, err := instance.Connect(rec, o); err != nil || res.Action != "unchanged" {
				t.Errorf("second connect: %+v, %v", res, err)
			}
			if res, err := instance.Disconnect(rec, o); err != nil || res.Action != "removed" {
				t.Fatalf("disconnect: %+v, %v", res, err)
			}
			gone, _ := os.ReadFile(path)
			want := c.body
			if c.name == "no servers" {
				// The servers object connect added stays, empty.
				want = strings.TrimSuffix(c.body, "}") + `, "mcpServers": {}}`
			}
			if string(gone) != want {
				t.Errorf("after connect and disconnect:\n%q\nwant the file as it was:\n%q", gone, want)
			}
		})
	}
}

// TestConnectReplaceKeepsBytes: replacing the instance's entry (forced,
// over another one's) changes only that entry's bytes.
func TestConnectReplaceKeepsBytes(t *testing.T) {
	st := openStore(t)
	rec, path, o := clientFile(t, st, "cursor", ".cursor/mcp.json", "")
	body := strings.Replace(weirdJSON, `"mine": {`, `"agentctl": {"command": "old", "n": 1e400},`+"\n\t\t\"mine\": {", 1)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	o.Force = true
	res, err := instance.Connect(rec, o)
	if err != nil || res.Action != "replaced" {
		t.Fatalf("connect: %+v, %v", res, err)
	}
	after, _ := os.ReadFile(path)
	i := strings.Index(body, `{"command": "old"`)
	j := i + len(`{"command": "old", "n": 1e400}`)
	if !bytes.HasPrefix(after, []byte(body[:i])) || !bytes.HasSuffix(after, []byte(body[j:])) || !strings.Contains(string(after), rec.ID) {
		t.Errorf("replace changed more than the entry:\n%s", after)
	}
	if prev, _ := os.ReadFile(res.Previous); string(prev) != body {
		t.Errorf("backup %s holds\n%q\nwant the file before", res.Previous, prev)
	}
}

// TestConnectTOMLKeepsBytes: in Codex's config.toml only the entry's
// tables are written and removed; comments, order and formatting stay.
func TestConnectTOMLKeepsBytes(t *testing.T) {
	st := openStore(t)
	body := "# top comment\nmodel = \"o3\"  # trailing\nnotes = \"\"\"\n[mcp_servers.agentctl]\nnot a table\n\"\"\"\n\n" +
		"[mcp_servers.docs]   # docs server\ncommand = 'docs'\nargs = [\n  \"a\", # first\n  \"]\",\n]\n# about the next one\n\n" +
		"[mcp_servers.docs.env]\nX = \"1\"\n\n# profiles below\n[profiles.fast]\nmodel = \"mini\"\n"
	rec, path, o := clientFile(t, st, "codex", "codex-home/config.toml", body)
	if res, err := instance.Connect(rec, o); err != nil || len(res.Warnings) != 0 {
		t.Fatalf("connect: %+v, %v; want no warning", res, err)
	}
	after, _ := os.ReadFile(path)
	at := strings.Index(body, "\n# profiles below")
	if !strings.HasPrefix(string(after), body[:at]) || !strings.HasSuffix(string(after), body[at:]) ||
		!strings.Contains(string(after), "[mcp_servers.agentctl]\nargs = [\"mcp\", \"serve\", \"--instance\", \""+rec.ID+"\"") {
		t.Errorf("connect changed more than its tables:\n%s", after)
	}
	// Connected the entry sits between tables; the comments around it stay.
	if res, err := instance.Connect(rec, o); err != nil || res.Action != "unchanged" {
		t.Errorf("second connect: %+v, %v", res, err)
	}
	if res, err := instance.Disconnect(rec, o); err != nil || res.Action != "removed" || len(res.Warnings) != 0 {
		t.Fatalf("disconnect: %+v, %v", res, err)
	}
	if gone, _ := os.ReadFile(path); string(gone) != body {
		t.Errorf("after connect and disconnect:\n%s\nwant:\n%s", gone, body)
	}
}

// TestConnectTOMLKeepsBytesWithNaN: values JSON has not (nan, inf) do not
// make connect write the file again as a whole: its comments stay, and
// nothing warns.
func TestConnectTOMLKeepsBytesWithNaN(t *testing.T) {
	st := openStore(t)
	body := "# my settings\nratio = nan\nlimit = -inf\n\n[mcp_servers.docs]\ncommand = \"docs\"\n"
	rec, path, o := clientFile(t, st, "codex", "codex-home/config.toml", body)
	res, err := instance.Connect(rec, o)
	if err != nil || len(res.Warnings) != 0 {
		t.Fatalf("connect: %+v, %v; want no warning", res, err)
	}
	if after, _ := os.ReadFile(path); !strings.HasPrefix(string(after), body) {
		t.Errorf("connect changed more than its tables:\n%s", after)
	}
}

// TestConnectTOMLOnlyServer: agentctl's entry as the file's only server,
// and a file with CRLF line ends or a byte order mark: connect and
// disconnect give back the very bytes (comments included), connected the
// file is TOML to a strict reader, and its line ends are the file's.
func TestConnectTOMLOnlyServer(t *testing.T) {
	st := openStore(t)
	for _, c := range []struct{ name, body string }{
		{"comments", "# top comment\nmodel = \"o3\" # best\n"},
		{"bom", "\xef\xbb\xbf# top\nmodel = \"o3\"\n"},
		{"crlf", "# top\r\nmodel = \"o3\"\r\n\r\n[profiles.fast]\r\nmodel = \"mini\"\r\n"},
		{"crlf-servers", "model = \"o3\"\r\n\r\n[mcp_servers.docs]\r\ncommand = \"docs\"\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, path, o := clientFile(t, st, "codex", "codex-home/config.toml", c.body)
			if _, err := instance.Connect(rec, o); err != nil {
				t.Fatal(err)
			}
			after, _ := os.ReadFile(path)
			strictTOML(t, after)
			if !strings.Contains(string(after), rec.ID) {
				t.Errorf("no entry in\n%s", after)
			}
			if strings.Contains(c.body, "\r\n") && strings.Count(string(after), "\n") != strings.Count(string(after), "\r\n") {
				t.Errorf("line ends mixed:\n%q", after)
			}
			if _, err := instance.Disconnect(rec, o); err != nil {
				t.Fatal(err)
			}
			if gone, _ := os.ReadFile(path); string(gone) != c.body {
				t.Errorf("after connect and disconnect:\n%q\nwant:\n%q", gone, c.body)
			}
		})
	}
}

// strictTOML fails t unless data is TOML to a reader that holds to the
// specification (BurntSushi's, which agentctl reads with, lets an inline
// table be extended; Codex's does not).
func strictTOML(t *testing.T, data []byte) {
	t.Helper()
	var m map[string]any
	if err := pelletier.Unmarshal(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), &m); err != nil {
		t.Errorf("not TOML (%v):\n%s", err, data)
	}
}

// TestConnectDisconnectKeepsHandEdit: an entry edited by hand after connect is
// not what agentctl wrote: disconnect refuses it (exit code 4) and leaves
// the file; --force removes it, with the edited file kept as a backup.
// An entry connect wrote is still removed after the instance's own entry
// changed (as a token rotation changes it).
func TestConnectDisconnectKeepsHandEdit(t *testing.T) {
	st := openStore(t)
	for _, c := range []struct{ agent, rel, from, to string }{
		{"cursor", ".cursor/mcp.json", `"command": `, `"env": {"DEBUG": "1"},` + "\n      \"command\": "},
		{"codex", "codex-home/config.toml", "\ncommand = ", "\nenv = { DEBUG = \"1\" }\ncommand = "},
		{"continue", ".continue/mcpServers/agentctl.yaml", "\n", "\n# mine now\n"},
	} {
		t.Run(c.agent, func(t *testing.T) {
			rec, path, o := clientFile(t, st, c.agent, c.rel, "")
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if _, err := instance.Connect(rec, o); err != nil {
				t.Fatal(err)
			}
			connected, _ := os.ReadFile(path)
			edited := strings.Replace(string(connected), c.from, c.to, 1)
			if edited == string(connected) {
				t.Fatalf("no %q in\n%s", c.from, connected)
			}
			if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := instance.Disconnect(rec, o)
			if err == nil || !errors.Is(err, instance.ErrInvalid) || !strings.Contains(err.Error(), "was changed since agentctl connected it") ||
				!strings.Contains(err.Error(), "--force") {
				t.Errorf("disconnect of a hand-edited entry: %v; want it refused, saying how to force it", err)
			}
			if data, _ := os.ReadFile(path); string(data) != edited {
				t.Errorf("disconnect changed the hand-edited file:\n%s", data)
			}
			o.Force = true
			res, err := instance.Disconnect(rec, o)
			if err != nil || res.Action != "removed" {
				t.Fatalf("forced disconnect: %+v, %v", res, err)
			}
			if bak, _ := os.ReadFile(path + instance.BackupSuffix + ".1"); string(bak) != edited || res.Previous != path+instance.BackupSuffix+".1" {
				t.Errorf("backup %q holds\n%s\nwant the hand-edited file", res.Previous, bak)
			}

			// Connected, then the instance's own entry changes: what
			// connect wrote is still agentctl's.
			o.Force = false
			if _, err := instance.Connect(rec, o); err != nil {
				t.Fatal(err)
			}
			own, _ := os.ReadFile(rec.MCPConfigPath)
			changed := strings.Replace(string(own), "serve", "serve\", \"--log-level\", \"debug", 1)
			if c.agent == "continue" {
				changed = strings.Replace(string(own), "\n", "\n# changed\n", 1)
			}
			if err := os.WriteFile(rec.MCPConfigPath, []byte(changed), 0o600); err != nil {
				t.Fatal(err)
			}
			if res, err := instance.Disconnect(rec, o); err != nil || res.Action != "removed" {
				t.Errorf("disconnect after the instance's entry changed: %+v, %v", res, err)
			}
		})
	}
}

// TestConnectBackupRotation: every change keeps the file before it, the
// newest as .agentctl-bak.1, up to BackupsKept; .agentctl-bak keeps the
// file before agentctl first changed it.
func TestConnectBackupRotation(t *testing.T) {
	st := openStore(t)
	rec, path, o := clientFile(t, st, "cursor", ".cursor/mcp.json", `{"mcpServers": {}, "v": 0}`)
	var versions []string
	for i := range instance.BackupsKept + 3 {
		data, _ := os.ReadFile(path)
		versions = append(versions, string(data))
		op := instance.Connect
		if i%2 == 1 {
			op = instance.Disconnect
		}
		if _, err := op(rec, o); err != nil {
			t.Fatal(err)
		}
		// The user changes something else between agentctl's changes.
		data, _ = os.ReadFile(path)
		data = bytes.Replace(data, []byte(`"v": `), []byte(`"v": 1`), 1)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if first, _ := os.ReadFile(path + instance.BackupSuffix); string(first) != versions[0] {
		t.Errorf(".agentctl-bak holds\n%s\nwant the first version", first)
	}
	for n := 1; n <= instance.BackupsKept; n++ {
		got, _ := os.ReadFile(filepath.Join(filepath.Dir(path), filepath.Base(path)+instance.BackupSuffix+"."+string(rune('0'+n))))
		if want := versions[len(versions)-n]; string(got) != want {
			t.Errorf(".%d holds\n%s\nwant\n%s", n, got, want)
		}
	}
	if _, err := os.Stat(path + instance.BackupSuffix + "." + string(rune('0'+instance.BackupsKept+1))); err == nil {
		t.Errorf("more than %d backups kept", instance.BackupsKept)
	}
}

// TestConnectDisconnectRemovesOnlyTheMember: wherever the entry is among
// the servers, on lines of its own or on one line, disconnect takes out
// the member and the comma and space that went with it, and nothing else.
func TestConnectDisconnectRemovesOnlyTheMember(t *testing.T) {
	st := openStore(t)
	const e = `{"command": "x", "args": ["mcp", "serve", "--instance", "ID"]}`
	for _, c := range []struct{ name, body, want string }{
		{"first", "{\n  \"mcpServers\": {\n    \"agentctl\": " + e + ",\n    \"b\": 1e400\n  }\n}\n", "{\n  \"mcpServers\": {\n    \"b\": 1e400\n  }\n}\n"},
		{"middle", "{\"mcpServers\": {\"a\": 1, \"agentctl\": " + e + ", \"b\": 2}}", `{"mcpServers": {"a": 1, "b": 2}}`},
		{"last", "{\"mcpServers\": {\"a\": 1,\n\t\"agentctl\": " + e + "\n}}", "{\"mcpServers\": {\"a\": 1\n}}"},
		{"only", "{\"x\": \"\xff\", \"mcpServers\": { \"agentctl\": " + e + " }}", "{\"x\": \"\xff\", \"mcpServers\": {}}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, path, o := clientFile(t, st, "cursor", ".cursor/mcp.json", "")
			if err := os.WriteFile(path, []byte(strings.ReplaceAll(c.body, "ID", rec.ID)), 0o644); err != nil {
				t.Fatal(err)
			}
			o.Force = true // written by hand
			if res, err := instance.Disconnect(rec, o); err != nil || res.Action != "removed" {
				t.Fatalf("disconnect: %+v, %v", res, err)
			}
			if got, _ := os.ReadFile(path); string(got) != c.want {
				t.Errorf("got\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}

// TestConnectTOMLInlineServers: servers written as an inline table cannot
// take a table of their own: the file is written again as a whole, with
// every value kept.
func TestConnectTOMLInlineServers(t *testing.T) {
	st := openStore(t)
	for _, body := range []string{
		"model = \"o3\"\nmcp_servers = { docs = { command = \"docs\", args = [\"a\"] } }\n",
		"model = \"o3\"\nmcp_servers = { }\n[docs]\ncommand = \"docs\"\n",
		"model = \"o3\"\nmcp_servers.docs.command = \"docs\"\n",
	} {
		t.Run("", func(t *testing.T) { connectTOMLInline(t, st, body) })
	}
}

func connectTOMLInline(t *testing.T, st *instance.Store, body string) {
	rec, path, o := clientFile(t, st, "codex", "codex-home/config.toml", body)
	res, err := instance.Connect(rec, o)
	if err != nil || res.Action != "added" {
		t.Fatalf("connect: %+v, %v", res, err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "written again as a whole") {
		t.Errorf("connect wrote the file again as a whole, and warned %q", res.Warnings)
	}
	after, _ := os.ReadFile(path)
	strictTOML(t, after)
	for _, want := range []string{`model = "o3"`, `command = "docs"`, rec.ID} {
		if !strings.Contains(string(after), want) {
			t.Errorf("no %q in\n%s", want, after)
		}
	}
	if res, err := instance.Disconnect(rec, o); err != nil || res.Action != "removed" {
		t.Fatalf("disconnect: %+v, %v", res, err)
	}
	if gone, _ := os.ReadFile(path); strings.Contains(string(gone), rec.ID) || !strings.Contains(string(gone), `command = "docs"`) {
		t.Errorf("after disconnect:\n%s", gone)
	}
}
