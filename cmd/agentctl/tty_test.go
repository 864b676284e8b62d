package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMountAddConfirmsAtATerminal: off a terminal a renaming change needs
// --yes (the scripts show that); at a terminal agentctl asks, and only "y"
// changes anything. util-linux's script(1) gives the command a terminal.
func TestMountAddConfirmsAtATerminal(t *testing.T) {
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Fatal("script(1) is needed to give the command a terminal: apt-get install bsdutils")
	}
	bin := realBinary(t)
	dir := t.TempDir()
	for _, kb := range []string{"a", "b"} {
		if err := os.Mkdir(filepath.Join(dir, kb), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "AGENTCTL_STATE_DIR="+filepath.Join(dir, "state"), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "cfg"), "NO_COLOR=1")
	run := func(stdin string, args ...string) (string, int) {
		cmd := exec.Command(scriptBin, "-qec", strings.Join(append([]string{bin}, args...), " "), "/dev/null")
		cmd.Env = env
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	if out, code := run("", "instance", "create", "--agent", "auggie", "--name", "p", "--workspace", dir, "--kb", "a="+filepath.Join(dir, "a")); code != 0 {
		t.Fatalf("create: %d %s", code, out)
	}
	out, code := run("n\n", "instance", "mount", "add", "p", "--kb", "b="+filepath.Join(dir, "b"))
	if code != ExitInvalid || !strings.Contains(out, "rename: concept_read -> a__concept_read") || !strings.Contains(out, "Rename 4 tool(s)? [y/N]") || !strings.Contains(out, "not changed") {
		t.Fatalf("answer n: exit %d\n%s", code, out)
	}
	out, code = run("y\n", "instance", "mount", "add", "p", "--kb", "b="+filepath.Join(dir, "b"))
	if code != 0 || !strings.Contains(out, "now has 2 mount(s)") {
		t.Fatalf("answer y: exit %d\n%s", code, out)
	}
}
