package main

import (
	gobuild "go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// ourImports is what the package in dir (from the repository's root)
// imports of this module, without it (its tests left out), as paths
// relative to the module ("mcpserver/internal/wire").
func ourImports(t *testing.T, dir string) []string {
	t.Helper()
	const module = "github.com/agentctl/agentctl/"
	p, err := gobuild.ImportDir(filepath.Join("..", "..", dir), 0)
	if err != nil {
		t.Fatal(err)
	}
	var ours []string
	for _, imp := range p.Imports {
		if rest, ok := strings.CutPrefix(imp, module); ok {
			ours = append(ours, rest)
		}
	}
	slices.Sort(ours)
	return ours
}

// TestArchitectureSaysWhatPackagesImport: what docs/ARCHITECTURE.md says a
// room imports of ours is what it imports (its import rules are read by
// people, not checked by the compiler).
func TestArchitectureSaysWhatPackagesImport(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(b)), " ")
	if n := strings.Count(string(b), "\n"); n > 250 {
		t.Errorf("docs/ARCHITECTURE.md has %d lines; it keeps to 250", n)
	}
	for _, tc := range []struct {
		claim string   // a sentence of the page, white space collapsed
		dir   string   // the package it is about
		ours  []string // what it imports of ours
	}{
		{"`mcpserver/httpserve` imports the go-sdk and the wire room only", "mcpserver/httpserve", []string{"mcpserver/internal/wire"}},
		{"`instance` imports `agents` and `mcpserver/mount` only", "instance", []string{"agents", "mcpserver/mount"}},
		{"`agents`, `mcpserver/mount`, `mcpserver/kb` and the wire room import nothing of ours", "agents", nil},
		{"`agents`, `mcpserver/mount`, `mcpserver/kb` and the wire room import nothing of ours", "mcpserver/mount", nil},
		{"`agents`, `mcpserver/mount`, `mcpserver/kb` and the wire room import nothing of ours", "mcpserver/kb", nil},
		{"`agents`, `mcpserver/mount`, `mcpserver/kb` and the wire room import nothing of ours", "mcpserver/internal/wire", nil},
	} {
		if !strings.Contains(doc, tc.claim) {
			t.Errorf("docs/ARCHITECTURE.md no longer says %q: update this test with it", tc.claim)
		}
		if got := ourImports(t, tc.dir); !slices.Equal(got, tc.ours) {
			t.Errorf("%s imports %q of ours; docs/ARCHITECTURE.md says %q", tc.dir, got, tc.claim)
		}
	}
	if regexp.MustCompile("`mcpserver/httpserve` imports the go-sdk only").MatchString(doc) {
		t.Errorf("docs/ARCHITECTURE.md says mcpserver/httpserve imports the go-sdk only; it imports %q of ours too", ourImports(t, "mcpserver/httpserve"))
	}
}

// TestInstancePackageDocNamesBothBackends: `go doc ./instance`, where
// docs/ARCHITECTURE.md sends readers, names both of the store's backends.
func TestInstancePackageDocNamesBothBackends(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "..", "instance", "doc.go"), nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	first := strings.Join(strings.Fields(strings.SplitN(f.Doc.Text(), "\n\n", 2)[0]), " ")
	for _, want := range []string{"SQLite", "PostgreSQL"} {
		if !strings.Contains(first, want) {
			t.Errorf("instance's package doc, first paragraph, does not name %s:\n%s", want, first)
		}
	}
	if strings.Contains(first, "the SQLite store") {
		t.Errorf("instance's package doc says the store is SQLite's alone:\n%s", first)
	}
}
