//go:build linux

package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/internal/testkit"
)

// TestDeleteOnFullFileSystem: with the state directory's file system
// full, instance delete, the real program, deletes an instance (record,
// questions, events, token, directory); instance create fails saying so
// and leaves nothing; gc works, and once there is room compacts the
// database and puts the reserve back, so that the next delete on a full
// disk works too; and then create works again.
func TestDeleteOnFullFileSystem(t *testing.T) {
	t.Parallel()
	fsys := testkit.SmallFileSystem(t, 8<<20, "TestDeleteOnFullDisk in ./instance covers the delete on a full disk through a seam")
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	e.state = filepath.Join(fsys, "state")
	a := e.create(ctx, "--agent", "auggie")
	b := e.create(ctx, "--agent", "claude-code")
	reserve := filepath.Join(e.state, instance.ReserveFile)
	if _, err := os.Stat(reserve); err != nil {
		t.Fatalf("create made no reserve: %v", err)
	}

	// a's events and questions (2 MB), stored directly.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(e.state, instance.DBFile)+"?_pragma=busy_timeout(30000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func(table, col, id string) int {
		t.Helper()
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM `+table+` WHERE `+col+` = ?`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	msg := strings.Repeat("progress report ", 60)
	at := time.Now().UTC().Format(time.RFC3339Nano)
	for i := range 2000 {
		if _, err := tx.Exec(`INSERT INTO events (instance_id, at, tool, status, message) VALUES (?, ?, 'report_progress', 'working', ?)`, a.ID, at, fmt.Sprint(i, msg)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 100 {
		if _, err := tx.Exec(`INSERT INTO questions (id, instance_id, question, choices, status, asked_at) VALUES (?, ?, ?, '[]', 'open', ?)`, fmt.Sprintf("q%04d", i), a.ID, msg, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	e.mustRun(ctx, "instance", "list")

	filler := testkit.Fill(t, fsys)
	res := e.run(ctx, "instance", "create", "--agent", "auggie")
	if res.code != 1 || !strings.Contains(res.stderr, "could not create an instance: the file system of the state directory") ||
		!strings.Contains(res.stderr, "nothing was changed") {
		t.Errorf("create on a full disk: want exit 1 saying the disk is full\n%s", res)
	}
	if ids := e.listIDs(ctx); len(ids) != 2 {
		t.Errorf("after the failed create: %v, want 2 instances", ids)
	}
	entries, err := os.ReadDir(filepath.Join(e.state, "instances"))
	if err != nil || len(entries) != 2 {
		t.Errorf("instances directory after the failed create: %v %v", entries, err)
	}

	res = e.run(ctx, "instance", "delete", a.ID)
	if res.code != 0 {
		t.Fatalf("delete on a full disk\n%s", res)
	}
	for table, col := range map[string]string{"instances": "id", "events": "instance_id", "questions": "instance_id", "instance_tokens": "instance_id"} {
		if n := count(table, col, a.ID); n != 0 {
			t.Errorf("%s: %d rows of the deleted instance", table, n)
		}
	}
	if _, err := os.Stat(a.Dir); !os.IsNotExist(err) {
		t.Errorf("the deleted instance's directory: %v", err)
	}
	if res := e.run(ctx, "gc"); res.code != 0 {
		t.Errorf("gc on a full disk\n%s", res)
	}

	// Room again: gc compacts and puts the reserve back.
	filler.Free()
	res = e.run(ctx, "gc")
	if res.code != 0 || !strings.Contains(res.stderr, "Compacted the state database") {
		t.Errorf("gc with room: want the database compacted\n%s", res)
	}
	if _, err := os.Stat(reserve); err != nil {
		t.Errorf("gc did not put the reserve back: %v", err)
	}

	// Full again, and no process has the database open, so that SQLite
	// must make its WAL index again to read it: the next delete works too.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.state, instance.DBFile+"-shm")); !os.IsNotExist(err) {
		t.Fatalf("the WAL index is still there after the last close: %v", err)
	}
	filler = testkit.Fill(t, fsys)
	if res := e.run(ctx, "instance", "delete", b.ID); res.code != 0 {
		t.Fatalf("second delete on a full disk\n%s", res)
	}
	filler.Free()
	db, err = sql.Open("sqlite", "file:"+filepath.Join(e.state, instance.DBFile)+"?_pragma=busy_timeout(30000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for table, col := range map[string]string{"instances": "id", "instance_tokens": "instance_id"} {
		if n := count(table, col, b.ID); n != 0 {
			t.Errorf("%s: %d rows of the second deleted instance", table, n)
		}
	}
	if _, err := os.Stat(b.Dir); !os.IsNotExist(err) {
		t.Errorf("the second deleted instance's directory: %v", err)
	}
	e.create(ctx, "--agent", "auggie")
}
