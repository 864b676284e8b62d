package provision_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/cmd/internal/provision"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
	"github.com/agentctl/agentctl/mcpserver/mount"
)

// definition is a catalog agent's definition.
func definition(t *testing.T, id string) *agents.Definition {
	t.Helper()
	cat, err := agents.Load(agents.LoadOptions{UserDir: filepath.Join(t.TempDir(), "none")})
	if err != nil {
		t.Fatal(err)
	}
	def, err := cat.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	return def
}

// opener opens a store in dir and counts the opens.
func opener(t *testing.T, dir string, opens *int) provision.Opener {
	return func(ctx context.Context) (*instance.Store, error) {
		*opens++
		return instance.Open(ctx, dir)
	}
}

// kbDirs makes empty knowledge-base folders under a new directory.
func kbDirs(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if err := os.Mkdir(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func kb(name, path string) mount.Mount {
	return mount.Mount{Kind: mount.KindKB, Name: name, Path: path}
}

// createWith provisions an instance of agent with mounts in a new state directory.
func createWith(t *testing.T, agent string, mod func(*provision.CreateOptions), mounts ...mount.Mount) (*instance.Record, provision.Toolset, *instance.Store) {
	t.Helper()
	state := t.TempDir()
	opens := 0
	o := provision.CreateOptions{Definition: definition(t, agent), Workspace: t.TempDir(), Executable: "/opt/agentctl", Mounts: mounts}
	if mod != nil {
		mod(&o)
	}
	rec, plan, err := provision.Create(context.Background(), opener(t, state, &opens), o)
	if err != nil {
		t.Fatal(err)
	}
	st, err := instance.Open(context.Background(), state)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return rec, plan, st
}

func TestCreateWritesPlanAndFiles(t *testing.T) {
	dir := kbDirs(t, "docs", "Team Notes")
	rec, plan, _ := createWith(t, "auggie", nil, kb("docs", filepath.Join(dir, "docs")), kb("Team Notes", filepath.Join(dir, "Team Notes")))
	if len(rec.Mounts) != 2 || rec.Mounts[1].EffectivePrefix != "team_notes" || rec.Mounts[1].PrefixOrigin != mount.OriginDerived {
		t.Fatalf("record mounts %+v", rec.Mounts)
	}
	if rec.ToolPrefixMode != string(mount.PrefixModeMountName) {
		t.Errorf("prefix mode %q", rec.ToolPrefixMode)
	}
	if got := plan.Announcements(); len(got) != 2 || !strings.Contains(got[1], "team_notes__") {
		t.Errorf("announcements %q", got)
	}
	if !slices.ContainsFunc(plan.Tools, func(p mcpserver.NamedTool) bool { return p.Canonical == "team_notes__concept_read" }) {
		t.Errorf("plan lacks team_notes__concept_read: %+v", plan.Tools)
	}
	data, err := os.ReadFile(filepath.Join(rec.Dir, "instructions.md"))
	if err != nil || !strings.Contains(string(data), "docs__concept_search") {
		t.Fatalf("instructions.md: %v\n%s", err, data)
	}
}

// TestCreateDefaults: what a create that sets nothing records, the values
// the endpoint would use by default.
func TestCreateDefaults(t *testing.T) {
	rec, _, _ := createWith(t, "auggie", nil)
	if rec.ServerName != instance.DefaultServerName || rec.ToolPrefixMode != string(mount.PrefixModeMountName) ||
		time.Duration(rec.QuestionTimeout) != mcpserver.DefaultQuestionTimeout {
		t.Errorf("defaults: server name %q, prefix mode %q, question timeout %s", rec.ServerName, rec.ToolPrefixMode, time.Duration(rec.QuestionTimeout))
	}
	rec, _, _ = createWith(t, "auggie", func(o *provision.CreateOptions) { o.QuestionTimeout = time.Minute })
	if time.Duration(rec.QuestionTimeout) != time.Minute {
		t.Errorf("question timeout %s, want the 1m given", time.Duration(rec.QuestionTimeout))
	}
}

func TestCreateRefusesBeforeOpeningTheStore(t *testing.T) {
	dir := kbDirs(t, "a")
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	badTemplate := filepath.Join(dir, "skill.md")
	if err := os.WriteFile(badTemplate, []byte("use {{tool:nope}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*provision.CreateOptions)
		want string
	}{
		{"a folder that is a file", func(o *provision.CreateOptions) { o.Mounts = []mount.Mount{kb("a", file)} }, "is not a directory"},
		{"a knowledge base without a path", func(o *provision.CreateOptions) { o.Mounts = []mount.Mount{kb("a", "")} }, `knowledge base "a" has no path`},
		{"a bad server name", func(o *provision.CreateOptions) { o.ServerName = "Caps" }, `server name "Caps"`},
		{"two mounts with one prefix", func(o *provision.CreateOptions) {
			o.Mounts = []mount.Mount{kb("a", filepath.Join(dir, "a")), kb("A", filepath.Join(dir, "a"))}
		}, `both get the tool prefix "a"`},
		{"a mount named like the server", func(o *provision.CreateOptions) {
			o.Mounts = []mount.Mount{kb("agentctl", filepath.Join(dir, "a")), kb("b", filepath.Join(dir, "a"))}
		}, "agentctl"},
		{"a missing template", func(o *provision.CreateOptions) {
			o.Templates = []provision.TemplateFile{{Target: "instructions.md", File: filepath.Join(dir, "missing.md")}}
		}, "missing.md"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opens := 0
			o := provision.CreateOptions{Definition: definition(t, "auggie"), Workspace: t.TempDir(), Executable: "/opt/agentctl"}
			tc.mod(&o)
			_, _, err := provision.Create(context.Background(), opener(t, t.TempDir(), &opens), o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if !errors.Is(err, instance.ErrInvalid) {
				t.Errorf("%v is not invalid input", err)
			}
			if opens != 0 {
				t.Errorf("the store was opened for a refused create")
			}
		})
	}
	t.Run("an unknown placeholder", func(t *testing.T) {
		// Placeholders are expanded for the new record, in the store's create.
		o := provision.CreateOptions{Definition: definition(t, "auggie"), Workspace: t.TempDir(), Executable: "/opt/agentctl",
			Templates: []provision.TemplateFile{{Target: "skills/skill.md", File: badTemplate}}}
		state := t.TempDir()
		opens := 0
		_, _, err := provision.Create(context.Background(), opener(t, state, &opens), o)
		if err == nil || !strings.Contains(err.Error(), badTemplate+":1") || !errors.Is(err, instance.ErrInvalid) {
			t.Fatalf("err %v, want the template's file and line, invalid", err)
		}
		if ents, _ := os.ReadDir(filepath.Join(state, "instances")); len(ents) != 0 {
			t.Errorf("a failed create left %v", ents)
		}
	})
}

func TestTemplateFiles(t *testing.T) {
	got, err := provision.TemplateFiles("in/guide.md", []string{"a/review.md", "b/fix.md"})
	if err != nil {
		t.Fatal(err)
	}
	want := []provision.TemplateFile{{"instructions.md", "in/guide.md"}, {"skills/review.md", "a/review.md"}, {"skills/fix.md", "b/fix.md"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := provision.TemplateFiles("", []string{"a/review.md", "b/review.md"}); err == nil ||
		err.Error() != "a/review.md and b/review.md would both be written as skills/review.md; rename one" {
		t.Errorf("clash: %v", err)
	}
}

func TestRenderFilesKeepsTemplates(t *testing.T) {
	dir := kbDirs(t, "docs")
	// A prefix client: the transport name is the canonical name.
	rec, plan, _ := createWith(t, "claude-code", nil, kb("docs", filepath.Join(dir, "docs")))
	files, err := provision.RenderFiles(rec, plan, []provision.Template{
		{Target: "instructions.md", Source: "Ask with {{tool:ask_user_question}}; read with {{tool:docs/concept_read}}.\n", Origin: "guide.md"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(files["instructions.md"]); got != "Ask with ask_user_question_agentctl; read with concept_read.\n" {
		t.Errorf("instructions.md = %q", got)
	}
	if got := string(files["templates/instructions.md"]); !strings.Contains(got, "{{tool:ask_user_question}}") {
		t.Errorf("the template is not kept: %q", got)
	}
}

func TestRecordToolsetRefusesAnEditedRecord(t *testing.T) {
	dir := kbDirs(t, "docs", "notes")
	rec, _, _ := createWith(t, "auggie", nil, kb("docs", filepath.Join(dir, "docs")), kb("notes", filepath.Join(dir, "notes")))
	if _, err := provision.RecordToolset(rec); err != nil {
		t.Fatalf("the created record: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*instance.Record)
		want string
	}{
		{"a name that cannot derive a prefix", func(r *instance.Record) { r.Mounts[0].Name = "3D docs" },
			`cannot derive a tool prefix from its name ("3D docs" -> "3d_docs": starts with a digit)`},
		{"a stored prefix that no longer matches", func(r *instance.Record) { r.Mounts[0].Name = "wiki" },
			`the record says mount "wiki" has prefix "docs" (derived), but it resolves to "wiki" (derived)`},
		{"a bad prefix mode", func(r *instance.Record) { r.ToolPrefixMode = "sometimes" }, "sometimes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := *rec
			c.Mounts = slices.Clone(rec.Mounts)
			tc.edit(&c)
			_, err := provision.RecordToolset(&c)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), rec.ID) || !errors.Is(err, instance.ErrInvalid) {
				t.Fatalf("err %v, want invalid, naming the instance and %q", err, tc.want)
			}
		})
	}
}

// An external server's command that is not found is a warning, not an
// error; knowledge bases and URL servers have nothing to look up.
func TestPlanWarnsOfAMissingCommand(t *testing.T) {
	plan := provision.Toolset{Mounts: []mount.Resolved{
		{Mount: mount.Mount{Kind: mount.KindServer, Name: "web", Command: "web-mcp"}},
		{Mount: mount.Mount{Kind: mount.KindServer, Name: "gone", Command: "no-such-mcp"}},
		{Mount: mount.Mount{Kind: mount.KindServer, Name: "api", URL: "https://h/mcp"}},
		{Mount: mount.Mount{Kind: mount.KindKB, Name: "docs", Path: "/kb"}},
	}}
	var looked []string
	got := plan.Warnings(func(cmd string) (string, error) {
		looked = append(looked, cmd)
		if cmd == "web-mcp" {
			return "/usr/bin/web-mcp", nil
		}
		return "", errors.New("executable file not found in $PATH")
	})
	if len(looked) != 2 || len(got) != 1 || !strings.Contains(got[0], `MCP server "gone": command "no-such-mcp" is not found`) {
		t.Fatalf("looked up %q, warnings %q", looked, got)
	}
}
