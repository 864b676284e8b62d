package kb

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/testkit"
)

func openTest(t testing.TB, name string, files map[string]string, opts Options) (*Base, string) {
	t.Helper()
	dir := t.TempDir()
	testkit.WriteFiles(t, dir, files)
	kb, err := Open(name, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kb.Close() })
	return kb, dir
}

var sampleFiles = map[string]string{
	"index.md":          "---\ntitle: Welcome\n---\nStart here. See guides/setup for installation.\n",
	"guides/setup.md":   "---\ntitle: \"Setup: installing agentctl\"\ntags: [a]\n---\n# Ignored heading\n\nInstall the binary, then run agentctl instance create.\n",
	"guides/upgrade.md": "# Upgrading\n\nReplace the binary. Your instances keep working; the store migrates itself.\n",
	"notes/plain.md":    "No title here, just words about zebras.\n",
	"notes/.hidden.md":  "hidden zebra",
	".git/config.md":    "hidden folder zebra",
	"notes/readme.txt":  "not markdown zebra",
	"notes/x.md.md":     "double suffix zebra",
}

func TestOpenErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	for _, dir := range []string{file, filepath.Join(t.TempDir(), "missing")} {
		if _, err := Open("docs", dir, Options{}); err == nil || !strings.Contains(err.Error(), `knowledge base "docs"`) {
			t.Errorf("Open(%s): %v", dir, err)
		}
	}
	kb, _ := openTest(t, "docs", nil, Options{})
	kb.Close()
	if _, err := kb.Read(context.Background(), "x"); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("read after close: %v", err)
	}
	// Close stops the background refresher of a searched knowledge base.
	kb2, _ := openTest(t, "docs", map[string]string{"a.md": "alpha"}, Options{RefreshInterval: time.Millisecond})
	if _, err := kb2.Search(context.Background(), "alpha", 1); err != nil {
		t.Fatal(err)
	}
	if err := kb2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := kb2.Search(context.Background(), "alpha", 1); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("search after close: %v", err)
	}
}

// TestConcurrentUse runs writes, searches and lists at once (for -race).
func TestConcurrentUse(t *testing.T) {
	kb, _ := openTest(t, "docs", sampleFiles, Options{RefreshInterval: time.Millisecond})
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 30 {
				id := fmt.Sprintf("w%d/c%d", w, i%5)
				if _, err := kb.Write(ctx, id, fmt.Sprintf("# C%d\nconcurrent word%d", i, i)); err != nil {
					t.Error(err)
				}
				if _, err := kb.Search(ctx, "concurrent binary", 5); err != nil {
					t.Error(err)
				}
				if _, err := kb.List(ctx, fmt.Sprintf("w%d/", w), "", 3); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	s, err := kb.Search(ctx, "concurrent", 50)
	if err != nil || len(s.Results) != 20 {
		t.Fatalf("%d results, %v", len(s.Results), err)
	}
	// Each concept is found by the words of its last write (word25 for
	// the c0 of every writer, ...), not of an earlier one.
	for c := range 5 {
		var want []string
		for w := range 4 {
			want = append(want, fmt.Sprintf("w%d/c%d", w, c))
		}
		if ids := searchIDs(t, kb, fmt.Sprintf("word%d", 25+c), 50); !slices.Equal(ids, want) {
			t.Errorf("word%d: %v, want %v", 25+c, ids, want)
		}
	}
}
