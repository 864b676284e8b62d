package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/mcpserver/kb"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scoreKB is the knowledge base of TestKBSearchOneScoreCLIAndEndpoint:
// concepts of words drawn from a Zipf distribution (a few words in most
// concepts, a long tail of rare ones), and 40 identical concepts (equal
// scores for any query: which of them a page holds is the tie-break's).
func scoreKB() (words []string, files, ties map[string]string) {
	for i := range 300 {
		words = append(words, fmt.Sprintf("w%03dx", i))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(words)-1))
	files, ties = map[string]string{}, map[string]string{}
	for i := range 200 {
		var b strings.Builder
		fmt.Fprintf(&b, "# %s %s\n\n", words[zipf.Uint64()], words[rng.IntN(len(words))])
		for range 20 + rng.IntN(120) {
			b.WriteString(words[zipf.Uint64()] + " ")
		}
		files[fmt.Sprintf("c%03d.md", i)] = b.String()
	}
	for i := range 40 {
		ties[fmt.Sprintf("tie/t%02d", i)] = "# Quokka notes\n\nThe quokka and the marmot; " + words[0] + " " + words[1] + ".\n"
	}
	return words, files, ties
}

// TestKBSearchOneScoreCLIAndEndpoint: `agentctl kb search` (JSON and
// table) and an instance's concept_search, served by `agentctl mcp serve`,
// report the same hits with the same scores in the same order for the same
// query over one folder: through an index built in one go (kb index) and
// through another kept up to date (built from part of the folder, the
// tied concepts then written by concept_write, from the last id to the
// first, so that the index's rows are in the other order), and for any
// limit (a page of n is the first n of a larger one).
func TestKBSearchOneScoreCLIAndEndpoint(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	words, files, ties := scoreKB()
	dir := filepath.Join(e.root, "kb")
	write := func(name, content string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Kept up to date, in the instance's state directory: built from half
	// the concepts; the ties written through the endpoint, the rest found
	// by kb index.
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range files {
			if !yield(n) {
				return
			}
		}
	})
	for _, n := range names[:len(names)/2] {
		write(n, files[n])
	}
	e.mustRun(ctx, "kb", "index", dir)
	rec := e.create(ctx, "--agent", "claude-code", "--workspace", e.work, "--kb", "docs="+dir)
	cmd := exec.Command(e.bin, "mcp", "serve", "--instance", rec.ID)
	cmd.Env, cmd.Dir = e.cliEnv(), e.work
	client := mcp.NewClient(&mcp.Implementation{Name: "kb-score-test", Version: "1.0.0"}, nil)
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	call := func(tool string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s %v: %v %+v", tool, args, err, res)
		}
		return res
	}
	tieIDs := slices.Sorted(func(yield func(string) bool) {
		for id := range ties {
			if !yield(id) {
				return
			}
		}
	})
	slices.Reverse(tieIDs)
	for _, id := range tieIDs {
		call("concept_write", map[string]any{"id": id, "content": ties[id]})
	}
	for _, n := range names[len(names)/2:] {
		write(n, files[n])
	}
	e.mustRun(ctx, "kb", "index", dir)

	// Built in one go, in another state directory.
	other := []string{"AGENTCTL_STATE_DIR=" + filepath.Join(e.root, "state-fresh")}
	if res := e.runEnv(ctx, other, "kb", "index", dir); res.code != 0 {
		t.Fatal(res)
	}

	cliSearch := func(env []string, q string, limit int, format string) string {
		t.Helper()
		res := e.runEnv(ctx, env, "kb", "search", dir, q, "--limit", strconv.Itoa(limit), "-o", format)
		if res.code != 0 {
			t.Fatal(res)
		}
		return res.stdout
	}
	cliJSON := func(env []string, q string, limit int) []kb.SearchResult {
		t.Helper()
		var out kb.SearchOutput
		if err := json.Unmarshal([]byte(cliSearch(env, q, limit, "json")), &out); err != nil {
			t.Fatal(err)
		}
		return out.Results
	}
	endpoint := func(q string, limit int) []kb.SearchResult {
		t.Helper()
		raw, err := json.Marshal(call("concept_search", map[string]any{"query": q, "limit": limit}).StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		var out kb.SearchOutput
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		return out.Results
	}
	queries := []string{
		"quokka", "quokka marmot", "marmot " + words[0], words[0], words[0] + " " + words[1],
		words[1] + " " + words[150], words[3] + " " + words[40] + " " + words[200],
		words[0] + " " + words[2] + " " + words[77], "quokka " + words[5] + " " + words[260], words[20] + " " + words[21],
	}
	for _, q := range queries {
		want := cliJSON(other, q, 50)
		if len(want) == 0 {
			t.Fatalf("%q finds nothing", q)
		}
		for i := 1; i < len(want); i++ {
			if a, b := want[i-1], want[i]; a.Score < b.Score || a.Score == b.Score && a.ID >= b.ID {
				t.Fatalf("%q: %s (%g) before %s (%g)", q, a.ID, a.Score, b.ID, b.Score)
			}
		}
		prefix := func(n int) []kb.SearchResult { return want[:min(n, len(want))] }
		for _, c := range []struct {
			path string
			got  []kb.SearchResult
			want []kb.SearchResult
		}{
			{"kb search --limit 10, built in one go", cliJSON(other, q, 10), prefix(10)},
			{"kb search --limit 3, built in one go", cliJSON(other, q, 3), prefix(3)},
			{"kb search --limit 10, kept up to date", cliJSON(nil, q, 10), prefix(10)},
			{"concept_search limit 10, kept up to date", endpoint(q, 10), prefix(10)},
			{"concept_search limit 50, kept up to date", endpoint(q, 50), want},
			{"concept_search limit 1, kept up to date", endpoint(q, 1), prefix(1)},
		} {
			if !slices.Equal(c.got, c.want) {
				t.Errorf("%s, %q:\n got %s\nwant %s", c.path, q, scoreList(c.got), scoreList(c.want))
			}
		}
		// The table shows the same ids and scores, in the same order.
		var rows []string
		for line := range strings.Lines(cliSearch(other, q, 10, "table")) {
			if f := strings.Split(line, "\t"); len(f) == 4 && f[0] != "ID" {
				rows = append(rows, f[0]+":"+f[2])
			}
		}
		if got, want := strings.Join(rows, " "), strings.TrimSpace(scoreList(prefix(10))); got != want {
			t.Errorf("kb search table, %q:\n got %s\nwant %s", q, got, want)
		}
	}
}

func scoreList(rs []kb.SearchResult) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, " %s:%s", r.ID, strconv.FormatFloat(r.Score, 'g', -1, 64))
	}
	return b.String()
}
