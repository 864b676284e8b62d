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
