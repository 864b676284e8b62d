package mcpserver

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/mcpserver/mount"
)

// TestNewTakesResolvedMounts: mounts given resolved (an instance's record,
// checked by whoever read it) are served as they are, not resolved again:
// their effective prefix stands, though resolving the mount would give
// another.
func TestNewTakesResolvedMounts(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.md"), []byte("# A\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(agents.NamespacingNone, newFakeStore())
	cfg.KBIndexDir = t.TempDir()
	m := mount.Mount{Kind: mount.KindKB, Name: "docs", Path: dir}
	cfg.Resolved = []mount.Resolved{{Mount: m, EffectivePrefix: "kept", PrefixOrigin: mount.OriginExplicit}}
	ep, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	if _, ok := ep.Registry().Lookup("kept__concept_read"); !ok {
		t.Errorf("the resolved prefix was not used: %v", ep.Registry().Names())
	}
	cfg.Resolved, cfg.Mounts = nil, []mount.Mount{m}
	again, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if _, ok := again.Registry().Lookup("concept_read"); !ok {
		t.Errorf("a single mount resolved by New has no prefix: %v", again.Registry().Names())
	}
}
