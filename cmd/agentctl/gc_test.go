package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// agentctl gc, through the built binary: leftovers older than an hour go
// (and are printed, one per line or as a JSON array), a young one and every
// instance stay, and an empty store is fine.
func TestGCRemovesOldLeftovers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)

	if res := e.run(ctx, "gc", "-o", "json"); res.code != 0 || res.stdout != "[]\n" {
		t.Fatalf("gc on a store never created: want [] and exit 0\n%s", res)
	}
	rec := e.create(ctx, "--agent", "auggie")
	instances := filepath.Join(e.state, "instances")
	old := time.Now().Add(-2 * time.Hour)
	mk := func(name string, age time.Time) string {
		p := filepath.Join(instances, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, age, age); err != nil {
			t.Fatal(err)
		}
		return p
	}
	staging := mk(".staging-01m8qv1v3essxycabphczcp77y-1", old)
	deleting := mk(".deleting-01m8qv1v3essxycabphczcp77z", old)
	young := mk(".staging-01m8qv1v3essxycabphczcp770-2", time.Now())
	if err := os.Chtimes(rec.Dir, old, old); err != nil {
		t.Fatal(err)
	}

	res := e.run(ctx, "gc", "-o", "json")
	var removed []string
	if res.code != 0 || json.Unmarshal([]byte(res.stdout), &removed) != nil {
		t.Fatalf("want a JSON array and exit 0\n%s", res)
	}
	slices.Sort(removed)
	if want := []string{deleting, staging}; !slices.Equal(removed, want) {
		t.Errorf("gc removed %v, want %v", removed, want)
	}
	for _, p := range []string{young, rec.Dir} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: want it kept: %v", p, err)
		}
	}
	if res := e.run(ctx, "gc"); res.code != 0 || res.stdout != "" || res.stderr != "Nothing to remove.\n" {
		t.Errorf("second gc: want nothing printed on stdout and \"Nothing to remove.\"\n%s", res)
	}
}

// agentctl gc, through the built binary, removes the search index of a
// knowledge-base folder that no longer exists (once unused for an hour),
// with its other files, and keeps the index of a folder that exists.
func TestGCRemovesStaleIndexes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	index := func(dir string) string {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "a.md"), []byte("alpha"), 0o644); err != nil {
			t.Fatal(err)
		}
		res := e.run(ctx, "kb", "index", dir, "-o", "json")
		var st struct{ Path string }
		if res.code != 0 || json.Unmarshal([]byte(res.stdout), &st) != nil || st.Path == "" {
			t.Fatalf("kb index %s\n%s", dir, res)
		}
		return st.Path
	}
	keptDir, goneDir := filepath.Join(e.work, "kept"), filepath.Join(e.work, "gone")
	kept, gone := index(keptDir), index(goneDir)
	if err := os.RemoveAll(goneDir); err != nil {
		t.Fatal(err)
	}
	// Written a moment ago: kept (a process may be using it).
	if res := e.run(ctx, "gc", "-o", "json"); res.code != 0 || res.stdout != "[]\n" {
		t.Fatalf("gc with a young index of a gone folder: want []\n%s", res)
	}
	old := time.Now().Add(-2 * time.Hour)
	for _, p := range []string{kept, gone} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	res := e.run(ctx, "gc", "-o", "json")
	var removed []string
	if res.code != 0 || json.Unmarshal([]byte(res.stdout), &removed) != nil {
		t.Fatalf("want a JSON array and exit 0\n%s", res)
	}
	if !slices.Equal(removed, []string{gone}) {
		t.Errorf("gc removed %v, want [%s]", removed, gone)
	}
	for _, f := range []string{gone, gone + ".lock"} {
		if _, err := os.Lstat(f); !os.IsNotExist(err) {
			t.Errorf("%s: %v, want it removed", f, err)
		}
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("the index of a folder that exists: %v", err)
	}
	if res := e.run(ctx, "gc"); res.code != 0 || res.stdout != "" || res.stderr != "Nothing to remove.\n" {
		t.Errorf("second gc: want nothing to remove\n%s", res)
	}
}
