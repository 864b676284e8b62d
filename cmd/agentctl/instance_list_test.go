package main

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/instance"
)

// A corrupt record does not fail `instance list`: the others are listed,
// stderr warns naming the broken id and how to remove it, and `instance
// delete` of it works.
func TestInstanceListWarnsOfCorruptRecord(t *testing.T) {
	ctx := context.Background()
	f := newTestFactory(t)
	good := f.create(t, "auggie")
	bad := f.create(t, "codex")
	db, err := sql.Open("sqlite", filepath.Join(f.Config.StateDir(), instance.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`UPDATE instances SET record = 'not json' WHERE id = ?`, bad.ID)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	for _, format := range []string{formatTable, formatJSON} {
		f.reset()
		if err := instanceListRun(ctx, &InstanceListOptions{IO: f.IOStreams, Store: f.Store, Output: format}); err != nil {
			t.Fatalf("list -o %s: %v", format, err)
		}
		if out := f.out.String(); !strings.Contains(out, good.ID) || strings.Contains(out, bad.ID) {
			t.Errorf("list -o %s: stdout %q, want %s and not %s", format, out, good.ID, bad.ID)
		}
		if e := f.errOut.String(); !strings.Contains(e, "warning") || !strings.Contains(e, "agentctl instance delete "+bad.ID) {
			t.Errorf("list -o %s: stderr %q, want a warning naming %s and how to delete it", format, e, bad.ID)
		}
	}

	f.reset()
	if err := instanceDeleteRun(ctx, &InstanceDeleteOptions{IO: f.IOStreams, Store: f.Store, Instance: bad.ID, Output: formatTable}); err != nil {
		t.Fatalf("delete of the corrupt record: %v", err)
	}
	if out := strings.TrimSpace(f.out.String()); out != bad.ID {
		t.Errorf("delete: stdout %q, want %s", out, bad.ID)
	}
	f.reset()
	if err := instanceListRun(ctx, &InstanceListOptions{IO: f.IOStreams, Store: f.Store, Output: formatTable}); err != nil || f.errOut.Len() != 0 {
		t.Errorf("list after delete: %v, stderr %q", err, f.errOut.String())
	}
}
