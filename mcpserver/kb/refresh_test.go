package kb

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// waitForSearch polls until check accepts the search's ids.
func waitForSearch(t *testing.T, kb *Base, query string, check func(ids []string) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var ids []string
	for time.Now().Before(deadline) {
		out, err := kb.Search(context.Background(), query, 50)
		if err != nil {
			t.Fatal(err)
		}
		ids = ids[:0]
		for _, r := range out.Results {
			ids = append(ids, r.ID)
		}
		if check(ids) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("search %q: still %v", query, ids)
}

func TestSearchFreshness(t *testing.T) {
	kb, dir := openTest(t, "docs", map[string]string{"a.md": "alpha beta", "sub/b.md": "beta"}, Options{RefreshInterval: 10 * time.Millisecond})
	has := func(want ...string) func([]string) bool {
		return func(ids []string) bool { return slices.Equal(ids, want) }
	}
	waitForSearch(t, kb, "alpha", has("a"))

	// Edits outside agentctl: added, changed (same size too), removed.
	writeFiles(t, dir, map[string]string{"sub/new.md": "gamma", "a.md": "delta beta"})
	waitForSearch(t, kb, "gamma", has("sub/new"))
	waitForSearch(t, kb, "alpha", has())
	waitForSearch(t, kb, "delta", has("a"))
	writeFiles(t, dir, map[string]string{"a.md": "omega beta"}) // same size, same second
	waitForSearch(t, kb, "omega", has("a"))
	if err := os.RemoveAll(filepath.Join(dir, "sub")); err != nil {
		t.Fatal(err)
	}
	waitForSearch(t, kb, "beta gamma", has("a"))

	// Writes through Write are searchable at once, without a refresh.
	kb2, _ := openTest(t, "docs", map[string]string{"a.md": "alpha"}, Options{RefreshInterval: time.Hour})
	ctx := context.Background()
	if s, _ := kb2.Search(ctx, "alpha", 10); len(s.Results) != 1 {
		t.Fatal(s)
	}
	for _, step := range []struct{ id, content, query, want string }{
		{"q/quokka", "# Quokka\nsmiling marsupial", "quokka", "q/quokka"},
		{"a", "now about wombats", "wombats", "a"},
		{"a", "now about wombats", "alpha", ""},
	} {
		if _, err := kb2.Write(ctx, step.id, step.content); err != nil {
			t.Fatal(err)
		}
		s, err := kb2.Search(ctx, step.query, 10)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if len(s.Results) > 0 {
			got = s.Results[0].ID
		}
		if got != step.want || len(s.Results) > 1 {
			t.Fatalf("after writing %s, search %q = %v", step.id, step.query, s.Results)
		}
	}
}
