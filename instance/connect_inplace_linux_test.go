package instance_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/internal/testkit"
)

// umaskEnv sets the edit helper's umask (octal).
const umaskEnv = "AGENTCTL_TEST_UMASK"

func init() {
	beforeEdit = func() {
		if v := os.Getenv(umaskEnv); v != "" {
			m, _ := strconv.ParseUint(v, 8, 32)
			syscall.Umask(int(m))
		}
	}
}

// TestConnectMakesFilesAsTheUmaskSays: a client file connect makes gets
// the mode the user's umask gives new files (0666 less it), as an editor's
// would: private under umask 077, group-writable under 002.
func TestConnectMakesFilesAsTheUmaskSays(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for umask, want := range map[string]os.FileMode{"077": 0o600, "002": 0o664, "022": 0o644} {
		path := filepath.Join(t.TempDir(), "new", "mcp.json")
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), editHelperEnv+"="+path, umaskEnv+"="+umask)
		cmd.Stdin = strings.NewReader(`{"mcpServers": {"agentctl": {}}}`)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("umask %s: %v\n%s", umask, err, out)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("umask %s: the file made is %v (%v); want %v", umask, fi.Mode().Perm(), err, want)
		}
	}
}

// TestConnectBacksUpBeforeItChanges: on a file system with room for the
// file's new version but not for its backup too, connect changes nothing
// and says why, leaving no temporary file; with room, the backup is there.
// (Before, the backup was written after the rename: on a full disk the
// file was changed and no backup made.)
func TestConnectBacksUpBeforeItChanges(t *testing.T) {
	fsys := testkit.SmallFileSystem(t, 1<<20, "connect's order of backup and change is covered on root's machines (CI) only")
	ws := filepath.Join(fsys, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(ws, "mcp.json")
	page := os.Getpagesize()
	was := []byte(`{"mcpServers": {}, "pad": "` + strings.Repeat("x", page+page/2) + `"}`)
	next := []byte(`{"mcpServers": {"agentctl": {}}, "pad": "` + strings.Repeat("x", page+page/2) + `"}`)
	if err := os.WriteFile(path, was, 0o644); err != nil {
		t.Fatal(err)
	}
	filler := testkit.Fill(t, fsys)
	defer filler.Free()
	filler.FreePages(t, 3) // the new version's two pages, and one
	_, err := instance.EditFileForTest(path, next)
	if err == nil {
		t.Fatal("connect on a file system without room for the backup: no error")
	}
	if !strings.Contains(err.Error(), "nothing was changed") || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("error %q; want the backup's ENOSPC, and nothing changed", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, was) {
		t.Errorf("the file was changed without a backup:\n%.60s", got)
	}
	if left, _ := filepath.Glob(filepath.Join(ws, "*")); len(left) != 1 {
		t.Errorf("files left beside it: %q", left)
	}
	filler.Free()
	res, err := instance.EditFileForTest(path, next)
	if err != nil {
		t.Fatal(err)
	}
	if bak, _ := os.ReadFile(res.Previous); !bytes.Equal(bak, was) {
		t.Errorf("backup %q holds %.60q; want the file as it was", res.Previous, bak)
	}
}

// TestConnectKeepsAnotherUsersFile: a user who may write a file that
// another user owns (through its group) cannot give a new version that
// owner: connect writes into the file instead, which keeps its owner,
// group and mode, and backs it up first. A version holding a token is
// refused, nothing changed, when others may read the file and connect
// may not change that. Needs root, to make the users (CI runs as root).
func TestConnectKeepsAnotherUsersFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a file of one user's and a process of another's needs root (CI runs as root)")
	}
	const group = 4242 // the file's group; the editor is in it
	dir := t.TempDir()
	for d := dir; d != filepath.Dir(os.TempDir()) && d != "/"; d = filepath.Dir(d) {
		if strings.HasPrefix(d, os.TempDir()) && d != os.TempDir() {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helper := filepath.Join(dir, "instance.test")
	if data, err := os.ReadFile(exe); err != nil || os.WriteFile(helper, data, 0o755) != nil {
		t.Fatalf("copy the test binary: %v", err)
	}
	shared := filepath.Join(dir, "shared")
	if err := os.Mkdir(shared, 0o775); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(os.Chown(shared, 0, group), os.Chmod(shared, 0o775)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(shared, "mcp.json")
	was := []byte(`{"mcpServers": {}}`)
	edit := func(next []byte) (string, error) {
		cmd := exec.Command(helper)
		cmd.Env = append(os.Environ(), editHelperEnv+"="+path)
		cmd.Stdin = bytes.NewReader(next)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{group}}}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	check := func(want []byte) {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || st.Gid != group || fi.Mode().Perm() != 0o664 {
			t.Errorf("the file is %d:%d %v; want 0:%d -rw-rw-r--, as it was", st.Uid, st.Gid, fi.Mode().Perm(), group)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
			t.Errorf("the file holds %s; want %s", got, want)
		}
	}
	for _, s := range []func() error{
		func() error { return os.WriteFile(path, was, 0o664) },
		func() error { return os.Chown(path, 0, group) },
		func() error { return os.Chmod(path, 0o664) },
	} {
		if err := s(); err != nil {
			t.Fatal(err)
		}
	}

	next := []byte(`{"mcpServers": {"agentctl": {"command": "agentctl"}}}`)
	if out, err := edit(next); err != nil {
		t.Fatalf("edit as another member of the group: %v\n%s", err, out)
	}
	check(next)
	if bak, err := os.ReadFile(path + instance.BackupSuffix + ".1"); err != nil || !bytes.Equal(bak, was) {
		t.Errorf("backup: %q, %v; want the file as it was", bak, err)
	}

	token := []byte(`{"mcpServers": {"agentctl": {"headers": {"Authorization": "Bearer ` + instance.TokenPrefix + strings.Repeat("a", 43) + `"}}}}`)
	out, err := edit(token)
	if err == nil || !strings.Contains(out, "bearer token") || !strings.Contains(out, "nothing was changed") {
		t.Errorf("a token into a file others may read, by a user who may not change that: %v\n%s", err, out)
	}
	check(next)
}

// TestConnectKeepsHardLinks: a file with another name (a hard link, as some
// dotfile managers make) is written into, not replaced: both names show
// the new version.
func TestConnectKeepsHardLinks(t *testing.T) {
	dir := t.TempDir()
	path, other := filepath.Join(dir, "mcp.json"), filepath.Join(dir, "dotfiles-mcp.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(path, other); err != nil {
		t.Fatal(err)
	}
	next := []byte(`{"mcpServers": {"agentctl": {}}}`)
	if _, err := instance.EditFileForTest(path, next); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, other} {
		if got, _ := os.ReadFile(p); !bytes.Equal(got, next) {
			t.Errorf("%s holds %s; want the new version", filepath.Base(p), got)
		}
	}
}

