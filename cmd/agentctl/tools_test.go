package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/mcpserver"

	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/charmbracelet/x/ansi"
)

func TestNewCmdToolsList(t *testing.T) {
	docs := t.TempDir()
	hypothetical := func(mod func(*ToolsTarget)) ToolsTarget {
		tg := ToolsTarget{Agent: "auggie", ServerName: "agentctl", PrefixMode: mount.PrefixModeMountName}
		if mod != nil {
			mod(&tg)
		}
		return tg
	}
	tests := []struct {
		args    []string
		env     []string
		want    ToolsTarget
		output  string
		wantErr string
		invalid bool // the error is invalid input (exit 4), as create's
	}{
		{args: []string{"--agent", "auggie"}, want: hypothetical(nil)},
		{args: []string{"--agent", "all", "--kb", "docs=" + docs, "--mcp", "web=srv --x", "--server-name", "tools", "--tool-prefix-mode", "off", "--connect", "-o", "json"},
			output: formatJSON,
			want: hypothetical(func(tg *ToolsTarget) {
				tg.Agent, tg.ServerName, tg.PrefixMode, tg.Connect = "all", "tools", mount.PrefixModeOff, true
				tg.Mounts = []mount.Mount{{Kind: mount.KindKB, Name: "docs", Path: docs}, {Kind: mount.KindServer, Name: "web", Command: "srv", Args: []string{"--x"}}}
			})},
		{args: []string{"--agent", "auggie"}, env: []string{"AGENTCTL_SERVER_NAME=env", "AGENTCTL_TOOL_PREFIX_MODE=off"},
			want: hypothetical(func(tg *ToolsTarget) { tg.ServerName, tg.PrefixMode = "env", mount.PrefixModeOff })},
		// --connect is the default for an instance.
		{args: []string{"--instance", "fix-login"}, want: ToolsTarget{Instance: "fix-login", Connect: true}},
		{args: []string{"--instance", "fix-login", "--connect=false", "--agent", "all"}, want: ToolsTarget{Instance: "fix-login", Agent: "all"}},
		{args: nil, wantErr: "say what to describe: --instance ID, or --agent ID"},
		{args: []string{"--instance", "a", "--mcp", "web=srv"}, wantErr: "--mcp describes a hypothetical instance"},
		{args: []string{"--agent", "auggie", "--kb", "docs"}, wantErr: `invalid --kb "docs"`},
		{args: []string{"--agent", "auggie", "-o", "yaml"}, wantErr: `invalid output format "yaml"`},
		{args: []string{"--agent", "auggie", "--tool-prefix-mode", "sometimes"}, wantErr: "sometimes"},
		// What instance create refuses, as it refuses it (exit 4).
		{args: []string{"--agent", "auggie", "--kb", "docs=" + filepath.Join(docs, "nope")}, wantErr: `knowledge base "docs": ` + filepath.Join(docs, "nope") + " does not exist", invalid: true},
		{args: []string{"--agent", "auggie", "--mcp", "up=./nope.sh"}, wantErr: `MCP server "up": command "./nope.sh" is `, invalid: true},
	}
	for _, tt := range tests {
		f := newUnloadedTestFactory(t, tt.env...)
		var got *ToolsListOptions
		cmd := NewCmdToolsList(f.Factory, func(_ context.Context, o *ToolsListOptions) error {
			got = o
			return nil
		})
		err := runCommand(f, cmd, tt.args...)
		if tt.wantErr != "" && !strings.Contains(tt.wantErr, "sometimes") && !tt.invalid {
			checkUsageError(t, tt.args, err, tt.wantErr)
			continue
		}
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || tt.invalid && exitCode(context.Background(), err) != ExitInvalid {
				t.Errorf("%q: %v (exit %d), want an error saying %q", tt.args, err, exitCode(context.Background(), err), tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		if got.IO != f.IOStreams || got.Catalog == nil || got.Store == nil {
			t.Errorf("%q: the options lack the factory's streams, catalog or store", tt.args)
		}
		if len(got.Target.Mounts) == 0 {
			got.Target.Mounts = nil
		}
		wantOutput := tt.output
		if wantOutput == "" {
			wantOutput = formatTable
		}
		if !reflect.DeepEqual(got.Target, tt.want) || got.Output != wantOutput {
			t.Errorf("%q:\n got %+v %s\nwant %+v %s", tt.args, got.Target, got.Output, tt.want, wantOutput)
		}
	}
}

func TestNewCmdToolsLint(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		strict bool
	}{
		{[]string{"--agent", "cursor"}, false},
		{[]string{"--agent", "cursor", "--strict"}, true},
	} {
		f := newUnloadedTestFactory(t)
		var got *ToolsLintOptions
		cmd := NewCmdToolsLint(f.Factory, func(_ context.Context, o *ToolsLintOptions) error {
			got = o
			return nil
		})
		if err := runCommand(f, cmd, tt.args...); err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		if got.Target.Agent != "cursor" || got.Strict != tt.strict || got.Target.Connect {
			t.Errorf("%q: %+v", tt.args, got)
		}
	}
}

// runToolsList runs `tools list` with args through the real run function.
func runToolsList(t *testing.T, f *testFactory, args ...string) error {
	t.Helper()
	f.reset()
	return runCommand(f, NewCmdToolsList(f.Factory, nil), args...)
}

func TestToolsListOutput(t *testing.T) {
	kbDir := t.TempDir()
	t.Run("piped: tab-separated, no header", func(t *testing.T) {
		f := newUnloadedTestFactory(t)
		if err := runToolsList(t, f, "--agent", "claude-code", "--kb", "docs="+kbDir, "--kb", "notes="+kbDir+",prefix=n"); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(f.out.String(), "\n"), "\n")
		want := "docs__concept_read\tdocs__concept_read\tmcp__agentctl__docs__concept_read\tkb docs\tderived\t33/64\t-"
		if !slices.Contains(lines, want) || strings.Contains(f.out.String(), "CANONICAL") || strings.Contains(f.out.String(), "│") {
			t.Fatalf("got\n%s\nwant a line %q", f.out, want)
		}
		if !strings.Contains(f.out.String(), "n__concept_read\tn__concept_read\tmcp__agentctl__n__concept_read\tkb notes\texplicit\t") {
			t.Fatalf("got\n%s", f.out)
		}
	})
	t.Run("terminal: a table when it fits, else a block per tool, nothing cut", func(t *testing.T) {
		for _, width := range []int{100, 250} {
			f := newUnloadedTestFactory(t, "NO_COLOR=1")
			f.IOStreams.SetStdoutTTY(true)
			f.IOStreams.SetTerminalWidth(width)
			if err := runToolsList(t, f, "--agent", "auggie", "--kb", "docs="+kbDir); err != nil {
				t.Fatal(err)
			}
			out := f.out.String()
			want := []string{"CANONICAL", "SENT", "MODEL SEES", "SOURCE", "PREFIX", "LENGTH", "PROBLEMS", "│ built-in │", "single-mount", "26/64",
				"│ ask_user_question_agentctl │ ask_user_question │ ask_user_question_agentctl │"}
			if width == 100 {
				want = []string{"ask_user_question_agentctl\n  sent:       ask_user_question\n  model sees: ask_user_question_agentctl\n  source:     built-in\n  length:     26 of 64\n",
					"concept_read\n  sent:       concept_read\n  model sees: concept_read_agentctl\n  source:     kb docs, prefix single-mount\n"}
			}
			for _, s := range want {
				if !strings.Contains(out, s) {
					t.Errorf("width %d: the output lacks %q:\n%s", width, s, out)
				}
			}
			for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				if w := ansi.StringWidth(l); w > width {
					t.Errorf("a line of %d columns on a terminal of %d: %q", w, width, l)
				}
			}
			if strings.Contains(out, "…") {
				t.Errorf("width %d: a name was cut:\n%s", width, out)
			}
		}
	})
	t.Run("several agents: an agent column", func(t *testing.T) {
		f := newUnloadedTestFactory(t)
		if err := runToolsList(t, f, "--agent", "all"); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"auggie\task_user_question_agentctl\task_user_question\task_user_question_agentctl\t",
			"gemini\task_user_question_agentctl\task_user_question_agentctl\tmcp_agentctl_ask_user_question_agentctl\t",
			"kiro\tget_instance_agentctl\tget_instance_agentctl\tget_instance_agentctl\t",
		} {
			if !strings.Contains(f.out.String(), want) {
				t.Errorf("no line starting %q in\n%s", want, f.out)
			}
		}
	})
}

