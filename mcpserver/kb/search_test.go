package kb

import (
	"context"
	"slices"
	"strings"
	"testing"
)

func TestSearchRanking(t *testing.T) {
	filler := strings.Repeat("lorem ipsum dolor sit amet consectetur ", 20)
	kb, _ := openTest(t, "docs", map[string]string{
		"title.md":   "---\ntitle: Deploying services\n---\n" + filler,
		"body.md":    "---\ntitle: Something else\n---\n" + filler + " we mention deploying once here, near the end of a long text. " + filler,
		"both.md":    "# Deploying with rollbacks\n\nDeploying is easy; rollbacks are easier.\n",
		"nothing.md": filler,
	}, Options{})
	s, err := kb.Search(context.Background(), "Deploying rollbacks", 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range s.Results {
		ids = append(ids, r.ID)
	}
	if !slices.Equal(ids, []string{"both", "title", "body"}) {
		t.Fatalf("ranking %v", s.Results)
	}
	for i := 1; i < len(s.Results); i++ {
		if s.Results[i].Score > s.Results[i-1].Score {
			t.Fatal("not sorted by score")
		}
	}
	body := s.Results[2]
	if !strings.Contains(body.Snippet, "mention deploying once") || !strings.HasPrefix(body.Snippet, "…") || !strings.HasSuffix(body.Snippet, "…") || len(body.Snippet) > 260 {
		t.Fatalf("snippet %q", body.Snippet)
	}
	if s, _ := kb.Search(context.Background(), "Deploying", 1); len(s.Results) != 1 {
		t.Fatal("limit ignored")
	}
	if s, _ := kb.Search(context.Background(), "!!!", 1); len(s.Results) != 0 {
		t.Fatal("a query without words matches nothing")
	}
	if s, _ := kb.Search(context.Background(), "ÜBER", 1); len(s.Results) != 0 {
		t.Fatal(s)
	}
}