// TestConnectInPlaceOnAFullDisk: a hard-linked file written in place, whose
// room runs out once agentctl opened it: the error says nothing changed,
// and nothing did, its mode included (a token's version makes the file
// 0600 only once the room is there).
func TestConnectInPlaceOnAFullDisk(t *testing.T) {
	fsys := testkit.SmallFileSystem(t, 1<<20, "the in-place write on a full disk is covered on root's machines (CI) only")
	path := filepath.Join(fsys, "mcp.json")
	was := []byte(`{"mcpServers": {}}`)
	if err := os.WriteFile(path, was, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(path, path+".other-name"); err != nil {
		t.Fatal(err)
	}
	next := []byte(`{"mcpServers": {"agentctl": {"headers": {"Authorization": "Bearer ` + instance.TokenPrefix + strings.Repeat("a", 43) + `"}}}, "pad": "` +
		strings.Repeat("x", 3*os.Getpagesize()) + `"}`)
	var filler *testkit.Filler
	defer instance.SetConnectHookForTest(func(stage, _ string) {
		if stage == "in-place" {
			filler = testkit.Fill(t, fsys)
		}
	})()
	_, err := instance.EditFileForTest(path, next)
	if filler == nil {
		t.Fatal("the file was not written in place")
	}
	filler.Free()
	if err == nil || !strings.Contains(err.Error(), "nothing was changed") || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("error %v; want no room, and nothing changed", err)
	}
	fi, _ := os.Stat(path)
	if got, _ := os.ReadFile(path); !bytes.Equal(got, was) || fi.Mode().Perm() != 0o644 {
		t.Errorf("after the refusal the file is %v and holds %.40q; want it as it was", fi.Mode().Perm(), got)
	}
}

// TestDisconnectScrubOnAFullDisk: a backup the token cannot be taken out
// of (no room for its new version) is named in a warning that says what to
// do; disconnect does not pretend it is clean.
func TestDisconnectScrubOnAFullDisk(t *testing.T) {
	fsys := testkit.SmallFileSystem(t, 1<<20, "a scrub on a full disk is covered on root's machines (CI) only")
	st := openStore(t)
	rec := httpInstance(t, st, fsys)
	o := instance.ConnectOptions{Scope: instance.ScopeWorkspace}
	path := filepath.Join(fsys, ".cursor", "mcp.json")
	tokenLeftInBackup(t, rec, path, 3)
	filler := testkit.Fill(t, fsys)
	defer filler.Free()
	res, err := instance.Disconnect(rec, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Scrubbed) != 0 || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], path+instance.BackupSuffix+".3") ||
		!strings.Contains(res.Warnings[0], "token rotate") {
		t.Errorf("disconnect: scrubbed %q, warned %q; want a warning naming the backup and what to do", res.Scrubbed, res.Warnings)
	}
}

// TestDisconnectScrubKeepsTheBackupsOwner: a backup the token is taken out
// of keeps its owner and mode (root disconnecting a user's instance).
func TestDisconnectScrubKeepsTheBackupsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a backup to another user needs root (CI runs as root)")
	}
	st := openStore(t)
	ws := t.TempDir()
	rec := httpInstance(t, st, ws)
	o := instance.ConnectOptions{Scope: instance.ScopeWorkspace}
	if _, err := instance.Connect(rec, o); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(ws, ".cursor", "mcp.json")
	bak := path + instance.BackupSuffix // not rotated
	withToken, _ := os.ReadFile(path)
	if err := errors.Join(os.WriteFile(bak, withToken, 0o640), os.Chown(bak, 65534, 65534), os.Chmod(bak, 0o640)); err != nil {
		t.Fatal(err)
	}
	res, err := instance.Disconnect(rec, o)
	if err != nil || !slices.Contains(res.Scrubbed, bak) {
		t.Fatalf("disconnect: %+v, %v; want %s scrubbed", res, err, bak)
	}
	fi, err := os.Stat(bak)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65534 || st.Gid != 65534 || fi.Mode().Perm() != 0o640 {
		t.Errorf("the backup is now %d:%d %v; want 65534:65534 -rw-r-----", st.Uid, st.Gid, fi.Mode().Perm())
	}
}
