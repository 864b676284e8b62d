package kb

import (
	"strings"
	"testing"
)

func TestSnippet(t *testing.T) {
	body := []byte("Short text about Ünïcode wörds and more.")
	if got := snippet(body, []string{"wörds"}); got != string(body) {
		t.Fatalf("short body: %q", got)
	}
	long := []byte(strings.Repeat("aaa ", 100) + "needle in the haystack " + strings.Repeat("é ", 200))
	got := snippet(long, []string{"needle"})
	if !strings.Contains(got, "needle in the haystack") || !strings.HasPrefix(got, "…") || !strings.HasSuffix(got, "…") {
		t.Fatalf("%q", got)
	}
	if !utf8Valid(got) {
		t.Fatalf("invalid UTF-8 snippet %q", got)
	}
	// The window with most distinct terms wins over the first match.
	long = []byte("alpha " + strings.Repeat("x ", 300) + "alpha beta gamma")
	if got := snippet(long, []string{"alpha", "beta", "gamma"}); !strings.Contains(got, "alpha beta gamma") {
		t.Fatalf("%q", got)
	}
}

// TestSnippetStems: a concept found through a stemmed form of a query word
// gets its snippet around that form, not its first 200 bytes.
func TestSnippetStems(t *testing.T) {
	long := []byte(strings.Repeat("filler ", 60) + "see the installation guide " + strings.Repeat("filler ", 60))
	if got := snippet(long, []string{"install"}); !strings.Contains(got, "installation guide") {
		t.Fatalf("%q", got)
	}
	for _, tc := range []struct {
		word, term string
		want       bool
	}{
		{"deploying", "deploy", true}, {"deploy", "deploying", true}, {"zebras", "zebra", true},
		{"installation", "install", true}, {"car", "cart", false}, {"instance", "install", false},
	} {
		if got := sameStem(tc.word, tc.term); got != tc.want {
			t.Errorf("sameStem(%q, %q) = %v", tc.word, tc.term, got)
		}
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\ufffd") == s }
