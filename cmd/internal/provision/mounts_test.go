package provision_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/cmd/internal/provision"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
	"github.com/agentctl/agentctl/mcpserver/mount"
)

func TestMountAddRenamesAndReexpands(t *testing.T) {
	dir := kbDirs(t, "a", "b")
	rec, _, st := createWith(t, "claude-code", nil, kb("a", filepath.Join(dir, "a")))
	ctx := context.Background()

	// The single mount has no prefix; a second one gives both one.
	ch, err := provision.PlanMountAdd(rec, []mount.Mount{kb("b", filepath.Join(dir, "b"))}, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []provision.Rename{
		{Old: "concept_list", New: "a__concept_list"}, {Old: "concept_read", New: "a__concept_read"},
		{Old: "concept_search", New: "a__concept_search"}, {Old: "concept_write", New: "a__concept_write"},
	}
	if !slices.Equal(ch.Renames, want) {
		t.Errorf("renames %v, want %v", ch.Renames, want)
	}
	updated, err := ch.Apply(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if len(updated.Mounts) != 2 || updated.Mounts[0].EffectivePrefix != "a" {
		t.Fatalf("mounts %+v", updated.Mounts)
	}
	// The generated instructions.md is written again for the new names.
	if data, _ := os.ReadFile(filepath.Join(rec.Dir, "instructions.md")); !strings.Contains(string(data), "a__concept_read") {
		t.Errorf("instructions.md after the change:\n%s", data)
	}

	// Applying the first plan again: the mounts changed since it was made.
	if _, err := ch.Apply(ctx, st); err == nil || !errors.Is(err, instance.ErrInvalid) || !strings.Contains(err.Error(), "changed while this command ran") {
		t.Errorf("a stale change: %v", err)
	}

	// Removing b gives a its bare names back.
	ch, err = provision.PlanMountRemove(updated, "b")
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Renames) != 4 || ch.Renames[1] != (provision.Rename{Old: "a__concept_read", New: "concept_read"}) {
		t.Errorf("renames on remove: %v", ch.Renames)
	}
	if _, err := provision.PlanMountRemove(updated, "c"); !errors.Is(err, instance.ErrNotFound) || !strings.Contains(err.Error(), "the instance's mounts: a, b") {
		t.Errorf("removing an unknown mount: %v", err)
	}
}

func TestMountAddChecksTheNewFolders(t *testing.T) {
	dir := kbDirs(t, "a")
	rec, _, _ := createWith(t, "auggie", nil, kb("a", filepath.Join(dir, "a")))
	_, err := provision.PlanMountAdd(rec, []mount.Mount{kb("b", filepath.Join(dir, "nowhere"))}, "")
	if err == nil || !strings.Contains(err.Error(), `knowledge base "b": `+filepath.Join(dir, "nowhere")+" does not exist") {
		t.Errorf("err %v", err)
	}
}

// TestMountAddNameInUse: a mount of a name the instance already mounts is
// refused saying so, what that mount serves, and how to replace it (not
// "X and X have the same name").
func TestMountAddNameInUse(t *testing.T) {
	dir := kbDirs(t, "a", "b")
	rec, _, _ := createWith(t, "auggie", nil, kb("docs", filepath.Join(dir, "a")))
	_, err := provision.PlanMountAdd(rec, []mount.Mount{kb("docs", filepath.Join(dir, "b"))}, "")
	if err == nil || !errors.Is(err, instance.ErrInvalid) || !strings.Contains(err.Error(), `the instance already mounts "docs" (the knowledge base `+filepath.Join(dir, "a")+`); remove it first (agentctl instance mount remove `+rec.ID+` docs)`) {
		t.Errorf("err %v", err)
	}
}

func TestMountAddTemplateExpansion(t *testing.T) {
	// A template naming a mount's tool by MOUNT/TOOL expands to its new name.
	dir := kbDirs(t, "a", "b")
	skill := filepath.Join(dir, "review.md")
	if err := os.WriteFile(skill, []byte("Use {{tool:a/concept_read}}.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, _, st := createWith(t, "claude-code", func(o *provision.CreateOptions) {
		o.Templates = []provision.TemplateFile{{Target: "skills/review.md", File: skill}}
	}, kb("a", filepath.Join(dir, "a")))
	read := func() string {
		data, err := os.ReadFile(filepath.Join(rec.Dir, "skills", "review.md"))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	if got := read(); got != "Use concept_read.\n" {
		t.Fatalf("created: %q", got)
	}
	ch, err := provision.PlanMountAdd(rec, []mount.Mount{kb("b", filepath.Join(dir, "b"))}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Apply(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "Use a__concept_read.\n" {
		t.Errorf("after the change: %q", got)
	}
}

func TestPrefixRenames(t *testing.T) {
	server := func(name, prefix string) mount.Resolved {
		return mount.Resolved{Mount: mount.Mount{Kind: mount.KindServer, Name: name, Command: "x"}, EffectivePrefix: prefix}
	}
	before := []mount.Resolved{server("web", ""), server("db", "db"), {Mount: kb("docs", "/d"), EffectivePrefix: ""}}
	after := []mount.Resolved{server("web", "web"), server("db", "db"), {Mount: kb("docs", "/d"), EffectivePrefix: "docs"}}
	got := provision.PrefixRenames(before, after)
	want := []provision.Rename{{Old: "mcp web: <tool>", New: "web__<tool>"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestRenames(t *testing.T) {
	tool := func(m, base, canonical string) mcpserver.NamedTool {
		return mcpserver.NamedTool{Mount: m, Base: base, Canonical: canonical}
	}
	before := []mcpserver.NamedTool{tool("", "ask_user_question", "ask_user_question_agentctl"), tool("a", "concept_read", "concept_read"), tool("gone", "concept_read", "gone__concept_read")}
	after := []mcpserver.NamedTool{tool("", "ask_user_question", "ask_user_question_agentctl"), tool("a", "concept_read", "a__concept_read"), tool("b", "concept_read", "b__concept_read")}
	got := provision.Renames(before, after)
	want := []provision.Rename{{Old: "concept_read", New: "a__concept_read"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestMountChangeThatBreaksATemplateChangesNothing(t *testing.T) {
	// {{tool:concept_read}} names the one mount's tool; with two mounts it
	// is ambiguous, so the change is refused and the record stays.
	dir := kbDirs(t, "a", "b")
	guide := filepath.Join(dir, "guide.md")
	if err := os.WriteFile(guide, []byte("Read with {{tool:concept_read}}.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, _, st := createWith(t, "claude-code", func(o *provision.CreateOptions) {
		o.Templates = []provision.TemplateFile{{Target: "instructions.md", File: guide}}
	}, kb("a", filepath.Join(dir, "a")))
	ch, err := provision.PlanMountAdd(rec, []mount.Mount{kb("b", filepath.Join(dir, "b"))}, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = ch.Apply(context.Background(), st)
	if err == nil || !errors.Is(err, instance.ErrInvalid) || !strings.Contains(err.Error(), `several mounts offer "concept_read"`) {
		t.Fatalf("err %v", err)
	}
	got, err := st.Get(context.Background(), rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Mounts) != 1 {
		t.Errorf("the refused change was stored: %+v", got.Mounts)
	}
}
