package kb

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestCleanConceptID(t *testing.T) {
	for id, want := range map[string]string{
		"a": "a", "guides/setup": "guides/setup", "guides/setup.md": "guides/setup",
		"with space/ü": "with space/ü", "a.b": "a.b", "a..b": "a..b", "x.MD": "x.MD",
	} {
		if got, err := CleanConceptID(id); err != nil || got != want {
			t.Errorf("CleanConceptID(%q) = %q, %v; want %q", id, got, err, want)
		}
	}
	for id, why := range map[string]string{
		"":                       "empty",
		"../x":                   `".." component`,
		"a/../../x":              `".." component`,
		"a/./b":                  `"." component`,
		"/etc/passwd":            "absolute",
		`a\b`:                    "backslash",
		"a\x00b":                 "NUL",
		"a\nb":                   "control character",
		"a//b":                   "empty folder name",
		"a/":                     "names a folder",
		".hidden":                "hidden",
		"a/.git/x":               "hidden",
		".md":                    "no name",
		"x.md.md":                "twice",
		"\xff":                   "UTF-8",
		strings.Repeat("a", 300): "longer than 200",
	} {
		_, err := CleanConceptID(id)
		if !errors.Is(err, ErrInvalidConceptID) || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), `e.g. "guides/setup"`) {
			t.Errorf("CleanConceptID(%q) = %v; want an error about %q", id, err, why)
		}
	}
}

func FuzzCleanConceptID(f *testing.F) {
	for _, s := range []string{"a", "guides/setup.md", "../x", "a/../../x", "/etc/passwd", `a\b`, "a\x00b", "", ".", "..", "a/..", "...", "a/.../b", "x.md.md", "C:/x", "~/x", "a//b"} {
		f.Add(s)
	}
	root := filepath.FromSlash("/kb/root")
	f.Fuzz(func(t *testing.T, id string) {
		c, err := CleanConceptID(id)
		if err != nil {
			if !errors.Is(err, ErrInvalidConceptID) {
				t.Fatalf("%q: unexpected error %v", id, err)
			}
			return
		}
		for part := range strings.SplitSeq(c, "/") {
			if part == ".." || part == "." || part == "" {
				t.Fatalf("%q accepted as %q with component %q", id, c, part)
			}
		}
		rel := c + ".md"
		joined := filepath.Join(root, filepath.FromSlash(rel))
		if !strings.HasPrefix(joined, root+string(filepath.Separator)) || !filepath.IsLocal(filepath.FromSlash(rel)) {
			t.Fatalf("%q accepted as %q, which leaves the root: %s", id, c, joined)
		}
		if again, err := CleanConceptID(c); err != nil || again != c {
			t.Fatalf("%q: canonical id %q is not stable: %q %v", id, c, again, err)
		}
	})
}
