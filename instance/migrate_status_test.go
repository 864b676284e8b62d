package instance

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/agentctl/agentctl/internal/testkit"
)

// TestMigrationStatusBackfill: a store made before migration 4 gets each
// instance's latest status in the migration itself, also when several
// processes open it at the same moment (each its own connection, as
// separate processes are), and --status lists what the latest events say.
func TestMigrationStatusBackfill(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := makeStoreAt(ctx, dir, 3); err != nil {
		t.Fatal(err)
	}
	const n = 40
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, DBFile)+"?_pragma=busy_timeout(30000)&_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for i := range n {
		id := fmt.Sprintf("01kaaaaaaaaaaaaaaaaaaa%04d", i)
		if _, err := db.ExecContext(ctx, `INSERT INTO instances (id, agent, created_at, record) VALUES (?, 'auggie', '', ?)`,
			id, `{"id":"`+id+`","agent":"auggie"}`); err != nil {
			t.Fatal(err)
		}
		// Instance i reports i%5 times: none, running, then blocked,
		// done, failed, each after the one before.
		statuses := []string{"running", "blocked", "done", "failed"}[:i%5]
		for _, s := range statuses {
			if _, err := db.ExecContext(ctx, `INSERT INTO events (instance_id, at, tool, status, message) VALUES (?, '', 'report_progress', ?, '')`, id, s); err != nil {
				t.Fatal(err)
			}
		}
		latest := ""
		if len(statuses) > 0 {
			latest = statuses[len(statuses)-1]
		}
		want[latest] = append(want[latest], id)
	}
	db.Close()

	var wg sync.WaitGroup
	stores := make([]*Store, 8)
	errs := make([]error, len(stores))
	for i := range stores {
		wg.Go(func() { stores[i], errs[i] = Open(ctx, dir) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d of %d at once: %v", i+1, len(stores), err)
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	st := stores[0]
	var v int
	if err := st.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil || v != len(sqliteMigrations) {
		t.Fatalf("user_version %d (%v), want %d", v, err, len(sqliteMigrations))
	}
	for _, status := range []string{"", "running", "blocked", "done", "failed"} {
		var got []string
		for l, err := range st.Records(ctx, ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			if l.Status == status {
				got = append(got, l.ID)
			}
		}
		if !slices.Equal(got, want[status]) {
			t.Errorf("status %q after the migration: %v, want %v", status, got, want[status])
		}
		if status == "" {
			continue
		}
		got = nil
		for l, err := range st.Records(ctx, ListOptions{Status: status}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, l.ID)
		}
		if !slices.Equal(got, want[status]) {
			t.Errorf("--status %s after the migration: %v, want %v", status, got, want[status])
		}
	}
	// Events after the migration move it, from any of the stores.
	if _, err := stores[3].AddEvent(ctx, Event{InstanceID: want[""][0], Tool: "t", Status: "done"}); err != nil {
		t.Fatal(err)
	}
	var status string
	if err := st.db.QueryRowContext(ctx, `SELECT status FROM instances WHERE id = ?`, want[""][0]).Scan(&status); err != nil || status != "done" {
		t.Errorf("after a new event: status %q (%v), want done", status, err)
	}
}

// makeStoreAt makes the database of a store in dir with only the first n
// sqliteMigrations applied, as an agentctl of that schema left it.
func makeStoreAt(ctx context.Context, dir string, n int) error {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, DBFile))
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "PRAGMA journal_mode=WAL"); err != nil {
		return err
	}
	for _, m := range sqliteMigrations[:n] {
		if _, err := db.ExecContext(ctx, m); err != nil {
			return err
		}
	}
	_, err = db.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", n))
	return err
}

// TestMigrationQuestionsCarryTheirInstance: questions asked before the
// migration that gave them copies of their instance's label, agent and host
// get them in it, on both stores, so the inbox (which reads the questions
// alone) shows them; answered questions too; and one asked afterwards by an
// older agentctl (which names none of the three) gets them from the trigger.
func TestMigrationQuestionsCarryTheirInstance(t *testing.T) {
	ctx := context.Background()
	pg := testkit.StartPostgres(t)
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			var db *sql.DB
			var err error
			url := StoreURL("")
			if kind == "sqlite" {
				if err := makeStoreAt(ctx, dir, len(sqliteMigrations)-1); err != nil {
					t.Fatal(err)
				}
				db, err = sql.Open("sqlite", "file:"+filepath.Join(dir, DBFile)+"?_pragma=foreign_keys(1)")
			} else {
				url = StoreURL(pg.NewDatabase(t))
				db, err = sql.Open("pgx", string(url))
			}
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			be := backend(&sqliteBackend{})
			if kind == "postgres" {
				be = &pgBackend{}
				for _, m := range append(pgMigrations[:len(pgMigrations)-1:len(pgMigrations)-1],
					`CREATE TABLE agentctl_schema (version INTEGER NOT NULL)`,
					fmt.Sprintf(`INSERT INTO agentctl_schema (version) VALUES (%d)`, len(pgMigrations)-1)) {
					if _, err := db.ExecContext(ctx, m); err != nil {
						t.Fatal(err)
					}
				}
			}
			exec := func(q string, args ...any) {
				t.Helper()
				if _, err := db.ExecContext(ctx, be.rebind(q), args...); err != nil {
					t.Fatal(err)
				}
			}
			const a, b = "01kaaaaaaaaaaaaaaaaaaaaaaa", "01kbbbbbbbbbbbbbbbbbbbbbbb"
			exec(`INSERT INTO instances (id, name, agent, created_at, record, host) VALUES (?, 'alpha', 'auggie', '', '{}', 'host-a'), (?, NULL, 'codex', '', '{}', 'host-b')`, a, b)
			exec(`INSERT INTO questions (id, instance_id, question, choices, status, asked_at) VALUES
				('q1', ?, 'a?', '[]', 'open', '2026-01-01T00:00:01.000000000Z'),
				('q2', ?, 'b?', '[]', 'open', '2026-01-01T00:00:02.000000000Z'),
				('q3', ?, 'done?', '[]', 'answered', '2026-01-01T00:00:03.000000000Z')`, a, b, a)
			st, err := Open(ctx, dir, WithStore(url))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			// An endpoint of the older agentctl, still serving, asks one
			// more as it always did: the trigger fills the three in.
			exec(`INSERT INTO questions (id, instance_id, question, choices, status, asked_at) VALUES ('q4', ?, 'old?', '[]', 'open', '2026-01-01T00:00:04.000000000Z')`, a)
			in, err := st.Inbox(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, q := range in {
				got = append(got, q.ID+" "+q.InstanceName+" "+q.Agent+" "+q.Host)
			}
			if want := []string{"q1 alpha auggie host-a", "q2  codex host-b", "q4 alpha auggie host-a"}; !slices.Equal(got, want) {
				t.Errorf("inbox after the migration: %q, want %q", got, want)
			}
			var name sql.NullString
			var agent, host string
			if err := st.db.QueryRowContext(ctx, `SELECT instance_name, agent, host FROM questions WHERE id = 'q3'`).Scan(&name, &agent, &host); err != nil ||
				name.String != "alpha" || agent != "auggie" || host != "host-a" {
				t.Errorf("the answered question after the migration: %v %q %q (%v)", name, agent, host, err)
			}
		})
	}
}
