//go:build unix

package instance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRootOwnedRefusal: the check Gemini CLI makes of its system settings
// file, made before a run: a group- or world-writable directory above the
// file, or (for another user) an owner that is not root, is named.
func TestRootOwnedRefusal(t *testing.T) {
	dir := t.TempDir() // under a world-writable temporary directory, or owned by a user
	f := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(f, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	why := RootOwnedRefusal(f)
	if why == "" {
		t.Fatalf("%s: no refusal, want one (a temporary directory is never root-owned and private all the way up)", f)
	}
	if !strings.Contains(why, "writable by group or others") && !strings.Contains(why, "not root") {
		t.Fatalf("refusal %q names no cause", why)
	}
	if os.Geteuid() == 0 {
		// Root owns all of /etc's chain: nothing to refuse.
		if why := RootOwnedRefusal("/etc/hostname"); why != "" && !strings.Contains(why, "no such file") {
			t.Fatalf("/etc/hostname: %q, want no refusal", why)
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		if why := RootOwnedRefusal(f); !strings.Contains(why, dir) || !strings.Contains(why, "writable by group or others") {
			t.Fatalf("refusal %q, want %s named as writable by others", why, dir)
		}
	}
}
