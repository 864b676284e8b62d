package kb

import (
	"context"
	"errors"
	"fmt"
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
	if s, _ := kb.Search(context.Background(), "ÜBER", 1); len(s.Results) != 0 {
		t.Fatal(s)
	}
}

// TestSearchNoWords: a query with no words (only signs) is refused as an
// empty one is, with a message that says why.
func TestSearchNoWords(t *testing.T) {
	kb, _ := openTest(t, "docs", map[string]string{"a.md": "alpha"}, Options{})
	for _, q := range []string{"***", `"`, "!!!", "- -- ()", `"*" ^ : () - {}`, strings.Repeat("x", 65)} {
		_, err := kb.Search(context.Background(), q, 5)
		if !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), "has no words to search for") {
			t.Errorf("search %q: %v; want an invalid request saying it has no words", q, err)
		}
	}
}

// TestSearchLongQuery: of a query of more than MaxQueryTerms different
// words, the rarest are searched for, not the first: a concept found only
// by the query's last word is found. The words left out that concepts have
// are listed in Ignored; those no concept has are not (they change
// nothing). More than MaxQueryWords is refused.
func TestSearchLongQuery(t *testing.T) {
	var common []string
	for i := range MaxQueryTerms + 5 {
		common = append(common, fmt.Sprintf("w%03d", i))
	}
	text := strings.Join(common, " ")
	kb, _ := openTest(t, "docs", map[string]string{
		"a.md": text, "b.md": text, "c.md": text, "d.md": text,
		"target.md": "# Target\nzebra",
	}, Options{})
	absent := []string{"nowhere1", "nowhere2", "nowhere3"}
	query := strings.Join(absent, " ") + " " + text + " zebra"
	out, err := kb.Search(context.Background(), query, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Results) == 0 || out.Results[0].ID != "target" {
		t.Fatalf("results %v; want target first, found by the query's last word", out.Results)
	}
	// Kept: zebra and the first 63 of the common words (they are equally
	// common: query order); left out: the last 6.
	if want := common[MaxQueryTerms-1:]; !slices.Equal(out.Ignored, want) {
		t.Errorf("ignored %v, want %v", out.Ignored, want)
	}
	// At most MaxQueryTerms words, none left out: nothing ignored.
	out, err = kb.Search(context.Background(), strings.Join(common[:MaxQueryTerms-1], " ")+" zebra", 10)
	if err != nil || len(out.Ignored) != 0 || out.Results[0].ID != "target" {
		t.Fatalf("%+v, %v", out, err)
	}
	var many []string
	for i := range MaxQueryWords + 1 {
		many = append(many, fmt.Sprintf("m%d", i))
	}
	if _, err := kb.Search(context.Background(), strings.Join(many, " "), 10); !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), "more than 256 different words") {
		t.Errorf("a query of %d words: %v", len(many), err)
	}
}

// TestSearchQuerySyntax: FTS5's query syntax in a query (quotes, "*",
// NEAR(, ":", "^", parentheses, AND, OR, NOT, in upper and lower case) is
// plain text: no error, and the results of its words.
func TestSearchQuerySyntax(t *testing.T) {
	kb, _ := openTest(t, "docs", map[string]string{
		"deploy.md": "# Deploy\nDeploy with care; roll back when needed.",
		"near.md":   "# Station\nThe shop near the station.",
		"and.md":    "# Salt\nSalt and pepper.",
		"not.md":    "# Fridays\nDo not deploy on Fridays.",
		"or.md":     "# Either\nTea or coffee.",
		"title.md":  "# Columns\ntitle: body",
	}, Options{})
	ids := func(q string) []string {
		t.Helper()
		out, err := kb.Search(context.Background(), q, 10)
		if err != nil {
			t.Fatalf("search %q: %v", q, err)
		}
		var ids []string
		for _, r := range out.Results {
			ids = append(ids, r.ID)
		}
		return ids
	}
	for _, c := range []struct {
		query, words string
		first        string
	}{
		{`"deploy"`, "deploy", "deploy"},
		{`deploy*`, "deploy", "deploy"},
		{`"unterminated deploy`, "unterminated deploy", "deploy"},
		{`NEAR(deploy care)`, "near deploy care", "deploy"},
		{`NEAR(station shop, 2)`, "near station shop 2", "near"},
		{`near`, "near", "near"},
		{`title:deploy`, "title deploy", ""},
		{`{title body}: columns`, "title body columns", "title"},
		{`^deploy`, "deploy", "deploy"},
		{`(salt OR pepper)`, "salt or pepper", "and"},
		{`salt AND pepper`, "salt and pepper", "and"},
		{`AND`, "and", "and"},
		{`and`, "and", "and"},
		{`deploy NOT fridays`, "deploy not fridays", "not"},
		{`NOT`, "not", "not"},
		{`Not`, "not", "not"},
		{`OR`, "or", "or"},
		{`tea + coffee`, "tea coffee", "or"},
		{`-deploy`, "deploy", "deploy"},
		{`a:b:c deploy`, "a b c deploy", "deploy"},
	} {
		got, want := ids(c.query), ids(c.words)
		if !slices.Equal(got, want) {
			t.Errorf("search %q: %v; its words %q find %v", c.query, got, c.words, want)
		}
		if c.first != "" && (len(got) == 0 || got[0] != c.first) {
			t.Errorf("search %q: %v, want %s first", c.query, got, c.first)
		}
	}
}

// TestSearchManyTies: a word in more concepts than a SQLite statement
// takes variables (32766), all of them scoring the same, is searched: the
// page of equal scores is decided by id, so every tied concept is looked
// up, which one variable per concept made "too many SQL variables".
func TestSearchManyTies(t *testing.T) {
	kb, _ := openTest(t, "docs", map[string]string{"a.md": "alpha"}, Options{})
	ctx := context.Background()
	ix, err := kb.index(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The index's rows, without their files: ix.search reads no file.
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := newWriteTx(tx)
	const n = 33_000
	for i := range n {
		if err := put(ctx, w, fmt.Sprintf("tie/t%05d", n-1-i), row{size: 7, indexed: true}, []byte("quokka"), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	hits, err := ix.search(ctx, []string{"quokka"}, 3, DefaultMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range hits {
		ids = append(ids, h.id)
	}
	if !slices.Equal(ids, []string{"tie/t00000", "tie/t00001", "tie/t00002"}) {
		t.Fatalf("hits %v", ids)
	}
}