// TestToolsListJSONFields pins the JSON field names of `tools list -o json`
// and `tools lint -o json`, a contract: fields are added, never renamed.
func TestToolsListJSONFields(t *testing.T) {
	f := newUnloadedTestFactory(t)
	// Two knowledge bases: no finding (agentctl's texts name every tool in
	// full; before, a warning per bare name the two share).
	kbDir := t.TempDir()
	if err := runToolsList(t, f, "--agent", "auggie", "--kb", "docs="+kbDir, "--kb", "notes="+kbDir, "-o", "json"); err != nil {
		t.Fatal(err)
	}
	var reports []map[string]json.RawMessage
	if err := json.Unmarshal(f.out.Bytes(), &reports); err != nil {
		t.Fatal(err)
	}
	keysOf := func(raw json.RawMessage) []string {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return keys
	}
	var whole json.RawMessage
	whole, _ = json.Marshal(reports[0])
	if got, want := keysOf(whole), []string{"agent", "findings", "naming", "server_name", "servers", "tools"}; !slices.Equal(got, want) {
		t.Errorf("report fields %v, want %v", got, want)
	}
	var tools, findings []json.RawMessage
	_ = json.Unmarshal(reports[0]["tools"], &tools)
	_ = json.Unmarshal(reports[0]["findings"], &findings)
	// A knowledge base's tool has every field (a built-in has no mount, no prefix origin).
	if got, want := keysOf(tools[3]), []string{"base", "canonical", "findings", "kind", "length", "max_length", "model_visible", "mount", "prefix_origin", "source", "status", "transport"}; !slices.Equal(got, want) {
		t.Errorf("tool fields %v, want %v", got, want)
	}
	if len(findings) != 0 {
		t.Errorf("two knowledge bases: findings %s", reports[0]["findings"])
	}

	// An instance whose instructions.md names a knowledge base's tool as
	// Auggie's model does not see it: a warning, in the report's findings.
	fi := newTestFactory(t)
	rec := fi.create(t, "auggie", mount.Mount{Kind: mount.KindKB, Name: "docs", Path: kbDir}, mount.Mount{Kind: mount.KindKB, Name: "notes", Path: kbDir})
	if err := os.WriteFile(filepath.Join(rec.Dir, mcpserver.InstructionsFile), []byte("Read with `docs__concept_read`.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runToolsList(t, fi, "--instance", rec.ID, "-o", "json"); err != nil {
		t.Fatal(err)
	}
	reports = nil
	if err := json.Unmarshal(fi.out.Bytes(), &reports); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(reports[0]["findings"], &findings)
	if len(findings) != 1 {
		t.Fatalf("findings %s", reports[0]["findings"])
	}
	if got, want := keysOf(findings[0]), []string{"code", "fix", "problem", "severity", "source", "tool"}; !slices.Equal(got, want) {
		t.Errorf("finding fields %v, want %v", got, want)
	}

	// tools lint -o json: one array of findings with their agent; warnings
	// do not fail without --strict.
	fi.reset()
	lint := func(args ...string) error {
		return runCommand(fi, NewCmdToolsLint(fi.Factory, nil), append([]string{"--instance", rec.ID}, args...)...)
	}
	if err := lint("-o", "json"); err != nil {
		t.Fatal(err)
	}
	var lints []json.RawMessage
	if err := json.Unmarshal(fi.out.Bytes(), &lints); err != nil || len(lints) != 1 {
		t.Fatalf("%v: %s", err, fi.out)
	}
	if got, want := keysOf(lints[0]), []string{"agent", "code", "fix", "instance", "problem", "severity", "source", "tool"}; !slices.Equal(got, want) {
		t.Errorf("lint fields %v, want %v", got, want)
	}
	fi.reset()
	err := lint("--strict")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != ExitProblems || !strings.Contains(err.Error(), "0 errors, 1 warning") {
		t.Fatalf("--strict with warnings: %v", err)
	}
	if !strings.Contains(fi.out.String(), `auggie/instructions.md: docs__concept_read: line 1 names "docs__concept_read", but the model sees that tool (kb docs) as "docs__concept_read_agentctl"`) {
		t.Fatalf("got %s", fi.out)
	}
}

// TestToolsLintAllAgents: a problem every agent has is given once, for
// "all"; one that depends on the client is given for its agent.
func TestToolsLintAllAgents(t *testing.T) {
	f := newUnloadedTestFactory(t)
	kbDir := t.TempDir()
	// The server name makes kiro's (and only kiro's) names break its
	// charset; an external server that cannot start is every agent's problem.
	cmd := NewCmdToolsLint(f.Factory, nil)
	cmd.SilenceUsage = true // as under the root command
	err := runCommand(f, cmd, "--agent", "all", "--server-name", "my-tools", "--kb", "docs="+kbDir, "--kb", "notes="+kbDir,
		"--mcp", "web="+filepath.Join(kbDir, "nosuch"), "--connect")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != ExitProblems {
		t.Fatalf("got %v, want exit %d", err, ExitProblems)
	}
	lines := strings.Split(strings.TrimSuffix(f.out.String(), "\n"), "\n")
	var all, kiro, other int
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "all/mcp web: -: could not list its tools: "):
			all++
		case strings.HasPrefix(l, "kiro/built-in: get_instance_my-tools: \"get_instance_my-tools\" contains '-', outside the client's charset ^[A-Za-z][A-Za-z0-9_]*$; the client shows it as \"get_instance_my_tools\" (create the instance with a --server-name that"):
			kiro++
		case strings.HasPrefix(l, "all/"), strings.HasPrefix(l, "kiro/"):
		default:
			other++
		}
	}
	if all != 1 || kiro != 1 || other != 0 {
		t.Fatalf("all %d, kiro %d, other %d in\n%s", all, kiro, other, f.out)
	}
}

