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
