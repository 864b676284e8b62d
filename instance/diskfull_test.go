package instance_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentctl/agentctl/instance"
)

// seedRows gives rec events and questions: enough that deleting them in
// bounded transactions takes several.
func seedRows(t *testing.T, st *instance.Store, rec *instance.Record, events, questions int) {
	t.Helper()
	ctx := context.Background()
	msg := strings.Repeat("progress report ", 40)
	for i := range events {
		if _, err := st.AddEvent(ctx, instance.Event{InstanceID: rec.ID, Tool: "report_progress", Status: "working", Message: fmt.Sprint(i, msg)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range questions {
		if _, err := st.AddQuestion(ctx, rec.ID, fmt.Sprint("question ", i, msg), []string{"yes", "no"}); err != nil {
			t.Fatal(err)
		}
	}
}

// rowsOf counts instance id's rows in each table a delete empties.
func rowsOf(t *testing.T, st *instance.Store, id string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for table, col := range map[string]string{"instances": "id", "events": "instance_id", "questions": "instance_id", "instance_tokens": "instance_id"} {
		n, err := st.CountForTest(`SELECT count(*) FROM `+table+` WHERE `+col+` = ?`, id)
		if err != nil {
			t.Fatal(err)
		}
		out[table] = n
	}
	return out
}

func checkGone(t *testing.T, st *instance.Store, rec *instance.Record) {
	t.Helper()
	for table, n := range rowsOf(t, st, rec.ID) {
		if n != 0 {
			t.Errorf("%s: %d rows of the deleted instance left", table, n)
		}
	}
	entries, err := os.ReadDir(filepath.Dir(rec.Dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), rec.ID) {
			t.Errorf("%s left in the instances directory", e.Name())
		}
	}
}

// TestDeleteOnFullDisk: with every write failing as on a full disk until
// the delete has made room, instance delete still deletes the instance
// (record, questions, events, token, directory): it removes the directory
// first, then the reserve, then deletes the rows in bounded transactions;
// never compacting. gc compacts later and puts the reserve back. Writes
// fail through a seam here; TestDeleteOnFullFileSystem (cmd/agentctl) fills
// a real file system.
func TestDeleteOnFullDisk(t *testing.T) {
	ctx := context.Background()
	reserve := func(st *instance.Store) bool {
		_, err := os.Stat(filepath.Join(st.Dir(), instance.ReserveFile))
		return err == nil
	}

	t.Run("directory frees enough", func(t *testing.T) {
		st := openStore(t)
		rec := create(t, st, "auggie", nil)
		other := create(t, st, "auggie", nil)
		seedRows(t, st, rec, 20, 2)
		if !reserve(st) {
			t.Fatal("create made no reserve")
		}
		writes := 0
		st.SetDiskFullForTest(func() bool {
			writes++
			if writes == 2 {
				if _, err := os.Stat(rec.Dir); !os.IsNotExist(err) {
					t.Errorf("the retry ran with the directory still there: %v", err)
				}
			}
			return writes == 1
		})
		if _, err := st.DeleteInstance(ctx, rec.ID, instance.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		checkGone(t, st, rec)
		if writes != 2 || !reserve(st) {
			t.Errorf("%d writes, reserve kept %v; want the DELETE tried twice and the reserve kept", writes, reserve(st))
		}
		if rows := rowsOf(t, st, other.ID); rows["instances"] != 1 || rows["instance_tokens"] != 1 {
			t.Errorf("the other instance: %v", rows)
		}
	})

	t.Run("reserve and bounded transactions", func(t *testing.T) {
		st := openStore(t)
		rec := create(t, st, "auggie", nil)
		seedRows(t, st, rec, 600, 300) // about 400 KB of events, 200 KB of questions
		writes := 0
		st.SetDiskFullForTest(func() bool {
			writes++
			if writes == 3 && reserve(st) {
				t.Error("the rows went in parts while the reserve was still there")
			}
			return writes <= 2
		})
		if _, err := st.DeleteInstance(ctx, rec.ID, instance.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		checkGone(t, st, rec)
		// Two refused DELETEs, the events and the questions in parts of
		// at most 64 KB, the record.
		if writes < 2+7+4+1 {
			t.Errorf("%d writes: the rows did not go in bounded parts", writes)
		}
		if reserve(st) {
			t.Error("the reserve is back before gc")
		}
		// Later, with room: gc compacts and makes the reserve again.
		cs, err := st.Compact(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !cs.Vacuumed || cs.FreedBytes < 400<<10 || !cs.Reserve || !reserve(st) {
			t.Errorf("compact: %+v, reserve %v; want the freed pages given back and the reserve made", cs, reserve(st))
		}
	})

	t.Run("no room at all", func(t *testing.T) {
		st := openStore(t)
		rec := create(t, st, "auggie", nil)
		seedRows(t, st, rec, 10, 1)
		st.SetDiskFullForTest(func() bool { return true })
		_, err := st.DeleteInstance(ctx, rec.ID, instance.DeleteOptions{})
		var df *instance.DiskFullError
		if !errors.As(err, &df) || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("delete on a disk that stays full: %v; want a *DiskFullError", err)
		}
		for _, want := range []string{"could not delete instance " + rec.ID, "is full", "its directory " + rec.Dir + " was removed, its record was not",
			"run `agentctl instance delete " + rec.ID + "` again"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		if rows := rowsOf(t, st, rec.ID); rows["instances"] != 1 || rows["events"] != 10 {
			t.Errorf("rows after the failed delete: %v", rows)
		}
		// Once there is room, the same command finishes it.
		st.SetDiskFullForTest(nil)
		if _, err := st.DeleteInstance(ctx, rec.ID, instance.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		checkGone(t, st, rec)
	})
}

// TestCreateOnFullDisk: a create that cannot write for want of space says
// so, and leaves nothing: no record, no directory, no staging directory.
func TestCreateOnFullDisk(t *testing.T) {
	st := openStore(t)
	st.SetBeforeCommit(func() error { return &os.PathError{Op: "write", Path: "state.db-wal", Err: syscall.ENOSPC} })
	def, err := catalog(t).Lookup("auggie")
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.CreateInstance(context.Background(), instance.CreateOptions{Definition: def, Workspace: t.TempDir(), Executable: "/opt/agentctl/bin/agentctl"})
	var df *instance.DiskFullError
	if !errors.As(err, &df) || !strings.Contains(err.Error(), "could not create an instance: the file system of the state directory") ||
		!strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("create on a full disk: %v", err)
	}
	if n, err := st.CountForTest(`SELECT count(*) FROM instances`); err != nil || n != 0 {
		t.Errorf("%d records, %v", n, err)
	}
	entries, err := os.ReadDir(filepath.Join(st.Dir(), "instances"))
	if err != nil || len(entries) != 0 {
		t.Errorf("instances directory after the failed create: %v %v", entries, err)
	}
}
