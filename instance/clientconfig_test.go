package instance_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/instance"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestWriteClientConfigGolden pins every format's file byte for byte: without
// a tool timeout (as every record made so far), and with the one a
// 10-minute question timeout gives (11 minutes).
func TestWriteClientConfigGolden(t *testing.T) {
	for _, format := range agents.FormatNames() {
		m, ok := agents.CatalogMCP("", format)
		if !ok {
			t.Fatalf("format %s has no shape", format)
		}
		for _, c := range []struct {
			name string
			e    instance.ServerEntry
		}{
			{"plain", instance.ServerEntry{Command: "/opt/agentctl", Args: []string{"mcp", "serve", "--instance", "01x"}, Trust: true}},
			{"env", instance.ServerEntry{Command: "/opt/a<b>&", Env: map[string]string{"K": "v", "A": "b"}}},
			{"timeout", instance.ServerEntry{Command: "/opt/agentctl", Args: []string{"mcp", "serve"}, ToolTimeout: instance.ToolTimeoutFor(10 * time.Minute)}},
			// A remote entry: the URL, the token as a header, the timeout.
			{"http", instance.ServerEntry{URL: "http://127.0.0.1:7821/instances/01x/mcp", Headers: map[string]string{"Authorization": "Bearer agt_T"},
				Trust: true, ToolTimeout: instance.ToolTimeoutFor(10 * time.Minute)}},
		} {
			t.Run(format+"/"+c.name, func(t *testing.T) {
				dir := t.TempDir()
				rel, err := instance.WriteClientConfig(dir, &m, "tools", c.e)
				if err != nil {
					t.Fatal(err)
				}
				data, err := os.ReadFile(filepath.Join(dir, rel))
				if err != nil {
					t.Fatal(err)
				}
				golden(t, "clientconfig/"+format+"."+c.name, data)
				fi, err := os.Stat(filepath.Join(dir, rel))
				if err != nil {
					t.Fatal(err)
				}
				want := os.FileMode(0o644)
				if c.e.URL != "" {
					want = 0o600 // it holds the token
				}
				if fi.Mode().Perm() != want {
					t.Errorf("%s written with mode %v, want %v", rel, fi.Mode().Perm(), want)
				}
			})
		}
	}
}

// TestToolTimeoutCoversQuestion checks, in each format's own unit, that the
// tool-call timeout written is at least the question timeout.
func TestToolTimeoutCoversQuestion(t *testing.T) {
	for _, q := range []time.Duration{90 * time.Second, 10 * time.Minute, 10*time.Minute + 300*time.Millisecond, 2 * time.Hour} {
		e := instance.ServerEntry{Command: "/x", ToolTimeout: instance.ToolTimeoutFor(q)}
		for _, c := range []struct {
			format, key string
			unit        time.Duration
		}{
			{"codex", "tool_timeout_sec", time.Second},
			{"gemini", "timeout", time.Millisecond},
			{"qwen-code", "timeout", time.Millisecond},
			{"cline", "timeout", time.Second},
			{"goose", "timeout", time.Second},
		} {
			entry, err := instance.ClientEntry(c.format, "s", e)
			if err != nil {
				t.Fatal(err)
			}
			n, ok := entry[c.key].(int64)
			if !ok {
				t.Fatalf("%s: %s = %#v, want an integer", c.format, c.key, entry[c.key])
			}
			if got := time.Duration(n) * c.unit; got < q+instance.ToolTimeoutMargin {
				t.Errorf("%s: %s = %d (%s) is shorter than question timeout %s plus %s", c.format, c.key, n, got, q, instance.ToolTimeoutMargin)
			}
		}
	}
	// No question timeout recorded: no key, except Goose's own 300 s.
	for _, f := range []string{"codex", "gemini", "qwen-code", "cline"} {
		entry, _ := instance.ClientEntry(f, "s", instance.ServerEntry{Command: "/x"})
		if _, ok := entry["timeout"]; ok {
			t.Errorf("%s: timeout written without a question timeout", f)
		}
		if _, ok := entry["tool_timeout_sec"]; ok {
			t.Errorf("%s: tool_timeout_sec written without a question timeout", f)
		}
	}
}

// TestCreateWritesToolTimeout: a record's question timeout reaches the
// client's configuration (Codex's, read as Codex reads it).
func TestCreateWritesToolTimeout(t *testing.T) {
	st := openStore(t)
	rec := create(t, st, "codex", func(o *instance.CreateOptions) { o.QuestionTimeout = 30 * time.Minute })
	var doc struct {
		Servers map[string]struct {
			Command        string `toml:"command"`
			ToolTimeoutSec int    `toml:"tool_timeout_sec"`
		} `toml:"mcp_servers"`
	}
	if _, err := toml.DecodeFile(rec.MCPConfigPath, &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Servers["agentctl"].ToolTimeoutSec; got != 31*60 {
		t.Errorf("tool_timeout_sec = %d, want %d (30 min question + 1 min)", got, 31*60)
	}
	rec = create(t, st, "gemini", func(o *instance.CreateOptions) { o.QuestionTimeout = 30 * time.Minute })
	data, _ := os.ReadFile(rec.MCPConfigPath)
	if !strings.Contains(string(data), `"timeout": 1860000`) {
		t.Errorf("gemini settings without the 31-minute timeout:\n%s", data)
	}
}

// TestClientEntryCopilot: Copilot CLI entries say how to start the server
// ("local") and allow all its tools.
func TestClientEntryCopilot(t *testing.T) {
	entry, err := instance.ClientEntry("copilot-cli", "s", instance.ServerEntry{Command: "/x"})
	if err != nil {
		t.Fatal(err)
	}
	if entry["type"] != "local" || fmt.Sprint(entry["tools"]) != "[*]" {
		t.Errorf("copilot entry %v", entry)
	}
	if _, err := instance.ClientEntry("nope", "s", instance.ServerEntry{}); err == nil || !strings.Contains(err.Error(), `unknown MCP config format "nope"`) {
		t.Errorf("unknown format: %v", err)
	}
}

// TestToolTimeoutWarning: a warning only when the client's limit is below
// the question timeout plus the margin, saying what fits.
func TestToolTimeoutWarning(t *testing.T) {
	def := &agents.Definition{ID: "x", MCP: agents.MCPConfig{ToolTimeoutMax: agents.Duration(5 * time.Minute)}}
	if w := instance.ToolTimeoutWarning(def, 4*time.Minute); w != "" {
		t.Errorf("4m question within a 5m limit: %q", w)
	}
	if w := instance.ToolTimeoutWarning(def, 10*time.Minute); !strings.Contains(w, "lower --question-timeout to 4m0s or less") {
		t.Errorf("10m question over a 5m limit: %q", w)
	}
	def.MCP.ToolTimeoutMax = agents.Duration(30 * time.Second)
	if w := instance.ToolTimeoutWarning(def, time.Minute); !strings.Contains(w, "cannot wait for an answer") {
		t.Errorf("30s limit: %q", w)
	}
	if w := instance.ToolTimeoutWarning(&agents.Definition{ID: "y"}, 100*time.Hour); w != "" {
		t.Errorf("no limit known: %q", w)
	}
}
