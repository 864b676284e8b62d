package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/internal/testkit"
)

// migrateEnv runs agentctl in-process (Run) for a host with its own state
// directory, keeping everything it printed, to check no password is in it.
type migrateEnv struct {
	t       *testing.T
	env     map[string]string
	printed *strings.Builder // every run's stdout and stderr, of every host
}

type migrateResult struct {
	code           int
	stdout, stderr string
}

func (r migrateResult) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

func newMigrateEnv(t *testing.T, host string, printed *strings.Builder) *migrateEnv {
	dir := t.TempDir()
	return &migrateEnv{t: t, printed: printed, env: map[string]string{
		"HOME":               filepath.Join(dir, "home"),
		"XDG_CONFIG_HOME":    filepath.Join(dir, "config"),
		"AGENTCTL_STATE_DIR": filepath.Join(dir, "state"),
		"AGENTCTL_HOST":      host,
	}}
}

func (e *migrateEnv) run(args ...string) migrateResult {
	e.t.Helper()
	var out, errOut bytes.Buffer
	code := Run(e.t.Context(), append([]string{"agentctl"}, args...), strings.NewReader(""), &out, &errOut, func(k string) string { return e.env[k] })
	e.printed.WriteString(out.String() + errOut.String())
	return migrateResult{code: code, stdout: out.String(), stderr: errOut.String()}
}

func (e *migrateEnv) must(args ...string) migrateResult {
	e.t.Helper()
	res := e.run(args...)
	if res.code != 0 {
		e.t.Fatalf("agentctl %q:\n%s", args, res)
	}
	return res
}

