package instance_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/instance"
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

	// A create sweeps at most once an hour: the first create swept (and
	// found nothing), so this one leaves the old orphan...
	create(t, st, "codex", nil)
	if _, err := os.Stat(orphanOld.Dir); err != nil {
		t.Errorf("a create within the hour of the last sweep swept %s: %v", orphanOld.Dir, err)
	}
	// ...and the first create an hour later removes it.
	if err := os.Chtimes(filepath.Join(st.Dir(), ".last-sweep"), old, old); err != nil {
		t.Fatal(err)
	}
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

// Sweep (agentctl gc) removes leftovers at once and says what it removed.
func TestSweepReportsWhatItRemoved(t *testing.T) {
	st := openStore(t)
	instances := filepath.Join(st.Dir(), "instances")
	old := time.Now().Add(-2 * time.Hour)
	orphan := create(t, st, "auggie", nil)
	if err := st.ExecForTest(`DELETE FROM instances WHERE id = '` + orphan.ID + `'`); err != nil {
		t.Fatal(err)
	}
	staging := filepath.Join(instances, ".staging-x-1")
	if err := os.Mkdir(staging, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{orphan.Dir, staging} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := st.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	if want := []string{staging, orphan.Dir}; !slices.Equal(removed, want) {
		t.Errorf("Sweep removed %v, want %v", removed, want)
	}
	if removed, err := st.Sweep(context.Background()); err != nil || len(removed) != 0 {
		t.Errorf("second Sweep: %v, %v; want nothing", removed, err)
	}
}

// TestSweepLeavesAnotherStoresInstances: a state directory can hold the
// directories of another store's instances (after `store migrate`, or a
// command run with another AGENTCTL_STORE): a sweep removes only the
// leftovers its own store marked as its, never another store's instance
// directory, nor one made before agentctl marked them. A .deleting-
// directory whose instance still has its record (a delete killed before
// removing it) is put back, not removed; one whose record is gone, removed.
func TestSweepLeavesAnotherStoresInstances(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	other, err := instance.Open(ctx, st.Dir(), instance.WithStore(instance.StoreURL("sqlite:"+filepath.Join(t.TempDir(), "other.db"))))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	instances := filepath.Join(st.Dir(), "instances")
	old := time.Now().Add(-2 * time.Hour)
	age := func(p string) {
		t.Helper()
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	theirs := create(t, other, "auggie", nil) // a live instance of the other store
	legacy := create(t, st, "auggie", nil)    // an orphan from before the markers
	if err := os.Remove(filepath.Join(legacy.Dir, instance.StoreMarker)); err != nil {
		t.Fatal(err)
	}
	halfDeleted := create(t, st, "codex", nil) // a delete killed after moving its directory aside
	deleting := filepath.Join(instances, ".deleting-"+halfDeleted.ID)
	if err := os.Rename(halfDeleted.Dir, deleting); err != nil {
		t.Fatal(err)
	}
	gone := create(t, st, "codex", nil) // a delete killed after removing its record
	goneDeleting := filepath.Join(instances, ".deleting-"+gone.ID)
	if err := os.Rename(gone.Dir, goneDeleting); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{legacy.ID, gone.ID} {
		if err := st.ExecForTest(`DELETE FROM instances WHERE id = '` + id + `'`); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{theirs.Dir, legacy.Dir, deleting, goneDeleting} {
		age(p)
	}
	removed, err := st.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{goneDeleting}; !slices.Equal(removed, want) {
		t.Errorf("Sweep removed %v, want %v", removed, want)
	}
	for _, dir := range []string{theirs.Dir, legacy.Dir, halfDeleted.Dir} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s: want it there: %v", dir, err)
		}
	}
}

// TestUpdateWhileDeletedMakesNoDirectory: a mount add whose instance a
// delete moves aside while the update holds the write lock (the delete then
// waits for it) fails saying the instance is being deleted, and does not
// make its directory again: before, the delete committed, and a directory
// no record names was left.
func TestUpdateWhileDeletedMakesNoDirectory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, err := instance.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := instance.Open(ctx, dir) // another process's
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rec := create(t, a, "auggie", nil)
	deleted := make(chan error, 1)
	_, err = a.UpdateInstance(ctx, rec.ID, func(r *instance.Record) (map[string][]byte, error) {
		go func() { _, err := b.Delete(ctx, rec.ID); deleted <- err }()
		deadline := time.Now().Add(30 * time.Second)
		for { // the delete moves the directory aside, then waits for this lock
			if _, err := os.Stat(filepath.Join(dir, "instances", ".deleting-"+rec.ID)); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the delete never moved the directory aside")
			}
			time.Sleep(5 * time.Millisecond)
		}
		return map[string][]byte{"instructions.md": []byte("new\n")}, nil
	})
	if !errors.Is(err, instance.ErrDeleted) {
		t.Errorf("the update of an instance being deleted: %v; want it deleted", err)
	}
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(rec.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the deleted instance's directory is there again: %v", err)
	}
}

// TestBusyStateDatabaseSaysWhatToDo: a write lock another process held past
// the busy timeout (a gc compacting the database) is reported naming the
// database and saying to try again, as an unreachable store is (exit 9),
// not as SQLite's bare "database is locked" (exit 1).
func TestBusyStateDatabaseSaysWhatToDo(t *testing.T) {
	st := openStore(t)
	err := st.Explain(errors.New("database is locked (5) (SQLITE_BUSY)"))
	if !errors.Is(err, instance.ErrUnavailable) || !strings.Contains(err.Error(), filepath.Join(st.Dir(), instance.DBFile)) ||
		!strings.Contains(err.Error(), "try again once that is done") {
		t.Errorf("busy: %v", err)
	}
}
