//go:build unix

package instance

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInsecurePassfileRefused: a password the driver would take from a
// password file that others may read is refused, naming the file and the
// fix (psql's libpq ignores such a file); the same file made private, or a
// password given elsewhere, is not refused. Nothing here reaches a server
// (port 1 refuses), so the refusal comes before any connection.
func TestInsecurePassfileRefused(t *testing.T) {
	t.Setenv("PGPASSWORD", "")
	t.Setenv("PGSERVICE", "")
	pass := filepath.Join(t.TempDir(), "pgpass")
	if err := os.WriteFile(pass, []byte("127.0.0.1:1:fleet:agentctl:Secret_Pw_31\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(pass, 0o644); err != nil { // whatever the umask
		t.Fatal(err)
	}
	t.Setenv("PGPASSFILE", pass)
	open := func(u string) error {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		st, err := Open(ctx, t.TempDir(), WithStore(StoreURL(u)))
		if err == nil {
			st.Close()
		}
		return err
	}
	const store = "postgres://agentctl@127.0.0.1:1/fleet?sslmode=disable&connect_timeout=5"
	err := open(store)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "chmod 0600 "+pass) || !strings.Contains(err.Error(), "(mode 0644)") ||
		strings.Contains(err.Error(), "Secret_Pw_31") {
		t.Fatalf("a password from a world-readable password file: %v; want it refused, naming the file and chmod 0600", err)
	}
	// The URL's own passfile is the one read.
	t.Setenv("PGPASSFILE", "")
	if err := open(store + "&passfile=" + pass); err == nil || !strings.Contains(err.Error(), "chmod 0600 "+pass) {
		t.Errorf("passfile in the URL: %v; want it refused", err)
	}
	t.Setenv("PGPASSFILE", pass)
	// A password given elsewhere, or no entry for this database: the file
	// is not used, so not refused.
	for _, u := range []string{
		"postgres://agentctl:Other_Pw_9@127.0.0.1:1/fleet?sslmode=disable&connect_timeout=5",
		"postgres://agentctl@127.0.0.1:1/elsewhere?sslmode=disable&connect_timeout=5",
	} {
		if err := open(u); err == nil || strings.Contains(err.Error(), "chmod") {
			t.Errorf("%s: %v; want a connection error, not the password file's", RedactStore(u), err)
		}
	}
	if err := os.Chmod(pass, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := open(store); err == nil || strings.Contains(err.Error(), "chmod") || !errors.Is(err, ErrUnavailable) {
		t.Errorf("a private password file: %v; want the server's absence (unavailable), not the file refused", err)
	}
}
