package kb

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/testkit"
)

func TestListPagination(t *testing.T) {
	files := map[string]string{}
	var all []string
	for i := range 25 {
		id := fmt.Sprintf("p/c%02d", i)
		files[id+".md"] = fmt.Sprintf("# Concept %d\n", i)
		all = append(all, id)
	}
	files["q/other.md"] = "x"
	files["p-sibling.md"] = "x" // sorts between "p" and "p/" bytewise: "-" < "/"
	kb, dir := openTest(t, "docs", files, Options{})
	ctx := context.Background()

	var got []string
	cursor, pages := "", 0
	for {
		out, err := kb.List(ctx, "p/", cursor, 10)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, c := range out.Concepts {
			got = append(got, c.ID)
			if want := "Concept " + strings.TrimLeft(strings.TrimPrefix(c.ID, "p/c"), "0"); c.Title != want && !(c.ID == "p/c00" && c.Title == "Concept 0") {
				t.Errorf("%s title %q", c.ID, c.Title)
			}
		}
		if out.NextCursor == "" {
			break
		}
		if pages == 1 {
			// A concept added behind the cursor does not disturb the pages.
			testkit.WriteFiles(t, dir, map[string]string{"p/a-first.md": "x"})
		}
		cursor = out.NextCursor
	}
	if pages != 3 || !slices.Equal(got, all) {
		t.Fatalf("%d pages: %v", pages, got)
	}

	// Whole listing, deterministic and sorted.
	out, err := kb.List(ctx, "", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Concepts) != 28 || !slices.IsSortedFunc(out.Concepts, func(a, b ConceptSummary) int { return strings.Compare(a.ID, b.ID) }) {
		t.Fatalf("%d concepts", len(out.Concepts))
	}
	// Prefixes that are not folder boundaries, and ones that cannot match.
	for prefix, n := range map[string]int{"p": 27, "p/c1": 10, "q/": 1, "zz/": 0, "../": 0, "p/c00": 1, "/p": 0} {
		out, err := kb.List(ctx, prefix, "", 1000)
		if err != nil || len(out.Concepts) != n {
			t.Errorf("prefix %q: %d concepts, want %d (%v)", prefix, len(out.Concepts), n, err)
		}
	}
	if _, err := kb.List(ctx, "", "!!not-a-cursor", 10); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("bad cursor: %v", err)
	}
	out, _ = kb.List(ctx, "", "", 5000)
	if len(out.Concepts) != 28 {
		t.Fatal("limit above the maximum is clamped")
	}
}

const (
	crashEnv  = "KB_CRASH_WRITER"
	crashSize = 512 << 10
)

// TestCrashWriter is the child process of TestCrashSafety: it writes a
// large concept in a loop, alternating two contents, until it is killed.
func TestCrashWriter(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("helper process of TestCrashSafety")
	}
	kb, err := Open("crash", dir, Options{})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	contents := []string{strings.Repeat("A", crashSize), strings.Repeat("B", crashSize)}
	fmt.Println("ready")
	deadline := time.Now().Add(time.Minute) // never outlive a parent that died
	for i := 0; time.Now().Before(deadline); i++ {
		if _, err := kb.Write(context.Background(), "big", contents[i%2]); err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
	}
	os.Exit(0)
}

