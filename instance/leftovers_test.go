package instance_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// An instance directory that no record names (a create killed between
// publishing its directory and committing) is swept by the next create once
// it is old; a young one, which a create may be publishing right now, and
// directories that are not instance ids stay.
func TestCreateSweepsOldDirectoriesWithoutRecord(t *testing.T) {
	st := openStore(t)
	instances := filepath.Join(st.Dir(), "instances")
	old := time.Now().Add(-2 * time.Hour)
	setOld := func(name string) {
		t.Helper()
		if err := os.Chtimes(filepath.Join(instances, name), old, old); err != nil {
			t.Fatal(err)
		}
	}
	orphanOld := create(t, st, "auggie", nil)
	orphanYoung := create(t, st, "auggie", nil)
	kept := create(t, st, "auggie", nil)
	for _, id := range []string{orphanOld.ID, orphanYoung.ID} {
		if err := st.ExecForTest(`DELETE FROM instances WHERE id = '` + id + `'`); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(instances, "notes"), 0o700); err != nil {
		t.Fatal(err)
	}
	setOld(orphanOld.ID)
	setOld(kept.ID)
	setOld("notes")

	create(t, st, "codex", nil)

	if _, err := os.Stat(orphanOld.Dir); !os.IsNotExist(err) {
		t.Errorf("old directory without a record %s: want it removed, stat says %v", orphanOld.Dir, err)
	}
	for _, dir := range []string{orphanYoung.Dir, kept.Dir, filepath.Join(instances, "notes")} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s: want it kept: %v", dir, err)
		}
	}
}
