package kb

import (
	"context"
	"testing"
)

func TestTitles(t *testing.T) {
	for _, tc := range []struct {
		content, title, frontMatterTitle string
	}{
		{"---\ntitle: Plain\n---\nbody", "Plain", "Plain"},
		{"---\ntitle: \"Quoted: yes\"\n---\n", "Quoted: yes", "Quoted: yes"},
		{"---\ntitle: 'It''s single'\n---\n", "It's single", "It's single"},
		{"---\ntitle: \"esc \\\"q\\\"\"\n---\n", `esc "q"`, `esc "q"`},
		{"---\ntitle: With comment # note\n---\n", "With comment", "With comment"},
		{"---\r\ntitle: CRLF\r\n---\r\nbody", "CRLF", "CRLF"},
		{"\ufeff---\ntitle: BOM\n---\n", "BOM", "BOM"},
		{"---\ntitle: >\n  Folded\n  title\nother: x\n---\n", "Folded title", "Folded title"},
		{"---\nauthor: x\n---\n# From heading\n", "From heading", ""},
		{"---\n  title: nested, not top-level\n---\n# H\n", "H", ""},
		{"# Heading #\ntext", "Heading", ""},
		{"intro\n```\n# not a heading\n```\n# Real\n", "Real", ""},
		{"## Second level only\n", "", ""},
		{"---\ntitle: unterminated\n# Heading\n", "Heading", ""}, // no closing ---: no front matter
		{"", "", ""},
	} {
		if got := conceptTitle([]byte(tc.content)); got != tc.title {
			t.Errorf("conceptTitle(%q) = %q, want %q", tc.content, got, tc.title)
		}
		if got, _, _ := splitFrontMatter([]byte(tc.content)); got != tc.frontMatterTitle {
			t.Errorf("front matter title of %q = %q, want %q", tc.content, got, tc.frontMatterTitle)
		}
	}
	// Read gives the front-matter title only; list and search fall back to
	// the heading.
	kb, _ := openTest(t, "docs", map[string]string{"h.md": "# Heading only\n\nsome words\n"}, Options{})
	ctx := context.Background()
	r, err := kb.Read(ctx, "h")
	if err != nil || r.Title != "" {
		t.Fatalf("read title %q %v", r.Title, err)
	}
	l, _ := kb.List(ctx, "", "", 0)
	s, _ := kb.Search(ctx, "words", 0)
	if l.Concepts[0].Title != "Heading only" || s.Results[0].Title != "Heading only" {
		t.Fatalf("list %v search %v", l, s)
	}
}