func TestCrashSafety(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("needs SIGKILL and subprocesses")
	}
	dir := t.TempDir()
	initial := "# Initial\n"
	testkit.WriteFiles(t, dir, map[string]string{"big.md": initial})
	valid := map[string]string{initial: "initial", strings.Repeat("A", crashSize): "A", strings.Repeat("B", crashSize): "B"}
	seen := map[string]int{}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 6 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashWriter$", "-test.count=1")
		// The writer is killed, so its private search index (made under
		// TMPDIR) is never removed: keep it in a folder the test removes.
		cmd.Env = append(os.Environ(), crashEnv+"="+dir, "TMPDIR="+t.TempDir())
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		ready := false
		for !ready && sc.Scan() {
			if strings.HasPrefix(sc.Text(), "error:") {
				t.Fatal(sc.Text())
			}
			ready = sc.Text() == "ready"
		}
		if !ready {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the writer never became ready")
		}
		time.Sleep(time.Duration(1+rng.IntN(40)) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil { // SIGKILL
			t.Fatal(err)
		}
		cmd.Wait()

		kb, err := Open("crash", dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := kb.Read(context.Background(), "big")
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		which, ok := valid[r.Content]
		if !ok {
			t.Fatalf("round %d: torn concept: %d bytes, starts %q, ends %q", round, len(r.Content), r.Content[:min(8, len(r.Content))], r.Content[max(0, len(r.Content)-8):])
		}
		seen[which]++
		l, err := kb.List(context.Background(), "", "", 0)
		if err != nil || len(l.Concepts) != 1 || l.Concepts[0].ID != "big" {
			t.Fatalf("round %d: list %v %v", round, l, err)
		}
		if s, err := kb.Search(context.Background(), "initial", 10); err != nil || len(s.Results) > 1 {
			t.Fatalf("round %d: search %v %v", round, s, err)
		}
		kb.Close()
	}
	ents, _ := os.ReadDir(dir)
	var temps []string
	for _, e := range ents {
		if isTempName(e.Name()) {
			temps = append(temps, e.Name())
		}
	}
	t.Logf("contents seen after SIGKILL: %v; temporary files left behind: %d", seen, len(temps))

	// Leftover temporary files are removed by a walk once they are stale.
	kb, err := Open("crash", dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	kb.staleTempAge = 0
	if _, err := kb.List(context.Background(), "", "", 0); err != nil {
		t.Fatal(err)
	}
	ents, _ = os.ReadDir(dir)
	for _, e := range ents {
		if isTempName(e.Name()) {
			t.Fatalf("stale temporary file %s not removed", e.Name())
		}
	}
}

// TestNotUTF8: a file that is not UTF-8 text (Latin-1) is not read, since
// a model would get U+FFFD for its bytes and write that back; nor is it
// replaced, whatever is written. List and search still find it.
func TestNotUTF8(t *testing.T) {
	latin1 := "# Caf\xe9\n\nna\xefve notes about zebras\n"
	kb, dir := openTest(t, "docs", map[string]string{"latin.md": latin1, "plain.md": "# Plain\n\nzebras\n"}, Options{})
	ctx := context.Background()
	_, err := kb.Read(ctx, "latin")
	if !errors.Is(err, ErrNotText) {
		t.Fatalf("read: %v, want ErrNotText", err)
	}
	for _, want := range []string{`concept "latin" in knowledge base "docs" is not UTF-8 text`, "0xe9 at offset 5", "iconv -f latin1 -t utf-8"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("read: %q does not say %q", err, want)
		}
	}
	_, err = kb.Write(ctx, "latin", strings.ToValidUTF8(latin1, "\ufffd"))
	if !errors.Is(err, ErrNotText) || !strings.Contains(err.Error(), "0xe9 at offset 5") {
		t.Fatalf("write over it: %v, want ErrNotText", err)
	}
	if b, err := os.ReadFile(dir + "/latin.md"); err != nil || string(b) != latin1 {
		t.Fatalf("the file after a refused write: %q, %v", b, err)
	}
	if out, err := kb.List(ctx, "", "", 0); err != nil || len(out.Concepts) != 2 {
		t.Fatalf("list: %+v, %v", out, err)
	}
	if ids := searchIDs(t, kb, "zebras", 5); !slices.Equal(ids, []string{"latin", "plain"}) && !slices.Equal(ids, []string{"plain", "latin"}) {
		t.Fatalf("search: %v", ids)
	}
	if _, err := kb.Write(ctx, "plain", "# Plain\n\nCaf\u00e9\n"); err != nil {
		t.Fatal(err)
	}
	if out, err := kb.Read(ctx, "plain"); err != nil || out.Content != "# Plain\n\nCaf\u00e9\n" {
		t.Fatalf("%+v, %v", out, err)
	}
}

// TestReadPermission: a concept this user may not read is refused with an
// error naming it and saying so, not with the system's text.
func TestReadPermission(t *testing.T) {
	kb, dir := openTest(t, "docs", map[string]string{"secret.md": "# Secret\n"}, Options{})
	denyOpen(t, kb, dir, "secret.md")
	_, err := kb.Read(context.Background(), "secret")
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("read: %v, want a permission error", err)
	}
	want := fmt.Sprintf(`concept "secret" in knowledge base "docs" cannot be read: its file, or a folder on its path, is not readable by the user agentctl serves as (uid %d); give that user read access to them`, os.Getuid())
	if err.Error() != want {
		t.Fatalf("read: %q, want %q", err, want)
	}
}
