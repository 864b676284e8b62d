package agents

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestNewerRelease(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"2.1.333", "2.1.332", true},
		{"2.1.332", "2.1.332", false},
		{"2.1.99", "2.1.332", false},
		{"2.2", "2.1.332", true},
		{"1.0.102-beta.1", "1.0.101", true},
		{"v0.62.0", "0.61.0", true},
		{"0.0.34", "", false},
		{"latest", "1.0.0", false},
	} {
		if got := NewerRelease(tc.a, tc.b); got != tc.want {
			t.Errorf("NewerRelease(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestInstalledRelease: the version comes from the npm package's manifest
// above the program that PATH finds, through npm's bin symlink; another
// package's manifest on the way up does not count.
func TestInstalledRelease(t *testing.T) {
	root := t.TempDir()
	pkg := filepath.Join(root, "lib", "node_modules", "@openai", "codex")
	for _, d := range []string{filepath.Join(pkg, "bin"), filepath.Join(root, "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(pkg, "package.json"), `{"name": "@openai/codex", "version": "0.172.0"}`)
	write(filepath.Join(pkg, "bin", "package.json"), `{"name": "not-codex", "version": "9.9.9"}`)
	write(filepath.Join(pkg, "bin", "codex.js"), "")
	link := filepath.Join(root, "bin", "codex")
	if err := os.Symlink(filepath.Join(pkg, "bin", "codex.js"), link); err != nil {
		t.Fatal(err)
	}
	def := &Definition{ID: "codex", Command: []string{"codex"}, NPMPackage: "@openai/codex"}
	found := func(string) (string, error) { return link, nil }
	if v, ok := InstalledRelease(def, found); !ok || v != "0.172.0" {
		t.Fatalf("got %q %v, want 0.172.0", v, ok)
	}
	missing := func(string) (string, error) { return "", errors.New("not found") }
	if _, ok := InstalledRelease(def, missing); ok {
		t.Fatal("a program not found has no release")
	}
	if _, ok := InstalledRelease(&Definition{ID: "x", Command: []string{"codex"}}, found); ok {
		t.Fatal("a definition without an npm package has no release")
	}
}
