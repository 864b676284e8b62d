package instance_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestPostgresRefusals: a connection the server refuses for a reason that
// waiting will not change, or a role that may not do what the store
// needs, is a configuration error (exit code 4) that says how to fix it,
// never the password; and a database newer than this agentctl says so
// first, whatever the role may do.
func TestPostgresRefusals(t *testing.T) {
	t.Parallel()
	pg := testkit.StartPostgres(t)
	ctx := context.Background()
	open := func(u string) error {
		st, err := instance.Open(ctx, t.TempDir(), instance.WithStore(instance.StoreURL(u)))
		if err == nil {
			st.Close()
		}
		return err
	}
	with := func(raw string, edit func(*url.URL)) string {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		edit(u)
		return u.String()
	}
	exec := func(raw, sql string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, raw)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}

	owner := pg.NewDatabase(t)
	if err := open(owner); err != nil { // migrates
		t.Fatal(err)
	}
	exec(owner, `CREATE ROLE low LOGIN PASSWORD 'LowPw_9q'; REVOKE CREATE ON SCHEMA public FROM PUBLIC`)
	t.Cleanup(func() { // roles outlive databases
		exec(owner, `DROP OWNED BY low`)
		exec(pg.URL("postgres"), `DROP ROLE low`)
	})
	low := func(raw string) string {
		return with(raw, func(u *url.URL) { u.User = url.UserPassword("low", "LowPw_9q") })
	}
	fresh := pg.NewDatabase(t)
	exec(fresh, `REVOKE CREATE ON SCHEMA public FROM PUBLIC`)

	for _, c := range []struct{ name, url, want string }{
		{"wrong password", with(owner, func(u *url.URL) { u.User = url.UserPassword(testkit.PostgresUser, "Wrong_Pw_77") }), "give it in PGPASSWORD or ~/.pgpass"},
		{"no such database", with(owner, func(u *url.URL) { u.Path = "/no_such_db" }), "createdb"},
		{"TLS the server lacks", with(owner, func(u *url.URL) { u.RawQuery = "sslmode=require" }), "does not offer TLS"},
		{"a role that may not make the schema", low(fresh), "may not make it"},
		{"a role that may not read the tables", low(owner), "may not read agentctl's tables"},
	} {
		err := open(c.url)
		if err == nil || !errors.Is(err, instance.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an invalid-configuration error saying %q", c.name, err, c.want)
		}
		if err != nil && (strings.Contains(err.Error(), "Wrong_Pw_77") || strings.Contains(err.Error(), "LowPw_9q") || strings.Contains(err.Error(), pg.Password())) {
			t.Errorf("%s: the error shows a password: %v", c.name, err)
		}
	}

	// A database that takes no changes: the error says which store, and why.
	ro := pg.NewDatabase(t)
	if err := open(ro); err != nil {
		t.Fatal(err)
	}
	exec(ro, `ALTER DATABASE `+strings.TrimPrefix(mustURL(t, ro).Path, "/")+` SET default_transaction_read_only = on`)
	st, err := instance.Open(ctx, t.TempDir(), instance.WithStore(instance.StoreURL(ro)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	err = st.OutboxRetry(ctx, "01nosuchrow", time.Now(), "")
	if err = st.Explain(err); err == nil || !strings.Contains(err.Error(), "postgres store "+instance.RedactStore(ro)) ||
		!strings.Contains(err.Error(), "point the store at the primary") {
		t.Errorf("a change refused by a read-only database: %v", err)
	}
	// The server's words that reach a command unnamed are said as the store's.
	if err := st.Explain(fmt.Errorf("create: %w", &pgconn.PgError{Severity: "ERROR", Code: "25006", Message: "cannot execute INSERT in a read-only transaction"})); err == nil ||
		!strings.Contains(err.Error(), "postgres store "+instance.RedactStore(ro)+": create: ERROR: cannot execute INSERT") || !strings.Contains(err.Error(), "point the store at the primary") {
		t.Errorf("Explain: %v", err)
	}

	exec(owner, `GRANT SELECT ON agentctl_schema TO low; UPDATE agentctl_schema SET version = version + 1`)
	for _, u := range []string{owner, low(owner)} {
		if err := open(u); err == nil || !strings.Contains(err.Error(), "newer than this agentctl knows") {
			t.Errorf("a newer schema: %v", err)
		}
	}
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
