package kb

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCleanConceptID(t *testing.T) {
	for id, want := range map[string]string{
		"a": "a", "guides/setup": "guides/setup", "guides/setup.md": "guides/setup",
		"with space/ü": "with space/ü", "a.b": "a.b", "a..b": "a..b", "x.MD": "x.MD",
		// NFC: the decomposed spelling is the precomposed one.
		"cafe\u0301": "caf\u00e9", "caf\u00e9": "caf\u00e9", "notes/cafe\u0301.md": "notes/caf\u00e9",
		"Cafe": "Cafe", "ab:c": "ab:c", "1:x": "1:x",
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
		" a":                     "starts or ends with a space",
		"a ":                     "starts or ends with a space",
		"a/ b":                   `the name " b" starts or ends with a space`,
		"a /b":                   `the name "a " starts or ends with a space`,
		"a\u00a0":                "starts or ends with a space",
		"a\x7fb":                 "control character",
		"a\u0085b":               "control character", // C1 NEL
		"evil\u202etxt.md":       "bidirectional control U+202E",
		"a\u202ab":               "U+202A",
		"a\u2066b":               "U+2066",
		"a\u2069b":               "U+2069",
		"a\u200eb":               "U+200E",
		"a\u200fb":               "U+200F",
		"C:foo":                  `drive letter "C:"`,
		`c:\x`:                   `drive letter "c:"`,
		"C:/x":                   `drive letter "C:"`,
		"z:":                     `drive letter "z:"`,
	} {
		_, err := CleanConceptID(id)
		if !errors.Is(err, ErrInvalidConceptID) || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), `e.g. "guides/setup"`) {
			t.Errorf("CleanConceptID(%q) = %v; want an error about %q", id, err, why)
		}
	}
}

// TestConceptIDNormalForms: the two spellings of "café" are one concept,
// whichever was used to write it; its file is named in NFC.
func TestConceptIDNormalForms(t *testing.T) {
	const nfc, nfd = "caf\u00e9", "cafe\u0301"
	ctx := context.Background()
	for _, tc := range []struct{ write, read string }{{nfc, nfd}, {nfd, nfc}} {
		kb, dir := openTest(t, "docs", nil, Options{})
		if _, err := kb.Write(ctx, tc.write, "# Caf\u00e9\n"); err != nil {
			t.Fatal(err)
		}
		out, err := kb.Read(ctx, tc.read)
		if err != nil {
			t.Fatalf("wrote %+q, read %+q: %v", tc.write, tc.read, err)
		}
		if out.ID != nfc || out.Content != "# Caf\u00e9\n" {
			t.Errorf("wrote %+q, read %+q: %+v; want id %+q", tc.write, tc.read, out, nfc)
		}
		if _, err := os.Stat(filepath.Join(dir, nfc+".md")); err != nil {
			t.Errorf("wrote %+q: the file is not named in NFC: %v", tc.write, err)
		}
		list, err := kb.List(ctx, "", "", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Concepts) != 1 || list.Concepts[0].ID != nfc {
			t.Errorf("wrote %+q: list %+v; want the one concept %+q", tc.write, list.Concepts, nfc)
		}
	}
}

func FuzzCleanConceptID(f *testing.F) {
	for _, s := range []string{"a", "guides/setup.md", "../x", "a/../../x", "/etc/passwd", `a\b`, "a\x00b", "", ".", "..", "a/..", "...", "a/.../b", "x.md.md", "C:/x", "~/x", "a//b", "cafe\u0301", " a", "a\u202eb", "a\u0301"} {
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
