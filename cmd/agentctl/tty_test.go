package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/mcpserver/mount"
)

// TestMountAddConfirmsAtATerminal: a change that renames tools asks at a
// terminal, and only "y" changes anything; off a terminal it needs --yes.
func TestMountAddConfirmsAtATerminal(t *testing.T) {
	t.Parallel()
	f := newTestFactory(t)
	for _, kb := range []string{"a", "b"} {
		if err := os.Mkdir(filepath.Join(f.dir, kb), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rec := f.create(t, "auggie", mount.Mount{Kind: mount.KindKB, Name: "a", Path: filepath.Join(f.dir, "a")})
	opts := &InstanceMountAddOptions{
		IO: f.IOStreams, Store: f.Store, Instance: rec.ID, Output: formatTable,
		Mounts: []mount.Mount{{Kind: mount.KindKB, Name: "b", Path: filepath.Join(f.dir, "b")}},
	}
	ctx := context.Background()
	wantExit := func(err error, code int, msg string) {
		t.Helper()
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != code || !strings.Contains(err.Error(), msg) {
			t.Fatalf("err %v, want exit %d and %q\nstderr:\n%s", err, code, msg, f.errOut)
		}
	}

	// Off a terminal: refused, with the renames listed and no question.
	err := instanceMountAddRun(ctx, opts)
	wantExit(err, ExitInvalid, "re-run with --yes")
	if got := f.errOut.String(); !strings.Contains(got, "rename: concept_read -> a__concept_read") || strings.Contains(got, "[y/N]") {
		t.Errorf("stderr off a terminal:\n%s", got)
	}

	// At a terminal: asked; "n" changes nothing.
	f.IOStreams.SetStdinTTY(true)
	f.IOStreams.SetStderrTTY(true)
	f.reset()
	f.in.WriteString("n\n")
	wantExit(instanceMountAddRun(ctx, opts), ExitInvalid, "not changed")
	if got := f.errOut.String(); !strings.Contains(got, "rename: concept_read -> a__concept_read") || !strings.Contains(got, "Rename 4 tool(s)? [y/N] ") {
		t.Errorf("stderr at a terminal:\n%s", got)
	}

	// Nothing is asked for a terminal's stdout alone: the question goes to stderr.
	f.IOStreams.SetStderrTTY(false)
	f.reset()
	f.in.WriteString("y\n")
	wantExit(instanceMountAddRun(ctx, opts), ExitInvalid, "re-run with --yes")
	f.IOStreams.SetStderrTTY(true)

	// "y" changes it.
	f.reset()
	f.in.Reset()
	f.in.WriteString("y\n")
	if err := instanceMountAddRun(ctx, opts); err != nil {
		t.Fatalf("answer y: %v\nstderr:\n%s", err, f.errOut)
	}
	if got := f.out.String(); got != rec.ID+"\n" || !strings.Contains(f.errOut.String(), "now has 2 mount(s)") {
		t.Errorf("answer y: stdout %q, stderr:\n%s", got, f.errOut)
	}
}

// TestMountAddConfirmsAtARealTerminal is the same through a real terminal
// once, end to end: util-linux's script(1) gives the binary one.
func TestMountAddConfirmsAtARealTerminal(t *testing.T) {
	t.Parallel()
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) gives the command a terminal: apt-get install bsdutils")
	}
	bin := realBinary(t)
	f := newTestFactory(t)
	for _, kb := range []string{"a", "b"} {
		if err := os.Mkdir(filepath.Join(f.dir, kb), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rec := f.create(t, "auggie", mount.Mount{Kind: mount.KindKB, Name: "a", Path: filepath.Join(f.dir, "a")})
	cmd := exec.Command(scriptBin, "-qec", strings.Join([]string{bin, "instance", "mount", "add", rec.ID, "--kb", "b=" + filepath.Join(f.dir, "b")}, " "), "/dev/null")
	cmd.Env = append(cleanEnviron(), "AGENTCTL_STATE_DIR="+f.Config.StateDir(), "HOME="+f.dir, "XDG_CONFIG_HOME="+filepath.Join(f.dir, "cfg"), "NO_COLOR=1")
	cmd.Stdin = strings.NewReader("y\n")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Rename 4 tool(s)? [y/N]") || !strings.Contains(string(out), "now has 2 mount(s)") {
		t.Fatalf("answer y at a terminal: %v\n%s", err, out)
	}
}
