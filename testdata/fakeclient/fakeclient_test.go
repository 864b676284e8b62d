package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// bin holds fakeclient installed under every client name, and upstream.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fakeclient-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = dir
	code := func() int {
		for out, pkg := range map[string]string{"fakeclient": ".", "upstream": "../upstream"} {
			if b, err := exec.Command("go", "build", "-o", filepath.Join(dir, out), pkg).CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, b)
				return 1
			}
		}
		for name := range clients {
			if err := os.Symlink("fakeclient", filepath.Join(dir, name)); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		return m.Run()
	}()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is one run of the fake client.
type result struct {
	stdout, stderr string
	code           int
	rep            report
}

// fake runs client in a new workspace holding files (path → content, where
// {up} stands for the upstream command), with env added to a clean
// environment (HOME is a temporary directory).
func fake(t *testing.T, files map[string]string, env []string, client string, args ...string) result {
	t.Helper()
	ws := t.TempDir()
	up, _ := json.Marshal(filepath.Join(bin, "upstream"))
	for p, content := range files {
		content = strings.ReplaceAll(content, `"{up}"`, string(up))
		p = filepath.Join(ws, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(filepath.Join(bin, client), args...)
	cmd.Dir = ws
	cmd.Env = append(baseEnv(t), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(ws, "report.json")); err == nil {
		if err := json.Unmarshal(data, &r.rep); err != nil {
			t.Fatalf("report: %v\n%s", err, data)
		}
	}
	t.Logf("%s %q: exit %d\n%s%s", client, args, r.code, r.stdout, r.stderr)
	return r
}

// baseEnv is the environment without the variables the clients read.
func baseEnv(t *testing.T) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(reportedEnv, k) && k != "HOME" && !strings.HasPrefix(k, "FAKECLIENT_") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+t.TempDir(), "FAKECLIENT_REPORT=report.json", "FAKECLIENT_TIMEOUT=2m", "PATH="+bin+":"+os.Getenv("PATH"))
}

// Configurations in each client's shape, naming the upstream as "up".
const (
	upArgs    = `["-tool-names", "get_instance"]`
	stdJSON   = `{"mcpServers": {"up": {"type": "stdio", "command": "{up}", "args": ` + upArgs + `}}}`
	trusted   = `{"mcpServers": {"up": {"command": "{up}", "args": ` + upArgs + `, "trust": true, "timeout": 600000}}}`
	untrusted = `{"mcpServers": {"up": {"command": "{up}", "args": ` + upArgs + `}}}`
	opencode  = `{"mcp": {"up": {"type": "local", "command": ["{up}", "-tool-names", "get_instance"], "timeout": 5000}}}`
	copilot   = `{"mcpServers": {"up": {"type": "local", "command": "{up}", "args": ` + upArgs + `, "tools": ["*"]}}}`
	grok      = `{"mcpServers": {"up": {"name": "up", "transport": {"type": "stdio", "command": "{up}", "args": ` + upArgs + `}}}}`
	cnYAML    = "name: agentctl\nversion: 0.0.1\nschema: v1\nmcpServers:\n  - name: \"up\"\n    command: \"{up}\"\n    args: " + upArgs + "\n"
	codexHome = "[mcp_servers.up]\ncommand = \"{up}\"\nargs = [\"-tool-names\", \"get_instance\"]\ntool_timeout_sec = 60\n"
)

