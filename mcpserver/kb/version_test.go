package kb

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteIfVersion: an edit written with the version its read gave is
// refused when the concept changed since (a teammate's edit, another
// agent's write), naming the version it holds now, and leaves the file as
// it is; before, concept_write replaced it and the other change was lost.
func TestWriteIfVersion(t *testing.T) {
	ctx := context.Background()
	kb, dir := openTest(t, "docs", map[string]string{"runbook.md": "# Runbook\nstep 1\n"}, Options{})
	read, err := kb.Read(ctx, "runbook")
	if err != nil || read.Version == "" || read.Version != Version([]byte(read.Content)) {
		t.Fatalf("read: %+v, %v", read, err)
	}
	// Someone else adds a step meanwhile.
	theirs := "# Runbook\nstep 1\nstep 2\n"
	if err := os.WriteFile(filepath.Join(dir, "runbook.md"), []byte(theirs), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = kb.WriteIf(ctx, "runbook", "# Runbook\nstep 1 (clarified)\n", read.Version)
	if !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), "it is version "+Version([]byte(theirs))+" now") {
		t.Fatalf("a write over a change made since the read: %v, want ErrChanged naming the version now", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "runbook.md")); string(b) != theirs {
		t.Fatalf("the refused write changed the file: %q", b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".runbook.md*")); len(left) != 0 {
		t.Fatalf("the refused write left %v", left)
	}
	// With the version it holds now, the edit is written, and its version
	// is the next read's.
	out, err := kb.WriteIf(ctx, "runbook", theirs+"step 3\n", Version([]byte(theirs)))
	if err != nil {
		t.Fatal(err)
	}
	if again, err := kb.Read(ctx, "runbook"); err != nil || again.Version != out.Version {
		t.Fatalf("written version %s, read %+v (%v)", out.Version, again, err)
	}
	// A concept removed since its read is not made again by an edit.
	if err := os.Remove(filepath.Join(dir, "runbook.md")); err != nil {
		t.Fatal(err)
	}
	if _, err := kb.WriteIf(ctx, "runbook", "x\n", out.Version); !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), "was removed since") {
		t.Fatalf("an edit of a removed concept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "runbook.md")); err == nil {
		t.Fatal("an edit of a removed concept made it again")
	}
	// Without if_version a write is a write, as before.
	if _, err := kb.WriteIf(ctx, "runbook", "# New\n", ""); err != nil {
		t.Fatal(err)
	}
}
