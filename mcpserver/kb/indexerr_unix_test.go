//go:build unix

package kb

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentctl/agentctl/internal/testkit"
)

// TestUnwritableHelper is the process TestIndexUnwritable starts as another
// user: it searches KB_DIR with the index under KB_INDEX_DIR, then indexes
// it, and prints the first error.
func TestUnwritableHelper(t *testing.T) {
	if os.Getenv("KB_UNWRITABLE_HELPER") == "" {
		t.Skip("started by TestIndexUnwritable")
	}
	fmt.Println(searchError(os.Getenv("KB_DIR"), os.Getenv("KB_INDEX_DIR")))
}

func searchError(dir, indexDir string) string {
	kb, err := Open("docs", dir, Options{IndexDir: indexDir})
	if err != nil {
		return err.Error()
	}
	defer kb.Close()
	if _, err := kb.Search(context.Background(), "alpha", 5); err != nil {
		return err.Error()
	}
	if _, err := kb.Index(context.Background(), IndexOptions{}); err != nil {
		return err.Error()
	}
	return "no error"
}

// TestIndexUnwritable: an index this user cannot write (a prebuilt index in
// a read-only image, files of another user) fails with a message that says
// so and what to do, not with advice to remove it. The index is built by
// this process; another user searches it: as root, a copy of this test
// binary run as nobody; otherwise this process, after the index's
// permissions are taken away.
func TestIndexUnwritable(t *testing.T) {
	root, err := os.MkdirTemp("", "agentctl-kb-unwritable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		filepath.Walk(root, func(p string, _ os.FileInfo, _ error) error { return os.Chmod(p, 0o755) })
		os.RemoveAll(root)
	})
	dir, indexDir := filepath.Join(root, "kb"), filepath.Join(root, "index")
	testkit.WriteFiles(t, dir, map[string]string{"a.md": "alpha", "b.md": "beta"})
	ageFiles(t, dir)
	kb, err := Open("docs", dir, Options{IndexDir: indexDir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kb.Index(context.Background(), IndexOptions{}); err != nil {
		t.Fatal(err)
	}
	path := kb.IndexFile()
	kb.Close()
	testkit.WriteFiles(t, dir, map[string]string{"c.md": "gamma"}) // so that a search must write
	for _, p := range []string{root, dir, filepath.Join(dir, "a.md"), filepath.Join(dir, "b.md"), filepath.Join(dir, "c.md")} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	search := func() string { return searchError(dir, indexDir) }
	if os.Geteuid() == 0 {
		bin := filepath.Join(root, "kb.test")
		copyFile(t, os.Args[0], bin)
		search = func() string {
			cmd := exec.Command(bin, "-test.run=^TestUnwritableHelper$", "-test.v=false")
			cmd.Env = append(os.Environ(), "KB_UNWRITABLE_HELPER=1", "KB_DIR="+dir, "KB_INDEX_DIR="+indexDir, "GOCOVERDIR=")
			cmd.Dir = root
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Skipf("cannot run a process as another user here: %v\n%s", err, out)
			}
			return string(out)
		}
	}
	// Modes of the index's folder and file: for nobody (root built them),
	// or for this user, who built them.
	for _, c := range []struct {
		name                string
		dirMode, dbMode     os.FileMode
		ownDirMode, ownMode os.FileMode
		problem             string
	}{
		{"folder and file closed", 0o700, 0o600, 0o500, 0o400, "may not write to its folder " + indexDir},
		{"folder and file read-only", 0o755, 0o644, 0o555, 0o444, "may not write to its folder " + indexDir},
		{"file read-only", 0o777, 0o644, 0o700, 0o400, "may not write to " + path},
	} {
		dirMode, dbMode := c.dirMode, c.dbMode
		if os.Geteuid() != 0 {
			dirMode, dbMode = c.ownDirMode, c.ownMode
			if dirMode&0o200 != 0 {
				// Opening the index gives its owner write access back
				// (chmod 0600) once it has opened it read-only; what it
				// says then is not known beforehand, and is not checked.
				c.problem = ""
			}
		}
		if err := os.Chmod(path, dbMode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(indexDir, dirMode); err != nil {
			t.Fatal(err)
		}
		got := search()
		wants := []string{"search index " + path + " cannot be written", "give this user write access to them, or use a state directory it can write to"}
		if c.problem != "" {
			wants = append(wants, c.problem)
		}
		for _, want := range wants {
			if !strings.Contains(got, want) {
				t.Errorf("%s: the error %q does not say %q", c.name, got, want)
			}
		}
		if strings.Contains(got, "remove it") {
			t.Errorf("%s: the error %q advises removing the index", c.name, got)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
