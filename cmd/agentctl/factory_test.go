package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/cmd/internal/provision"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/spf13/cobra"
)

// testFactory is a factory for a test: streams over buffers (see
// [newTestIOStreams]), HOME, XDG directories and the state directory under
// a temporary directory, no config file.
type testFactory struct {
	*Factory
	in, out, errOut *bytes.Buffer
	dir             string // the temporary directory
}

func newTestFactory(t *testing.T, env ...string) *testFactory {
	t.Helper()
	f := newUnloadedTestFactory(t, env...)
	if err := f.Config.load(nil); err != nil {
		t.Fatal(err)
	}
	return f
}

// newUnloadedTestFactory is [newTestFactory] with its settings not read
// yet: [runCommand] reads them from the flags of the command it runs.
func newUnloadedTestFactory(t *testing.T, env ...string) *testFactory {
	t.Helper()
	dir := t.TempDir()
	vars := map[string]string{
		"HOME":               dir,
		"XDG_CONFIG_HOME":    filepath.Join(dir, "config"),
		"AGENTCTL_STATE_DIR": filepath.Join(dir, "state"),
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	getenv := func(k string) string { return vars[k] }
	ios, in, out, errOut := newTestIOStreams(env...)
	f := newFactory(ios, getenv, "/opt/agentctl/bin/agentctl")
	return &testFactory{Factory: f, in: in, out: out, errOut: errOut, dir: dir}
}

// create provisions an instance of agent with mounts in the factory's store.
func (f *testFactory) create(t *testing.T, agent string, mounts ...mount.Mount) *instance.Record {
	t.Helper()
	cat, err := agents.Load(agents.LoadOptions{UserDir: f.Config.AgentsDir()})
	if err != nil {
		t.Fatal(err)
	}
	def, err := cat.Lookup(agent)
	if err != nil {
		t.Fatal(err)
	}
	open := func(ctx context.Context) (*instance.Store, error) { return f.Store(ctx, true) }
	rec, _, err := provision.Create(context.Background(), open, provision.CreateOptions{
		Definition: def, Workspace: f.dir, Executable: "/opt/agentctl/bin/agentctl", Mounts: mounts,
	})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// reset empties the output buffers.
func (f *testFactory) reset() {
	f.out.Reset()
	f.errOut.Reset()
}

// runCommand runs cmd, one command as its NewCmd function builds it, with
// the command line args, as the root command would: the settings are read
// from its flags first (see [NewCmdRoot]). The GitHub CLI's TestNewCmd
// tests do the same with a runF that captures the options.
func runCommand(f *testFactory, cmd *cobra.Command, args ...string) error {
	cmd.PersistentPreRunE = func(c *cobra.Command, _ []string) error { return f.Config.load(c.Flags()) }
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{msg: err.Error()} })
	cmd.SetArgs(args)
	cmd.SetIn(f.in)
	cmd.SetOut(f.out)
	cmd.SetErr(f.errOut)
	return cmd.Execute()
}

// TestStoreLeftToExit: a command run as the whole process (Main) leaves its
// committed writes in the WAL for the process's exit instead of
// checkpointing on close, and the next process reads them; a command run
// in-process (Run, which tests and embedders use) closes the store, and its
// close folds the WAL into the database.
func TestStoreLeftToExit(t *testing.T) {
	e := newRCEnv(t)
	ctx := t.Context()
	rec := e.create(ctx, "--agent", "auggie", "--workspace", e.work)
	wal := filepath.Join(e.state, instance.DBFile+"-wal")
	fi, err := os.Stat(wal)
	if err != nil || fi.Size() == 0 {
		t.Fatalf("after `instance create` exited, the WAL should hold its commit: %v, %v", fi, err)
	}
	if out := e.mustRun(ctx, "instance", "list", "-o", "json"); !strings.Contains(out, rec.ID) {
		t.Fatalf("the next process does not see %s:\n%s", rec.ID, out)
	}

	var out, errOut bytes.Buffer
	env := map[string]string{"AGENTCTL_STATE_DIR": e.state, "HOME": e.home, "XDG_CONFIG_HOME": e.config}
	if code := Run(ctx, []string{"agentctl", "instance", "create", "--agent", "auggie", "--workspace", e.work}, strings.NewReader(""), &out, &errOut,
		func(k string) string { return env[k] }); code != 0 {
		t.Fatalf("in-process run: exit %d: %s", code, errOut.String())
	}
	if _, err := os.Stat(wal); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an in-process run should close the store, checkpointing the WAL away; stat: %v", err)
	}
	id := strings.TrimSpace(out.String())
	if list := e.mustRun(ctx, "instance", "list", "-o", "json"); id == "" || !strings.Contains(list, id) || !strings.Contains(list, rec.ID) {
		t.Fatalf("an instance is lost (in-process %q, first %s):\n%s", id, rec.ID, list)
	}
}