// TestClientForms runs each client's headless form against a configuration
// where that client looks for it, and the forms it must refuse.
func TestClientForms(t *testing.T) {
	ok := "server=up tools=9 called=get_instance ok"
	tests := []struct {
		name   string
		files  map[string]string
		env    []string
		argv   []string
		code   int
		want   string             // in stdout
		check  func(*report) bool // nil: one server "up" called get_instance
		config []string           // files the report says were read
	}{
		{"auggie", map[string]string{"m.json": stdJSON}, nil,
			[]string{"auggie", "--print", "--dont-save-session", "-i", "say hi", "--mcp-config", "m.json"}, 0, ok, nil, []string{"m.json"}},
		{"auggie config first", map[string]string{"m.json": stdJSON}, nil,
			[]string{"auggie", "--mcp-config", "m.json", "--print", "-i", "say hi"}, 0, ok, nil, []string{"m.json"}},
		{"claude allowed", map[string]string{"m.json": stdJSON}, []string{"MCP_TOOL_TIMEOUT=660000"},
			[]string{"claude", "-p", "say hi", "--mcp-config", "m.json", "--strict-mcp-config", "--allowedTools", "mcp__up"}, 0, ok,
			func(r *report) bool { return r.Env["MCP_TOOL_TIMEOUT"] == "660000" }, []string{"m.json"}},
		{"claude pattern", map[string]string{"m.json": stdJSON}, nil,
			[]string{"claude", "-p", "say hi", "--mcp-config", "m.json", "--strict-mcp-config", "--allowedTools", "Bash,mcp__up__*"}, 0, ok, nil, nil},
		{"claude bypass", map[string]string{"m.json": stdJSON}, nil,
			[]string{"claude", "-p", "say hi", "--mcp-config", "m.json", "--strict-mcp-config", "--permission-mode", "bypassPermissions"}, 0, ok, nil, nil},
		{"claude denied", map[string]string{"m.json": stdJSON}, nil,
			[]string{"claude", "-p", "say hi", "--mcp-config", "m.json", "--strict-mcp-config", "--allowedTools", "mcp__other"}, 3, "called=get_instance error=permission denied", nil, nil},
		{"claude not strict reads .mcp.json", map[string]string{"m.json": stdJSON, ".mcp.json": strings.ReplaceAll(stdJSON, `"up"`, `"proj"`)}, nil,
			[]string{"claude", "-p", "say hi", "--mcp-config", "m.json", "--permission-mode", "bypassPermissions"}, 0, "server=proj tools=9",
			func(r *report) bool { return len(r.Servers) == 2 }, []string{".mcp.json", "m.json"}},
		{"claude variadic flag eats the prompt", map[string]string{"m.json": stdJSON}, nil,
			[]string{"claude", "-p", "--mcp-config", "m.json", "say hi"}, 1, "", nil, nil},
		{"codex home and overrides", map[string]string{"home/config.toml": codexHome}, []string{"CODEX_HOME=home"},
			[]string{"codex", "exec", "--skip-git-repo-check", "-c", "mcp_servers.up.tool_timeout_sec=660",
				"-c", `mcp_servers.extra={command="` + filepath.Join(bin, "upstream") + `", args=["-tool-names","get_instance_x"], tool_timeout_sec=30}`, "say hi"},
			0, "server=extra tools=9 called=get_instance_x ok", func(r *report) bool {
				return r.CodexHome == "home" && len(r.Servers) == 2 && *r.Servers[0].Timeout == 30 && *r.Servers[1].Timeout == 660
			}, []string{"home/config.toml"}},
		{"codex string override", map[string]string{"home/config.toml": codexHome}, []string{"CODEX_HOME=home"},
			[]string{"codex", "exec", "--skip-git-repo-check", "-c", "mcp_servers.up.command=/no/such/upstream", "say hi"},
			3, "server=up tools=0 called=- error=start", nil, nil},
		{"codex default home", map[string]string{}, nil,
			[]string{"codex", "exec", "--skip-git-repo-check", "-c", `mcp_servers.up={command="` + filepath.Join(bin, "upstream") + `", args=["-tool-names","get_instance"]}`, "say hi"},
			0, ok, func(r *report) bool { return strings.HasSuffix(r.CodexHome, "/.codex") && r.Servers[0].Timeout == nil }, []string{}},
		{"codex outside git", nil, nil, []string{"codex", "exec", "say hi"}, 1, "", nil, nil},
		{"gemini trusted", map[string]string{".gemini/settings.json": trusted}, nil,
			[]string{"gemini", "-p", "say hi"}, 0, ok, func(r *report) bool { return r.Servers[0].Trust && *r.Servers[0].Timeout == 600000 }, []string{".gemini/settings.json"}},
		{"gemini untrusted", map[string]string{".gemini/settings.json": untrusted}, nil,
			[]string{"gemini", "-p", "say hi"}, 3, "server=up tools=0 called=- error=server not trusted", nil, nil},
		{"gemini system settings win", map[string]string{".gemini/settings.json": untrusted, "sys.json": trusted}, []string{"GEMINI_CLI_SYSTEM_SETTINGS_PATH=sys.json"},
			[]string{"gemini", "-p", "say hi"}, 0, ok, nil, []string{".gemini/settings.json", "sys.json"}},
		{"qwen trusted", map[string]string{".qwen/settings.json": trusted}, nil, []string{"qwen", "-p", "say hi"}, 0, ok, nil, []string{".qwen/settings.json"}},
		{"qwen reads its own file", map[string]string{".gemini/settings.json": trusted}, nil, []string{"qwen", "-p", "say hi"}, 3, "servers=0", nil, nil},
		{"opencode OPENCODE_CONFIG", map[string]string{"oc.json": opencode, "opencode.json": `{"mcp": {}}`}, []string{"OPENCODE_CONFIG=oc.json"},
			[]string{"opencode", "run", "say", "hi"}, 0, ok, func(r *report) bool { return *r.Servers[0].Timeout == 5000 }, []string{"oc.json"}},
		{"kilo opencode.json", map[string]string{"opencode.json": opencode}, nil, []string{"kilo", "run", "say hi"}, 0, ok, nil, []string{"opencode.json"}},
		{"copilot", map[string]string{"c.json": copilot}, nil,
			[]string{"copilot", "-p", "say hi", "--allow-all-tools", "--additional-mcp-config", "@c.json"}, 0, ok, nil, []string{"c.json"}},
		{"copilot denied", map[string]string{"c.json": copilot}, nil,
			[]string{"copilot", "-p", "say hi", "--additional-mcp-config", "@c.json"}, 3, "error=permission denied", nil, nil},
		{"copilot without tools", map[string]string{"c.json": stdJSON}, nil,
			[]string{"copilot", "-p", "say hi", "--allow-all-tools", "--additional-mcp-config", "@c.json"}, 3, `error=no "tools" list`, nil, nil},
		{"continue", map[string]string{"c.yaml": cnYAML}, nil, []string{"cn", "--config", "c.yaml", "--auto", "-p", "say hi"}, 0, ok, nil, []string{"c.yaml"}},
		{"continue denied", map[string]string{"c.yaml": cnYAML}, nil, []string{"cn", "--config", "c.yaml", "-p", "say hi"}, 3, "error=permission denied", nil, nil},
		{"droid", map[string]string{".factory/mcp.json": stdJSON}, nil, []string{"droid", "exec", "say hi"}, 0, ok, nil, []string{".factory/mcp.json"}},
		{"grok", map[string]string{".grok/settings.json": grok}, nil, []string{"grok", "-p", "say hi"}, 0, ok, nil, []string{".grok/settings.json"}},
		{"unparsable config", map[string]string{"m.json": "{"}, nil, []string{"auggie", "--print", "-i", "x", "--mcp-config", "m.json"}, 1, "", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := fake(t, tt.files, tt.env, tt.argv[0], tt.argv[1:]...)
			if r.code != tt.code || !strings.Contains(r.stdout, tt.want) {
				t.Fatalf("exit %d, want %d; stdout does not contain %q", r.code, tt.code, tt.want)
			}
			if tt.code == 1 || tt.code == 2 {
				return
			}
			if !strings.Contains(r.stdout, "fakeclient: prompt=say hi\n") || r.rep.Prompt != "say hi" || !r.rep.Headless {
				t.Errorf("prompt %q, headless %v, want %q, true", r.rep.Prompt, r.rep.Headless, "say hi")
			}
			if tt.config != nil {
				var got []string
				for _, c := range r.rep.Configs {
					got = append(got, strings.TrimPrefix(c, r.rep.Cwd+"/"))
				}
				if !slices.Equal(got, tt.config) && !(len(got) == 0 && len(tt.config) == 0) {
					t.Errorf("configs read %q, want %q", got, tt.config)
				}
			}
			if tt.check == nil && tt.code == 0 {
				tt.check = func(r *report) bool {
					return len(r.Servers) == 1 && r.Servers[0].Called == "get_instance" && r.Servers[0].Result == "get_instance: "
				}
			}
			if tt.check != nil && !tt.check(&r.rep) {
				b, _ := json.MarshalIndent(r.rep, "", "  ")
				t.Errorf("report does not pass the check:\n%s", b)
			}
		})
	}
}

