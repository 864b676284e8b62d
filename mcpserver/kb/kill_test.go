package kb

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/testkit"
)

// TestKillHelper is the process the kill tests start and kill: it indexes
// (KB_HELPER=index) or writes concepts in a loop (KB_HELPER=write), saying
// on stdout how far it got.
func TestKillHelper(t *testing.T) {
	mode := os.Getenv("KB_HELPER")
	if mode == "" {
		t.Skip("started by the kill tests")
	}
	kb, err := Open("docs", os.Getenv("KB_DIR"), Options{IndexDir: os.Getenv("KB_INDEX_DIR")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	switch mode {
	case "index":
		_, err = kb.Index(ctx, IndexOptions{Progress: func(done, _ int) { fmt.Printf("done %d\n", done) }})
	case "write":
		if _, err = kb.Index(ctx, IndexOptions{}); err != nil {
			break
		}
		for i := 0; err == nil; i++ {
			_, err = kb.Write(ctx, fmt.Sprintf("w/c%d", i%20), fmt.Sprintf("# C\nversion%d", i))
			fmt.Printf("wrote %d\n", i)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("finished")
}

// startHelper starts TestKillHelper and returns it with its stdout's lines.
func startHelper(t *testing.T, mode, dir, indexDir string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelper$", "-test.v=false")
	cmd.Env = append(os.Environ(), "KB_HELPER="+mode, "KB_DIR="+dir, "KB_INDEX_DIR="+indexDir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewScanner(out)
}

// TestKillDuringIndexBuild kills a process building the index once it has
// committed a first batch; the next process uses what it left and completes
// it, and every search is right.
func TestKillDuringIndexBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const n = 3000
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("d%d/c%04d.md", i%10, i)] = fmt.Sprintf("# C%d\nunique%d shared words", i, i)
	}
	dir, indexDir := t.TempDir(), t.TempDir()
	testkit.WriteFiles(t, dir, files)
	ageFiles(t, dir)
	cmd, lines := startHelper(t, "index", dir, indexDir)
	for lines.Scan() {
		if l := lines.Text(); strings.HasPrefix(l, "done ") && l != "done 0" {
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	kb, err := Open("docs", dir, Options{IndexDir: indexDir})
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	st, err := kb.Index(context.Background(), IndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the killed build left %d of %d concepts for the next process to read", st.Read, n)
	if st.Read == 0 {
		t.Log("the helper finished before it was killed")
	}
	if st.Read == n || st.Removed != 0 {
		t.Fatalf("the killed build's batches were not kept: %+v", st)
	}
	for i := 0; i < n; i += 37 {
		want := fmt.Sprintf("d%d/c%04d", i%10, i)
		if ids := searchIDs(t, kb, fmt.Sprintf("unique%d", i), 5); !slices.Equal(ids, []string{want}) {
			t.Fatalf("unique%d: %v, want %s", i, ids, want)
		}
	}
	if out, err := kb.Search(context.Background(), "shared", 50); err != nil || len(out.Results) != 50 {
		t.Fatalf("%d results, %v", len(out.Results), err)
	}
}

// TestKillDuringWrites kills a process writing concepts in a loop; the next
// process, using the index as left (no reconcile: it is fresh), never
// returns a concept for text it no longer has, and after a reconcile finds
// every concept's current text.
func TestKillDuringWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir, indexDir := t.TempDir(), t.TempDir()
	testkit.WriteFiles(t, dir, map[string]string{"a.md": "alpha"})
	cmd, lines := startHelper(t, "write", dir, indexDir)
	for lines.Scan() {
		if lines.Text() == "wrote 200" {
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	kb, err := Open("docs", dir, Options{IndexDir: indexDir, RefreshInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	current := map[string]string{} // word -> concept
	for k := range 20 {
		data, err := os.ReadFile(filepath.Join(dir, "w", fmt.Sprintf("c%d.md", k)))
		if err != nil {
			t.Fatal(err)
		}
		word := strings.TrimPrefix(string(data), "# C\n")
		current[word] = fmt.Sprintf("w/c%d", k)
	}
	check := func() (missing int) {
		t.Helper()
		for i := range 260 {
			word := fmt.Sprintf("version%d", i)
			ids := searchIDs(t, kb, word, 5)
			switch want, ok := current[word]; {
			case !ok && len(ids) != 0:
				t.Fatalf("%s is no concept's text, found in %v", word, ids)
			case ok && len(ids) == 0:
				missing++
			case ok && !slices.Equal(ids, []string{want}):
				t.Fatalf("%s: %v, want %s", word, ids, want)
			}
		}
		return missing
	}
	t.Logf("as the killed process left it, %d of 20 current texts were not in the index yet", check())
	if _, err := kb.Index(context.Background(), IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	if m := check(); m != 0 {
		t.Fatalf("after a reconcile, %d current texts are still not found", m)
	}
}
