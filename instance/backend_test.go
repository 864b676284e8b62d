package instance

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestParseStore(t *testing.T) {
	for _, tc := range []struct {
		in, kind, where, err string
	}{
		{"", "sqlite", "/state/state.db", ""},
		{"/data/s.db", "sqlite", "/data/s.db", ""},
		{"sqlite:/data/s.db", "sqlite", "/data/s.db", ""},
		{"sqlite:///data/s.db", "sqlite", "/data/s.db", ""},
		{"postgres://u@h/db", "postgres", "postgres://u@h/db", ""},
		{"postgresql://u:pw@h/db", "postgres", "postgresql://u:pw@h/db", ""},
		{"sqlite:", "", "", "names no file"},
		{"mysql://u:secret@h/db", "", "", `unknown kind "mysql"`},
	} {
		kind, where, err := parseStore(StoreURL(tc.in), "/state")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one with %q", tc.in, err, tc.err)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("%q: the error shows the password: %v", tc.in, err)
			}
			continue
		}
		if err != nil || kind != tc.kind || where != tc.where {
			t.Errorf("%q: %q %q %v, want %q %q", tc.in, kind, where, err, tc.kind, tc.where)
		}
	}
}

func TestRedactStore(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:secret@h:5432/db?sslmode=disable": "postgres://u@h:5432/db?sslmode=disable",
		"postgres://u@h/db":                             "postgres://u@h/db",
		"postgres://h/db?password=secret&sslmode=off":   "postgres://h/db?sslmode=off",
		"/var/lib/agentctl/state.db":                    "/var/lib/agentctl/state.db",
		// A badly escaped value, which url.Values drops, and the TLS
		// key's passphrase.
		"postgres://u@h/db?sslmode=disable&password=Wrong%zzPw":   "postgres://u@h/db?sslmode=disable",
		"postgres://u@h/db?sslpassword=SECRET&sslmode=require":    "postgres://u@h/db?sslmode=require",
		"postgres://u@h/db?Pass%77ord=SECRET":                     "postgres://u@h/db",
		"postgres://u:p@h:bad/db?sslpassword=SECRET&password=PW2": "postgres://…@h:bad/db?",
	} {
		if got := RedactStore(in); got != want {
			t.Errorf("RedactStore(%q) = %q, want %q", in, got, want)
		}
	}
	msg := redactSecret(`cannot parse "postgres://u:pw%2Fx@h/db?sslpassword=k%20ey&password=Wrong%zz": pw/x k ey`, "postgres://u:pw%2Fx@h/db?sslpassword=k%20ey&password=Wrong%zz")
	for _, secret := range []string{"pw/x", "pw%2Fx", "k ey", "k%20ey", "Wrong%zz"} {
		if strings.Contains(msg, secret) {
			t.Errorf("redactSecret left %q in %s", secret, msg)
		}
	}
}

// TestParseStoreRefusesNonURLs: what would be taken as a SQLite file name
// but is meant for PostgreSQL (a keyword/value string, with its password
// then in a file name and a client's configuration) is refused, without
// being echoed.
func TestParseStoreRefusesNonURLs(t *testing.T) {
	for _, s := range []string{
		"host=127.0.0.1 port=5432 user=fleet password=SECRET dbname=fleet",
		"dbname=fleet password=SECRET",
		"postgres:fleet",
		"postgresql:fleet?password=SECRET",
	} {
		_, _, err := parseStore(StoreURL(s), "/state")
		if err == nil || !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("parseStore(%q): %v; want it refused as invalid, without the password", s, err)
		}
	}
	for _, s := range []string{"state.db", "sqlite:host=x.db", "./host=x.db"} {
		if kind, _, err := parseStore(StoreURL(s), "/state"); err != nil || kind != "sqlite" {
			t.Errorf("parseStore(%q) = %s, %v; want a SQLite file", s, kind, err)
		}
	}
}

// TestRebindDollar: the store's statements, written with ? and ?N, become
// PostgreSQL's $N, leaving quoted text alone.
func TestRebindDollar(t *testing.T) {
	for in, want := range map[string]string{
		`SELECT a FROM t WHERE x = ? AND y = ?`:                 `SELECT a FROM t WHERE x = $1 AND y = $2`,
		`SELECT a FROM t WHERE x = ?1 AND y <= ?2 OR z = ?1`:    `SELECT a FROM t WHERE x = $1 AND y <= $2 OR z = $1`,
		`SELECT '?' , "a?b", ? FROM t`:                          `SELECT '?' , "a?b", $1 FROM t`,
		`UPDATE t SET r = jsonb_set(r::jsonb, '{k}', ?::jsonb)`: `UPDATE t SET r = jsonb_set(r::jsonb, '{k}', $1::jsonb)`,
	} {
		if got := rebindDollar(in); got != want {
			t.Errorf("rebindDollar(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSameDatabase(t *testing.T) {
	for _, tc := range []struct {
		a, b StoreURL
		want bool
	}{
		{"postgres://u@h:5432/db", "postgres://u:pw@h:5432/db", true},
		{"postgres://u@h:5432/db?sslmode=disable", "postgresql://u:pw@h:5432/db", true},
		{"postgres://u@h:5432/db", "postgres://u:pw@h:5433/db", false},
		{"postgres://u@h/db", "postgres://v:pw@h/db", false},
		{"postgres://u@h/db", "postgres://u:pw@h/other", false},
		{"/state.db", "/state.db", false},
	} {
		if got := tc.a.SameDatabase(tc.b); got != tc.want {
			t.Errorf("%q.SameDatabase(%q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestPostgresUnavailable: what to wait out (a server stopping, starting,
// or out of connection slots, as after a restart) and what not (TLS that
// sslmode requires and the server lacks, a refused password).
func TestPostgresUnavailable(t *testing.T) {
	b := &pgBackend{}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "57P03"}, true},
		{&pgconn.PgError{Code: "53300"}, true},
		{&pgconn.PgError{Code: "28P01"}, false},
		{fmt.Errorf("failed to connect: %w", errors.New("tls error: server refused TLS connection")), false},
		{io.ErrUnexpectedEOF, true},
	} {
		if got := b.isUnavailable(c.err); got != c.want {
			t.Errorf("isUnavailable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
