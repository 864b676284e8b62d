package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/testkit"
)

// TestRunRefusesAPasswordTheEndpointCannotFind: the store's password given
// only in --store never reaches the client's file, so the endpoint the
// client starts would fail to connect while `instance run` said the client
// started; run refuses instead (exit code 4), saying where to put it, and
// goes on when the password is where the endpoint looks.
func TestRunRefusesAPasswordTheEndpointCannotFind(t *testing.T) {
	t.Parallel()
	bin := realBinary(t)
	pg := testkit.StartPostgres(t)
	store := pg.NewDatabase(t)
	home := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PGPASSWORD=") && !strings.HasPrefix(kv, "PGPASSFILE=") && !strings.HasPrefix(kv, "AGENTCTL_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "AGENTCTL_STATE_DIR="+filepath.Join(home, "state"),
		"PATH="+t.TempDir()) // no client on it: a run that gets past the check stops there
	run := func(extra []string, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--store", store}, args...)...)
		cmd.Env = append(env[:len(env):len(env)], extra...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	out, code := run(nil, "instance", "create", "--agent", "claude-code", "--workspace", t.TempDir(), "--name", "pw")
	if code != 0 {
		t.Fatalf("create: %d %s", code, out)
	}
	const refused = "the endpoint the client starts would not find it"
	out, code = run(nil, "instance", "run", "pw", "--prompt", "hi")
	if code != 4 || !strings.Contains(out, refused) || !strings.Contains(out, "PGPASSWORD or ~/.pgpass") || strings.Contains(out, pg.Password()) {
		t.Errorf("run with the password only in --store: exit %d\n%s", code, out)
	}
	for _, extra := range [][]string{{"PGPASSWORD=" + pg.Password()}, {"AGENTCTL_STORE=" + store}} {
		if out, _ := run(extra, "instance", "run", "pw", "--prompt", "hi"); strings.Contains(out, refused) {
			t.Errorf("run with %s: refused\n%s", strings.SplitN(extra[0], "=", 2)[0], out)
		}
	}
}
