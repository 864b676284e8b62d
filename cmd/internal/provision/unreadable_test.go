//go:build unix

package provision_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/cmd/internal/provision"
	"github.com/agentctl/agentctl/mcpserver/mount"
)

// TestCheckFoldersUnreadable: a knowledge-base folder this user may not
// read is refused when it is mounted (the endpoint, which reads it as the
// same user, would otherwise stop at its start, built-in tools and all).
// As root, whom no mode stops, the check runs again as user nobody.
func TestCheckFoldersUnreadable(t *testing.T) {
	dir := os.Getenv("AGENTCTL_TEST_UNREADABLE")
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "private")
		if err := os.Mkdir(dir, 0o000); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
		if os.Geteuid() == 0 {
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			// Readable by nobody: the test binary and the way to dir.
			for _, p := range []string{exe, filepath.Dir(exe), filepath.Dir(dir), filepath.Dir(filepath.Dir(dir))} {
				if err := os.Chmod(p, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", exe, "-test.run=^TestCheckFoldersUnreadable$", "-test.v")
			cmd.Env = append(os.Environ(), "AGENTCTL_TEST_UNREADABLE="+dir)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "--- PASS: TestCheckFoldersUnreadable") {
				t.Fatalf("as nobody: %v\n%s", err, out)
			}
			return
		}
	}
	_, err := provision.CheckFolders([]mount.Mount{{Name: "docs", Kind: mount.KindKB, Path: dir}})
	if err == nil || !strings.Contains(err.Error(), `knowledge base "docs": `+dir+" cannot be read") || !strings.Contains(err.Error(), "give yourself read access") {
		t.Errorf("an unreadable folder: %v", err)
	}
}
