package instance_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentctl/agentctl/instance"
)

// Open skips switching to WAL when the database file's header says it is
// in WAL mode already; a database that is not (one made by another tool,
// or restored from a rollback-journal copy) must still be switched.
func TestOpenSwitchesARollbackDatabaseToWAL(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, instance.DBFile)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(DELETE)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE unrelated (x)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if got := instance.InWAL(path); got {
		t.Fatalf("InWAL of a rollback-journal database = true")
	}
	st, err := instance.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if !instance.InWAL(path) {
		hdr, _ := os.ReadFile(path)
		t.Fatalf("after Open the database is not in WAL mode (header bytes 18, 19: %v)", hdr[18:20])
	}
	// And a store opened again, skipping the switch, works.
	st, err = instance.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, _, err := st.List(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestInWALOfWhatIsNotADatabase(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"empty": "", "short": "SQLite", "text": "not a database, but long enough to have a header"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if instance.InWAL(p) {
			t.Errorf("InWAL(%s) = true", name)
		}
	}
	if instance.InWAL(filepath.Join(dir, "missing")) {
		t.Error("InWAL of a missing file = true")
	}
}

// TestEventsKeepTheWALBounded: a long-lived endpoint records event after
// event through one store; SQLite's automatic checkpoint must keep folding
// the WAL back (an INSERT ... RETURNING whose rows are not read to their
// end never reaches it, and the WAL grows with every event).
func TestEventsKeepTheWALBounded(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	rec := create(t, st, "auggie", func(o *instance.CreateOptions) { o.Workspace = t.TempDir() })
	msg := string(make([]byte, 2000)) // some 2 KB an event: 600 of them well past the 1000-page checkpoint
	for i := range 600 {
		if _, err := st.AddEvent(ctx, instance.Event{InstanceID: rec.ID, Tool: "report_progress", Status: "running", Message: msg}); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	fi, err := os.Stat(filepath.Join(st.Dir(), instance.DBFile+"-wal"))
	if err != nil {
		t.Fatal(err)
	}
	// The automatic checkpoint runs at 1000 pages (4 MiB of 4 KiB pages);
	// the WAL is then reused from its start, never grown past that by much.
	if limit := int64(6 << 20); fi.Size() > limit {
		t.Errorf("WAL after 600 events of 2 KB: %d bytes, want at most %d (never checkpointed?)", fi.Size(), limit)
	}
}
