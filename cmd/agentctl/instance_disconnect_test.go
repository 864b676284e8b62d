package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/instance"
)

// TestDisconnectHandEditedExit4: `instance disconnect` of an entry edited by
// hand since connect leaves it, exits 4 and says to pass --force; with
// --force it is removed and the file before is named as a backup.
func TestDisconnectHandEditedExit4(t *testing.T) {
	f := newTestFactory(t)
	rec := f.create(t, "cursor")
	ctx := context.Background()
	opts := &InstanceConnectOptions{IO: f.IOStreams, Store: f.Store, Getenv: f.Config.getenv, Instance: rec.ID, Scope: instance.ScopeWorkspace}
	if err := instanceConnectRun(ctx, opts, instance.Connect); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(f.dir, ".cursor", "mcp.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), `"command": `, `"env": {"DEBUG": "1"}, "command": `, 1)
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	f.reset()
	err = instanceConnectRun(ctx, opts, instance.Disconnect)
	if code := exitCode(ctx, err); code != ExitInvalid || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("disconnect of a hand-edited entry: exit %d, %v; want %d and the fix", code, err, ExitInvalid)
	}
	if got, _ := os.ReadFile(path); string(got) != edited {
		t.Errorf("the hand-edited file changed:\n%s", got)
	}
	opts.Force, opts.Output = true, formatJSON
	if err := instanceConnectRun(ctx, opts, instance.Disconnect); err != nil {
		t.Fatal(err)
	}
	bak := path + instance.BackupSuffix + ".1"
	if !strings.Contains(f.errOut.String(), "The file as it was before this change: "+bak) || !strings.Contains(f.out.String(), `"previous": "`+bak+`"`) {
		t.Errorf("stderr %q, stdout %q: want the backup named", f.errOut, f.out)
	}
	if got, _ := os.ReadFile(bak); string(got) != edited {
		t.Errorf("backup holds\n%s\nwant the hand-edited file", got)
	}
}