// TestStoreMigrate: `agentctl store migrate` from the default SQLite store
// into PostgreSQL and back, a second run copying nothing, --dry-run, -o
// json, the refusals, and never a password in what it prints.
func TestStoreMigrate(t *testing.T) {
	t.Parallel()
	pg := testkit.StartPostgres(t)
	var printed strings.Builder
	a := newMigrateEnv(t, "host-a", &printed)
	url := pg.NewDatabase(t)

	// Two instances in host a's SQLite store, with events.
	a.must("instance", "create", "--agent", "auggie", "--name", "fix-login")
	id := strings.TrimSpace(a.must("instance", "create", "--agent", "codex").stdout)
	st, err := instance.Open(t.Context(), a.env["AGENTCTL_STATE_DIR"])
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"running", "done"} {
		if _, err := st.RecordProgress(t.Context(), id, "report_progress", s, s, nil); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	// A dry run into a database agentctl has not used writes nothing into
	// it, not even the schema that opening it as a store would make.
	res := a.must("store", "migrate", "--to", url, "--dry-run")
	if !strings.Contains(res.stdout, "instances: 2 to copy") || !strings.Contains(res.stderr, "Dry run: 6 rows would be copied") ||
		!strings.Contains(res.stderr, "into postgres store postgres://") {
		t.Errorf("dry run into an empty database:\n%s", res)
	}
	if have, _, err := instance.PostgresSchema(t.Context(), url); err != nil || have != 0 {
		t.Errorf("after a dry run the database has agentctl's schema version %d (%v); want none", have, err)
	}

	res = a.must("store", "migrate", "--to", url)
	for _, want := range []string{"instances: 2 copied, 0 already there", "tokens:    2 copied", "questions: 0 copied", "events:    2 copied"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("first migrate: stdout lacks %q\n%s", want, res)
		}
	}
	if !strings.Contains(res.stderr, "Copied 6 rows from sqlite store") || !strings.Contains(res.stderr, "into postgres store postgres://agentctl@") {
		t.Errorf("first migrate: stderr does not say what was copied where\n%s", res)
	}

	res = a.must("store", "migrate", "--to", url)
	if !strings.Contains(res.stdout, "nothing to copy: the target already has every row") || !strings.Contains(res.stdout, "instances: 0 copied, 2 already there") {
		t.Errorf("second migrate:\n%s", res)
	}
	res = a.must("store", "migrate", "--to", url, "-o", "json")
	var stats struct {
		From, To  string
		Instances instance.TableCopy
		Events    instance.TableCopy
		Conflicts []instance.CopyConflict
	}
	if err := json.Unmarshal([]byte(res.stdout), &stats); err != nil || stats.Instances.Skipped != 2 || stats.Events.Skipped != 2 ||
		stats.Instances.Copied != 0 || stats.Conflicts == nil || !strings.HasPrefix(stats.To, "postgres://agentctl@") || !strings.HasSuffix(stats.From, instance.DBFile) {
		t.Errorf("migrate -o json: %v\n%s", err, res)
	}

	// The fleet through PostgreSQL, as the CLI reads it.
	if out := a.must("--store", url, "instance", "show", "fix-login", "-o", "json").stdout; !strings.Contains(out, `"host": "host-a"`) {
		t.Errorf("instance show from PostgreSQL:\n%s", out)
	}
	if out := a.must("--store", url, "instance", "events", id).stdout; !strings.Contains(out, "done") {
		t.Errorf("instance events from PostgreSQL:\n%s", out)
	}

	// Back into a new SQLite file: a dry run creates nothing.
	back := filepath.Join(t.TempDir(), "back.db")
	res = a.must("store", "migrate", "--from", url, "--to", "sqlite:"+back, "--dry-run")
	if !strings.Contains(res.stdout, "instances: 2 to copy") || !strings.Contains(res.stderr, "Dry run: 6 rows would be copied") {
		t.Errorf("dry run:\n%s", res)
	}
	if _, err := os.Stat(back); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a dry run created %s: %v", back, err)
	}
	a.env["AGENTCTL_STORE"] = url // --from's default
	res = a.must("store", "migrate", "--to", "sqlite:"+back)
	delete(a.env, "AGENTCTL_STORE")
	if !strings.Contains(res.stdout, "events:    2 copied") {
		t.Errorf("PostgreSQL to SQLite:\n%s", res)
	}
	if out := a.must("--store", back, "instance", "list").stdout; !strings.Contains(out, "fix-login") || !strings.Contains(out, id) {
		t.Errorf("instance list from the SQLite copy:\n%s", out)
	}

	// Refusals.
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"store", "migrate"}, ExitUsage, "needs --to STORE"},
		{[]string{"store", "migrate", "--from", url, "--to", strings.Replace(url, "127.0.0.1", "localhost", 1)}, ExitInvalid, "the same database"},
		{[]string{"store", "migrate", "--to", a.env["AGENTCTL_STATE_DIR"] + "/./" + instance.DBFile}, ExitInvalid, "the same database"},
		{[]string{"store", "migrate", "--from", "sqlite:" + filepath.Join(t.TempDir(), "none.db"), "--to", url}, ExitNotFound, "does not exist"},
		{[]string{"store", "migrate", "--to", strings.Replace(url, pg.Password(), "wrong-"+pg.Password(), 1)}, -1, "postgres://agentctl@"},
		{[]string{"store", "migrate", "--to", "mysql://x@y/z"}, ExitInvalid, "unknown kind"},
	} {
		// -1: any failure (a password refused is exit 9, "unavailable", today).
		if res := a.run(c.args...); (res.code != c.code && (c.code != -1 || res.code == 0)) || !strings.Contains(res.stderr, c.want) {
			t.Errorf("agentctl %q: want exit %d and %q\n%s", c.args, c.code, c.want, res)
		}
	}

	// Another host's store with the same label: its other instance is
	// copied, that one is not, and migrate says so and exits 4.
	b := newMigrateEnv(t, "host-b", &printed)
	b.must("instance", "create", "--agent", "auggie", "--name", "fix-login")
	b.must("instance", "create", "--agent", "auggie")
	res = b.run("store", "migrate", "--to", url)
	if res.code != ExitInvalid || !strings.Contains(res.stdout, "instances: 1 copied, 0 already there, 1 in conflict") ||
		!strings.Contains(res.stderr, `Conflict: instance `) || !strings.Contains(res.stderr, `its label "fix-login"`) ||
		!strings.Contains(res.stderr, "not everything was copied") {
		t.Errorf("a label taken in the target:\n%s", res)
	}

	if strings.Contains(printed.String(), pg.Password()) {
		t.Errorf("the password of the store's URL was printed:\n%s", printed.String())
	}
}

// TestStoreMigrateHelp: the help says what --from defaults to and that
// --to is needed.
func TestStoreMigrateHelp(t *testing.T) {
	t.Parallel()
	var printed strings.Builder
	e := newMigrateEnv(t, "h", &printed)
	res := e.must("store", "migrate", "--help")
	for _, want := range []string{"--from STORE", "--to STORE", "--dry-run", "the store in force", "nothing to copy"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("help lacks %q:\n%s", want, res.stdout)
		}
	}
	if res := e.must("store"); !strings.Contains(res.stdout, "migrate") {
		t.Errorf("agentctl store:\n%s", res)
	}
}
