//go:build unix

package kb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestOtherUserHelper is the process asNobody starts as another user: it
// does KB_OP (read or write) on the concept KB_ID of the folder KB_DIR and
// prints the error, or "no error".
func TestOtherUserHelper(t *testing.T) {
	op := os.Getenv("KB_OP")
	if op == "" {
		t.Skip("started by asNobody")
	}
	kb, err := Open("docs", os.Getenv("KB_DIR"), Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer kb.Close()
	switch op {
	case "read":
		_, err = kb.Read(context.Background(), os.Getenv("KB_ID"))
	case "write":
		_, err = kb.Write(context.Background(), os.Getenv("KB_ID"), "# Written by nobody\n")
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("no error")
}

// asNobody makes a folder for files of another user than nobody (65534),
// which the test fills, and returns it and a function that does op (read
// or write) on a concept of a knowledge base at a folder, as nobody, and
// returns the error it printed. It skips the test unless it runs as root
// and can start a process as nobody.
func asNobody(t *testing.T) (root string, do func(op, dir, id string) string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run a process as another user")
	}
	root, err := os.MkdirTemp("", "agentctl-kb-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "kb.test")
	copyFile(t, os.Args[0], bin)
	return root, func(op, dir, id string) string {
		t.Helper()
		cmd := exec.Command(bin, "-test.run=^TestOtherUserHelper$", "-test.v=false")
		cmd.Env = append(os.Environ(), "KB_OP="+op, "KB_DIR="+dir, "KB_ID="+id, "GOCOVERDIR=")
		cmd.Dir = root
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Skipf("cannot run a process as another user here: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
}

// TestWriteKeepsFile: concept_write does not replace a file its owner made
// read-only (a rename over it needs only the folder's permission), and a
// file it replaces keeps its group and its permissions, whatever the
// writer's own group and umask.
func TestWriteKeepsFile(t *testing.T) {
	kb, dir := openTest(t, "docs", map[string]string{"ro.md": "# Frozen\n", "shared.md": "# Shared\n"}, Options{})
	ctx := context.Background()
	ro := filepath.Join(dir, "ro.md")
	if err := os.Chmod(ro, 0o444); err != nil {
		t.Fatal(err)
	}
	_, err := kb.Write(ctx, "ro", "# Thawed\n")
	if !errors.Is(err, ErrReadOnly) {
		t.Fatalf("write over a 0444 file: %v, want ErrReadOnly", err)
	}
	for _, want := range []string{`concept "ro" in knowledge base "docs" is read-only`, "-r--r--r--", "chmod u+w"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if b, err := os.ReadFile(ro); err != nil || string(b) != "# Frozen\n" {
		t.Fatalf("the read-only file after the write: %q, %v", b, err)
	}

	// A group of the file's that is not the writer's: nobody's for root,
	// else one of the writer's other groups.
	gid := 65534
	if os.Geteuid() != 0 {
		groups, _ := os.Getgroups()
		i := slices.IndexFunc(groups, func(g int) bool { return g != os.Getegid() })
		if i < 0 {
			t.Skip("this user has one group only")
		}
		gid = groups[i]
	}
	shared := filepath.Join(dir, "shared.md")
	if err := os.Chown(shared, -1, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o664); err != nil {
		t.Fatal(err)
	}
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	if _, err := kb.Write(ctx, "shared", "# Shared, edited\n"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(shared)
	if err != nil {
		t.Fatal(err)
	}
	if g := fi.Sys().(*syscall.Stat_t).Gid; int(g) != gid || fi.Mode().Perm() != 0o664 {
		t.Fatalf("the replaced file has group %d and mode %s, want %d and -rw-rw-r--", g, fi.Mode().Perm(), gid)
	}
}

// TestWriteNotWritable: a file this user may not write, in a folder it
// may, is not replaced.
func TestWriteNotWritable(t *testing.T) {
	root, do := asNobody(t)
	dir := filepath.Join(root, "kb")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil { // whatever the umask
		t.Fatal(err)
	}
	p := filepath.Join(dir, "theirs.md")
	if err := os.WriteFile(p, []byte("# Root's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := do("write", dir, "theirs")
	if want := `concept "theirs" in knowledge base "docs" is read-only for the user agentctl serves as (uid 65534)`; !strings.Contains(got, want) {
		t.Errorf("write as nobody: %q, want %q", got, want)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "# Root's\n" {
		t.Fatalf("the file after the write: %q, %v", b, err)
	}
}

// TestWritePermission: a write into a folder this user may not write is
// refused with an error naming the concept and saying so, never the
// temporary file the system's error names. As root, nobody writes; else
// this user, into folders made read-only.
func TestWritePermission(t *testing.T) {
	uid, asRoot := os.Getuid(), os.Getuid() == 0
	var dir string
	var write func(id string) string
	if asRoot {
		root, do := asNobody(t)
		dir, uid = filepath.Join(root, "kb"), 65534
		write = func(id string) string { return do("write", dir, id) }
	} else {
		dir = filepath.Join(t.TempDir(), "kb")
		write = func(id string) string {
			kb, err := Open("docs", dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer kb.Close()
			_, err = kb.Write(context.Background(), id, "# Written\n")
			return fmt.Sprint(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "guides"), 0o755); err != nil {
		t.Fatal(err)
	}
	if !asRoot {
		for _, d := range []string{filepath.Join(dir, "guides"), dir} {
			if err := os.Chmod(d, 0o555); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(d, 0o755) })
		}
	}
	user := fmt.Sprintf("the user agentctl serves as (uid %d)", uid)
	for id, want := range map[string]string{
		"new":        `concept "new" in knowledge base "docs" cannot be written: the knowledge base's folder or its file is not writable by ` + user + `; give that user write access to them, or write the concept elsewhere`,
		"guides/new": `concept "guides/new" in knowledge base "docs" cannot be written: its folder "guides", a folder on its path, or its file is not writable by ` + user,
		"howtos/new": `concept "howtos/new" in knowledge base "docs" cannot be written: its folder "howtos", a folder on its path, or its file is not writable`,
		"guides/a/b": `concept "guides/a/b" in knowledge base "docs" cannot be written: its folder "guides/a", a folder on its path, or its file is not writable`,
	} {
		got := write(id)
		if !strings.HasPrefix(got, want) || strings.Contains(got, tempMarker) || strings.Contains(got, "permission denied") {
			t.Errorf("write %s: %q, want %q", id, got, want)
		}
	}
}