// TestToolsLintUnverifiedRelease: a client installed from npm in a newer
// release than its definition was verified with is a warning naming both
// releases and the fix; the verified release, or none found, is not.
func TestToolsLintUnverifiedRelease(t *testing.T) {
	cat, err := agents.Load(agents.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	def, err := cat.Lookup("codex")
	if err != nil {
		t.Fatal(err)
	}
	install := func(version string) func(string) (string, error) {
		pkg := filepath.Join(t.TempDir(), "node_modules", "@openai", "codex")
		if err := os.MkdirAll(filepath.Join(pkg, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"@openai/codex","version":"`+version+`"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(pkg, "bin", "codex.js")
		if err := os.WriteFile(bin, nil, 0o755); err != nil {
			t.Fatal(err)
		}
		return func(string) (string, error) { return bin, nil }
	}
	catalog := func() (*agents.Catalog, error) { return cat, nil }
	reports := []toolsReport{{Agent: "codex"}, {Agent: "codex"}}
	got := releaseFindings(catalog, reports, install("999.0.0"))
	if len(got) != 1 || got[0].Code != findingUnverifiedRelease || got[0].Severity != mcpserver.SeverityWarning ||
		!strings.Contains(got[0].Problem, "999.0.0") || !strings.Contains(got[0].Problem, def.SeenWith) || !strings.Contains(got[0].Fix, "make e2e-clients") {
		t.Fatalf("findings %+v, want one unverified-release warning naming 999.0.0 and %s", got, def.SeenWith)
	}
	if got := releaseFindings(catalog, reports, install(def.SeenWith)); len(got) != 0 {
		t.Fatalf("the verified release: %+v, want no finding", got)
	}
	if got := releaseFindings(catalog, reports, func(string) (string, error) { return "", exec.ErrNotFound }); len(got) != 0 {
		t.Fatalf("no client installed: %+v, want no finding", got)
	}
}
