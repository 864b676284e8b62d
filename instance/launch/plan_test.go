package launch

import (
	"errors"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/instance"
)

func catalogDef(t *testing.T, id string) *agents.Definition {
	t.Helper()
	c, err := agents.Load(agents.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var testRecord = &instance.Record{
	ID: "01jq0000000000000000000000", ServerName: "agentctl", Workspace: "/work space",
	Dir: "/state/instances/01jq0000000000000000000000", MCPConfigPath: "/state/instances/01jq0000000000000000000000/cfg.json",
}

var testEntry = instance.ServerEntry{Command: "/bin/agentctl", Args: []string{"mcp", "serve", "--instance", testRecord.ID}}

// TestPlanCatalog pins the command line of a headless run for the clients
// whose forms the issue gives, as observed with the real programs.
func TestPlanCatalog(t *testing.T) {
	cfg := testRecord.MCPConfigPath
	tests := []struct {
		agent string
		args  []string
		env   []EnvVar
	}{
		{"auggie", []string{"--mcp-config", cfg, "--print", "--dont-save-session", "-i", "say hi"}, nil},
		{"claude-code", []string{"--mcp-config", cfg, "--strict-mcp-config", "-p", "say hi", "--allowedTools", "mcp__agentctl"},
			[]EnvVar{{"MCP_TOOL_TIMEOUT", "660000"}}},
		{"codex", []string{"-c", "mcp_servers.agentctl=" + `{command = "/bin/agentctl", args = ["mcp", "serve", "--instance", "01jq0000000000000000000000"], tool_timeout_sec = 660}`,
			"exec", "--skip-git-repo-check", "say hi"}, nil},
		{"gemini", []string{"-p", "say hi"}, []EnvVar{{"GEMINI_CLI_SYSTEM_SETTINGS_PATH", cfg}}},
		{"qwen-code", []string{"-p", "say hi"}, []EnvVar{{"QWEN_CODE_SYSTEM_SETTINGS_PATH", cfg}}},
		{"copilot-cli", []string{"--additional-mcp-config", "@" + cfg, "-p", "say hi", "--allow-all-tools"}, nil},
		{"droid", []string{"exec", "say hi"}, nil},
		{"continue", []string{"--mcp", cfg, "-p", "say hi", "--auto"}, nil},
		{"grok", []string{"-p", "say hi"}, nil},
		{"opencode", []string{"run", "say hi"}, []EnvVar{{"OPENCODE_CONFIG", cfg}}},
		{"kilo", []string{"run", "say hi"}, []EnvVar{{"KILO_CONFIG", cfg}}},
	}
	for _, tt := range tests {
		t.Run(tt.agent, func(t *testing.T) {
			p, err := New(catalogDef(t, tt.agent), testRecord, Options{Mode: Headless, Prompt: "say hi", Entry: testEntry, ToolTimeout: 11 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p.Args, tt.args) {
				t.Errorf("args\n  %q\nwant\n  %q", p.Args, tt.args)
			}
			want := append([]EnvVar{{InstanceEnv, testRecord.ID}}, tt.env...)
			if !reflect.DeepEqual(p.Env, want) {
				t.Errorf("env %q, want %q", p.Env, want)
			}
			if p.Dir != testRecord.Workspace {
				t.Errorf("dir %q, want the workspace", p.Dir)
			}
		})
	}
}

// TestPlanCodexOverrideIsTOML: the -c value Codex parses is TOML that holds
// the endpoint's entry and a tool timeout covering the question timeout.
func TestPlanCodexOverrideIsTOML(t *testing.T) {
	e := instance.ServerEntry{Command: `/odd "path"/agentctl`, Args: []string{"a\\b", "ü"}, Env: map[string]string{"K": "v"}}
	p, err := New(catalogDef(t, "codex"), testRecord, Options{Mode: Headless, Prompt: "x", Entry: e, ToolTimeout: 90*time.Second + time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		MCPServers map[string]struct {
			Command        string            `toml:"command"`
			Args           []string          `toml:"args"`
			Env            map[string]string `toml:"env"`
			ToolTimeoutSec int               `toml:"tool_timeout_sec"`
		} `toml:"mcp_servers"`
	}
	kv := p.Args[1]
	key, val, _ := strings.Cut(kv, "=")
	if _, err := toml.Decode("["+strings.TrimSuffix(key, ".agentctl")+"]\nagentctl = "+val, &doc); err != nil {
		t.Fatalf("%s: %v", kv, err)
	}
	got := doc.MCPServers["agentctl"]
	if got.Command != e.Command || !reflect.DeepEqual(got.Args, e.Args) || got.Env["K"] != "v" || got.ToolTimeoutSec != 91 {
		t.Fatalf("override decodes as %+v", got)
	}
}

func TestPlanModes(t *testing.T) {
	claude := catalogDef(t, "claude-code")
	p, err := New(claude, testRecord, Options{Mode: Interactive, ClientArgs: []string{"--model", "opus"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--mcp-config", testRecord.MCPConfigPath, "--strict-mcp-config", "--model", "opus"}
	if !reflect.DeepEqual(p.Args, want) {
		t.Fatalf("interactive args %q, want %q (no prompt, no unattended flags)", p.Args, want)
	}
	var nr *NotRunnableError
	if _, err := New(catalogDef(t, "vscode-copilot"), testRecord, Options{Mode: Interactive}); !errors.As(err, &nr) || !strings.Contains(err.Error(), "inside the editor") {
		t.Fatalf("vscode-copilot: %v, want a NotRunnableError saying why", err)
	}
	noHeadless := *claude
	noHeadless.Run.Headless, noHeadless.Run.NoHeadless = nil, "no print mode"
	if _, err := New(&noHeadless, testRecord, Options{Mode: Headless, Prompt: "x"}); !errors.As(err, &nr) || !strings.Contains(err.Error(), "no print mode") {
		t.Fatalf("no headless form: %v", err)
	}
	if _, err := New(&noHeadless, testRecord, Options{Mode: Interactive}); err != nil {
		t.Fatalf("the interactive form still works: %v", err)
	}
	bare := *claude
	bare.Run = agents.Run{}
	if _, err := New(&bare, testRecord, Options{Mode: Interactive}); !errors.As(err, &nr) || !strings.Contains(err.Error(), "no [run] recipe") {
		t.Fatalf("no recipe: %v", err)
	}
	droid := catalogDef(t, "droid")
	_, err = New(droid, testRecord, Options{Mode: Headless, Prompt: "x", WorkspaceConfigured: func() (string, string, bool) { return "/w/.factory/mcp.json", "", false }})
	if !errors.As(err, &nr) || !strings.Contains(err.Error(), "instance connect "+testRecord.ID) {
		t.Fatalf("droid without its workspace entry: %v", err)
	}
	if _, err := New(droid, testRecord, Options{Mode: Headless, Prompt: "x", WorkspaceConfigured: func() (string, string, bool) { return "", "", true }}); err != nil {
		t.Fatal(err)
	}
}

func TestRedacted(t *testing.T) {
	p := &Plan{Args: []string{"-p", "hi", "--api-key", "k1", "--token=t1", "--model", "m", "--api-key"},
		Env: []EnvVar{{"AGENTCTL_INSTANCE", "id"}, {"OPENAI_API_KEY", "k2"}, {"GITHUB_TOKEN", "t2"}}}
	r := p.Redacted()
	wantArgs := []string{"-p", "hi", "--api-key", Hidden, "--token=" + Hidden, "--model", "m", "--api-key"}
	if !reflect.DeepEqual(r.Args, wantArgs) {
		t.Errorf("args %q, want %q", r.Args, wantArgs)
	}
	if r.Env[0].Value != "id" || r.Env[1].Value != Hidden || r.Env[2].Value != Hidden {
		t.Errorf("env %q", r.Env)
	}
	if p.Args[3] != "k1" || p.Env[1].Value != "k2" {
		t.Error("Redacted changed the plan itself")
	}
}

// TestShellQuote: what ShellJoin prints, a POSIX shell reads back as the
// same words.
func TestShellQuote(t *testing.T) {
	words := []string{"plain", "", "it's", `a "b" $c`, "x y", "ü", "--k=v", "@/p", "*", "a\nb"}
	out, err := exec.Command("sh", "-c", `for w in `+ShellJoin(words)+`; do printf '%s\0' "$w"; done`).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if !reflect.DeepEqual(got, words) {
		t.Fatalf("sh read back %q, want %q", got, words)
	}
	if ShellQuote("plain") != "plain" {
		t.Error("a plain word is quoted")
	}
}

// TestPlanPromptLikeAFlag: a prompt beginning with '-' is passed with a
// leading space, so a client that takes the prompt as a positional argument
// does not read it as a flag.
func TestPlanPromptLikeAFlag(t *testing.T) {
	p, err := New(catalogDef(t, "codex"), testRecord, Options{Mode: Headless, Prompt: "- fix the login", Entry: testEntry})
	if err != nil {
		t.Fatal(err)
	}
	if last := p.Args[len(p.Args)-1]; last != " - fix the login" {
		t.Fatalf("prompt argument %q", last)
	}
}

// TestPlanKnownIssue: a recipe's known client issue is the headless run's
// warning (Grok's -p hang); an interactive run, where a person watches,
// gets none.
func TestPlanKnownIssue(t *testing.T) {
	cat, err := agents.Load(agents.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	def, err := cat.Lookup("grok")
	if err != nil {
		t.Fatal(err)
	}
	rec := &instance.Record{ID: "01jq0000000000000000000000", Agent: "grok", ServerName: "agentctl", Workspace: "/w",
		Dir: "/state/instances/01jq0000000000000000000000", MCPConfigPath: "/w/.grok/settings.json", ConfigFormat: "grok"}
	p, err := New(def, rec, Options{Mode: Headless, Prompt: "hi", Preview: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(p.Warnings, func(w string) bool {
		return strings.Contains(w, "known grok issue") && strings.Contains(w, "never exits")
	}) {
		t.Fatalf("warnings %q lack grok's known issue", p.Warnings)
	}
	p, err = New(def, rec, Options{Mode: Interactive, Preview: true})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "known grok issue") }) {
		t.Fatalf("an interactive run warned %q", p.Warnings)
	}
}

// TestPlanConfigRootOwned: Gemini CLI ignores a settings file that is not
// root-owned all the way up; a run is refused with the fix then, unless
// `instance connect` has put the entry where Gemini reads it.
func TestPlanConfigRootOwned(t *testing.T) {
	cat, err := agents.Load(agents.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	def, err := cat.Lookup("gemini")
	if err != nil {
		t.Fatal(err)
	}
	rec := &instance.Record{ID: "01jq0000000000000000000000", Agent: "gemini", ServerName: "agentctl", Workspace: "/w",
		Dir: "/tmp/s/instances/01jq0000000000000000000000", MCPConfigPath: "/tmp/s/instances/01jq0000000000000000000000/.gemini/settings.json", ConfigFormat: "gemini"}
	refused := func() string { return "directory /tmp is writable by group or others (mode -rwxrwxrwx)" }
	connected := false
	o := Options{Mode: Headless, Prompt: "hi", ConfigRefusal: refused,
		WorkspaceConfigured: func() (string, string, bool) { return "/w/.gemini/settings.json", "", connected }}
	_, err = New(def, rec, o)
	var nr *NotRunnableError
	if !errors.As(err, &nr) || !strings.Contains(err.Error(), "agentctl instance connect 01jq0000000000000000000000") || !strings.Contains(err.Error(), "/tmp is writable") {
		t.Fatalf("got %v, want a refusal naming the cause and `instance connect`", err)
	}
	o.Preview = true
	if p, err := New(def, rec, o); err != nil || !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "instance connect") }) {
		t.Fatalf("a preview: %v %+v, want a warning", err, p)
	}
	o.Preview, connected = false, true
	if _, err := New(def, rec, o); err != nil {
		t.Fatalf("connected: %v, want the run", err)
	}
	connected = false
	o.ConfigRefusal = func() string { return "" }
	if _, err := New(def, rec, o); err != nil {
		t.Fatalf("a root-owned chain: %v, want the run", err)
	}
}