// TestUnknownFlag: every client refuses a flag it does not have.
func TestUnknownFlag(t *testing.T) {
	for _, name := range slices.Sorted(maps.Keys(clients)) {
		r := fake(t, nil, nil, name, "--no-such-flag", "x")
		if r.code != 2 || !strings.Contains(r.stderr, "unknown flag --no-such-flag") || r.stdout != "" {
			t.Errorf("%s: exit %d, stderr %q, stdout %q; want 2, unknown flag, nothing", name, r.code, r.stderr, r.stdout)
		}
	}
}

// TestExitCodeAndCall: FAKECLIENT_EXIT decides the exit code, failed or not;
// FAKECLIENT_CALL and FAKECLIENT_ARGS choose the call.
func TestExitCodeAndCall(t *testing.T) {
	files := map[string]string{".factory/mcp.json": stdJSON}
	r := fake(t, files, []string{"FAKECLIENT_EXIT=7", "FAKECLIENT_CALL=echo", `FAKECLIENT_ARGS={"text":"hello"}`}, "droid", "exec", "x")
	if r.code != 7 || !strings.Contains(r.stdout, "called=echo ok") || r.rep.Servers[0].Result != "hello" {
		t.Errorf("exit %d, result %q; want 7, hello", r.code, r.rep.Servers[0].Result)
	}
	r = fake(t, files, []string{"FAKECLIENT_EXIT=0", "FAKECLIENT_CALL=fail"}, "droid", "exec", "x")
	if r.code != 0 || !strings.Contains(r.stdout, "called=fail error=tool error: upstream says no") {
		t.Errorf("exit %d; want 0 and the failed call", r.code)
	}
	r = fake(t, files, []string{"FAKECLIENT_CALL=fail"}, "droid", "exec", "x")
	if r.code != 3 {
		t.Errorf("failed call: exit %d, want 3", r.code)
	}
}

