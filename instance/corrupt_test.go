package instance_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/instance"
)

// One record that does not decode hides no other instance from List, is
// named by Get with how to remove it, and Delete removes it with its
// directory.
func TestCorruptRecord(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	good1 := create(t, st, "auggie", nil)
	bad := create(t, st, "codex", func(o *instance.CreateOptions) { o.Name = "broken" })
	good2 := create(t, st, "auggie", nil)
	if err := st.ExecForTest(`UPDATE instances SET record = '{"id": "` + bad.ID + `", truncated' WHERE id = '` + bad.ID + `'`); err != nil {
		t.Fatal(err)
	}

	recs, broken, err := st.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(recs) != 2 || recs[0].ID != good1.ID || recs[1].ID != good2.ID {
		t.Errorf("List: records %v, want %s and %s", recs, good1.ID, good2.ID)
	}
	if len(broken) != 1 || broken[0].ID != bad.ID {
		t.Fatalf("List: broken %v, want %s", broken, bad.ID)
	}

	for _, ref := range []string{bad.ID, "broken"} {
		_, err = st.Get(ctx, ref)
		var ce *instance.CorruptRecordError
		if !errors.As(err, &ce) || ce.ID != bad.ID ||
			!strings.Contains(err.Error(), "agentctl instance delete "+bad.ID) {
			t.Errorf("Get(%s): got %v, want a CorruptRecordError naming %s and how to delete it", ref, err, bad.ID)
		}
	}

	r, err := st.Delete(ctx, "broken")
	if err != nil {
		t.Fatalf("Delete of the corrupt record: %v", err)
	}
	if r.ID != bad.ID || r.Name != "broken" || r.Agent != "codex" || r.Dir != bad.Dir {
		t.Errorf("Delete returned %+v, want id %s, label, agent and directory from the row", r, bad.ID)
	}
	if _, err := os.Stat(bad.Dir); !os.IsNotExist(err) {
		t.Errorf("directory %s: want it removed, stat says %v", bad.Dir, err)
	}
	if recs, broken, err := st.List(ctx); err != nil || len(recs) != 2 || len(broken) != 0 {
		t.Errorf("after Delete: records %d, broken %v (%v); want 2 and none", len(recs), broken, err)
	}
}

// A zero-length state.db beside instance directories is refused, naming the
// path and the way out, rather than taken as an empty store that orphans
// them; without instance directories it is a new store.
func TestZeroLengthDatabase(t *testing.T) {
	ctx := context.Background()
	t.Run("beside instances", func(t *testing.T) {
		st := openStore(t)
		create(t, st, "auggie", nil)
		create(t, st, "codex", nil)
		dir := st.Dir()
		st.Close()
		db := filepath.Join(dir, instance.DBFile)
		for _, f := range []string{db + "-wal", db + "-shm"} {
			_ = os.Remove(f)
		}
		if err := os.Truncate(db, 0); err != nil {
			t.Fatal(err)
		}
		_, err := instance.Open(ctx, dir)
		if err == nil {
			t.Fatal("Open of a zero-length database beside 2 instance directories succeeded")
		}
		for _, want := range []string{db, "empty (0 bytes)", "2 instance directories", "backup", "aside"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		if fi, err := os.Stat(db); err != nil || fi.Size() != 0 {
			t.Errorf("the refused database was changed: %v, %v", fi, err)
		}
	})
	t.Run("no instances", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, instance.DBFile), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := instance.Open(ctx, dir)
		if err != nil {
			t.Fatalf("Open of a zero-length database with no instances: %v", err)
		}
		defer st.Close()
		create(t, st, "auggie", nil)
	})
}
