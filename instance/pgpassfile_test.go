//go:build unix

package instance

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
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

// TestInsecurePassfileNamesTheDriversFile pins insecurePassfile's choice of
// file to the driver's: for each way a password file is named (the URL's
// passfile, PGPASSFILE, ~/.pgpass, and the first two together), each
// candidate file holds a password of its own, and the file insecurePassfile
// names must be the one whose password pgconn.ParseConfig found. A pgx
// that changes its order fails here.
func TestInsecurePassfileNamesTheDriversFile(t *testing.T) {
	t.Setenv("PGPASSWORD", "")
	t.Setenv("PGSERVICE", "")
	home, dir := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	files := map[string]string{ // path: its password
		filepath.Join(home, ".pgpass"): "Home_Pw_1",
		filepath.Join(dir, "env-pass"): "Env_Pw_2",
		filepath.Join(dir, "url-pass"): "Url_Pw_3",
	}
	for path, pw := range files {
		if err := os.WriteFile(path, []byte("127.0.0.1:1:fleet:agentctl:"+pw+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const base = "postgres://agentctl@127.0.0.1:1/fleet?sslmode=disable"
	for _, tc := range []struct {
		name, env, query string
	}{
		{"home", "", ""},
		{"PGPASSFILE", filepath.Join(dir, "env-pass"), ""},
		{"URL passfile", "", "&passfile=" + filepath.Join(dir, "url-pass")},
		{"URL passfile over PGPASSFILE", filepath.Join(dir, "env-pass"), "&passfile=" + filepath.Join(dir, "url-pass")},
	} {
		t.Setenv("PGPASSFILE", tc.env)
		raw := base + tc.query
		cfg, err := pgconn.ParseConfig(raw)
		if err != nil {
			t.Fatal(err)
		}
		var read string
		for path, pw := range files {
			if pw == cfg.Password {
				read = path
			}
		}
		if read == "" {
			t.Fatalf("%s: the driver found password %q, from none of the files", tc.name, cfg.Password)
		}
		if msg := insecurePassfile(raw, cfg.Password); !strings.Contains(msg, "chmod 0600 "+read) {
			t.Errorf("%s: the driver read %s; insecurePassfile says %q", tc.name, read, msg)
		}
	}
}