// TestWaitSignal: FAKECLIENT_WAIT=signal waits after the session and exits
// 130 on SIGINT, 143 on SIGTERM.
func TestWaitSignal(t *testing.T) {
	for _, sig := range []struct {
		s    syscall.Signal
		name string
		code int
	}{{syscall.SIGINT, "SIGINT", 130}, {syscall.SIGTERM, "SIGTERM", 143}} {
		cmd := exec.Command(filepath.Join(bin, "gemini"), "-p", "x")
		cmd.Dir = t.TempDir()
		cmd.Env = append(baseEnv(t), "FAKECLIENT_WAIT=signal")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		for sc.Scan() && sc.Text() != "fakeclient: waiting" {
		}
		if err := cmd.Process.Signal(sig.s); err != nil {
			t.Fatal(err)
		}
		rest, _ := io.ReadAll(out)
		err = cmd.Wait()
		if cmd.ProcessState.ExitCode() != sig.code || string(rest) != "fakeclient: got "+sig.name+"\n" {
			t.Errorf("%s: %v, output after waiting %q; want exit %d", sig.name, err, rest, sig.code)
		}
	}
}

// TestStdinEcho: FAKECLIENT_STDIN=echo copies stdin, in the interactive form.
func TestStdinEcho(t *testing.T) {
	cmd := exec.Command(filepath.Join(bin, "claude"), "--mcp-config", "m.json")
	cmd.Dir = t.TempDir()
	up, _ := json.Marshal(filepath.Join(bin, "upstream"))
	if err := os.WriteFile(filepath.Join(cmd.Dir, "m.json"), []byte(strings.ReplaceAll(stdJSON, `"{up}"`, string(up))), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(baseEnv(t), "FAKECLIENT_STDIN=echo")
	cmd.Stdin = strings.NewReader("one\ntwo\n")
	out, err := cmd.Output()
	want := "fakeclient: prompt=\nfakeclient: claude server=up tools=9 called=get_instance ok\nfakeclient: stdin=one\nfakeclient: stdin=two\n"
	if err != nil || string(out) != want {
		t.Errorf("%v, output %q, want %q", err, out, want)
	}
}
