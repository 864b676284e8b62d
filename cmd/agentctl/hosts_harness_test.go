package main

// Many hosts sharing one PostgreSQL store: each "host" here is a state
// directory, HOME and workspace of its own, whose commands run with
// AGENTCTL_STORE naming the same database and AGENTCTL_HOST its name.
// Commands that read and print run in-process (the root command with a
// factory over buffers); what is about processes (a client's run, an
// endpoint a client starts, a daemon) runs the real binary. The
// PostgreSQL servers are the tests' own (testkit.StartPostgres): one
// shared by the subtests of TestHostsFleet, each with a database of its
// own, and one that TestHostsStoreDown stops.
//
// TestHostsFleet/LogsFollowSpuriousWakes fails while launch.Run stores a
// headless run's last output (its RunLogWriter's Close, deferred) after it
// has recorded the run's end (EndRun): a follower on another host that
// wakes in between reads the end, prints what is stored, and stops
// without the run's last output.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/jackc/pgx/v5"
)

// hostsHost is one host of a fleet: an [rcEnv] (state directory, HOME,
// XDG directories, workspace, the real binary) with the store it shares
// and its name; store "" is SQLite in its state directory.
type hostsHost struct {
	*rcEnv
	name     string // AGENTCTL_HOST ("" for none)
	store    string // AGENTCTL_STORE, with the password ("" for SQLite)
	password string // the store's password, for the processes' PGPASSWORD
}

func newHostsHost(t *testing.T, pg *testkit.Postgres, store, name string) *hostsHost {
	t.Helper()
	h := &hostsHost{rcEnv: newRCEnv(t), name: name, store: store}
	if pg != nil {
		h.password = pg.Password()
	}
	return h
}

// vars is the environment of the in-process commands.
func (h *hostsHost) vars() map[string]string {
	v := map[string]string{
		"AGENTCTL_STATE_DIR": h.state,
		"HOME":               h.home,
		"XDG_CONFIG_HOME":    h.config,
		"XDG_STATE_HOME":     filepath.Join(h.root, "xdg-state"),
		"XDG_CACHE_HOME":     filepath.Join(h.root, "xdg-cache"),
		"XDG_DATA_HOME":      filepath.Join(h.root, "xdg-data"),
		"NO_COLOR":           "1",
	}
	if h.store != "" {
		v["AGENTCTL_STORE"] = h.store
	}
	if h.name != "" {
		v["AGENTCTL_HOST"] = h.name
	}
	return v
}

// procEnv is what the real binary's environment adds to [rcEnv.cliEnv]:
// the store and the host name, and the password where libpq's tools look
// for it, since the endpoint entries a client starts name the store
// without it.
func (h *hostsHost) procEnv() []string {
	var env []string
	if h.store != "" {
		env = append(env, "AGENTCTL_STORE="+h.store, "PGPASSWORD="+h.password)
	}
	if h.name != "" {
		env = append(env, "AGENTCTL_HOST="+h.name)
	}
	return env
}

// hostsOut is the outcome of one in-process command.
type hostsOut struct {
	args           []string
	code           int
	stdout, stderr string
}

func (r hostsOut) String() string {
	return "agentctl " + strings.Join(r.args, " ") + ": exit " + itoa(r.code) + "\nstdout:\n" + r.stdout + "\nstderr:\n" + r.stderr
}

// exec runs agentctl args in-process on h, as Main would but with streams
// over buffers: stdout a terminal 1000 columns wide when tty is set (tables
// with a header), else a pipe (tab-separated, no header). The executable
// the client files name is the real binary.
func (h *hostsHost) exec(ctx context.Context, tty bool, args ...string) hostsOut {
	h.t.Helper()
	vars := h.vars()
	getenv := func(k string) string { return vars[k] }
	var out, errOut bytes.Buffer
	ios := newIOStreams(strings.NewReader(""), &out, &errOut, getenv)
	if tty {
		ios.SetStdoutTTY(true)
		ios.SetTerminalWidth(1000)
	}
	code := execute(ctx, newFactory(ios, getenv, h.bin), args)
	return hostsOut{args: args, code: code, stdout: out.String(), stderr: errOut.String()}
}

// must is [hostsHost.exec] (no terminal) that fails the test unless the
// command exits 0, and returns its stdout.
func (h *hostsHost) must(ctx context.Context, args ...string) string {
	h.t.Helper()
	res := h.exec(ctx, false, args...)
	if res.code != 0 {
		h.t.Fatalf("on %s: want exit 0\n%s", h.label(), res)
	}
	return res.stdout
}

func (h *hostsHost) label() string {
	if h.name == "" {
		return "the SQLite host"
	}
	return h.name
}

// hostsRecord is what these tests read of `instance create/show -o json`.
type hostsRecord struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Agent         string `json:"agent"`
	Host          string `json:"host"`
	Workspace     string `json:"workspace"`
	Dir           string `json:"dir"`
	MCPConfigPath string `json:"mcp_config_path"`
	ServerName    string `json:"server_name"`
	Token         string `json:"token"`
}

// create is `instance create -o json` on h, in a workspace of its own
// unless flags give one.
func (h *hostsHost) create(ctx context.Context, flags ...string) hostsRecord {
	h.t.Helper()
	args := []string{"instance", "create", "-o", "json"}
	if !slices.Contains(flags, "--workspace") {
		ws, err := os.MkdirTemp(h.root, "ws-")
		if err != nil {
			h.t.Fatal(err)
		}
		args = append(args, "--workspace", ws)
	}
	out := h.must(ctx, append(args, flags...)...)
	var rec hostsRecord
	if err := json.Unmarshal([]byte(out), &rec); err != nil || rec.ID == "" {
		h.t.Fatalf("instance create -o json on %s: %v\n%s", h.label(), err, out)
	}
	if h.name != "" && rec.Host != h.name {
		h.t.Errorf("instance create on %s: host %q, want %q (AGENTCTL_HOST)", h.name, rec.Host, h.name)
	}
	instanceTokens.Store(rec.ID, rec.Token)
	return rec
}

// hostsTable parses a table printed to a terminal (lipgloss, cells
// between │): its header and its rows.
func hostsTable(t *testing.T, out string) (head []string, rows [][]string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "│") {
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "│"), "│") {
			cells = append(cells, strings.TrimSpace(c))
		}
		if head == nil {
			head = cells
		} else {
			rows = append(rows, cells)
		}
	}
	if head == nil {
		t.Fatalf("no table in:\n%s", out)
	}
	return head, rows
}

// hostsTSV splits tab-separated output (a table off a terminal) into rows.
func hostsTSV(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if line != "" {
			rows = append(rows, strings.Split(line, "\t"))
		}
	}
	return rows
}

// hostsOpen opens the store h's commands use, as h, in the test process.
func hostsOpen(ctx context.Context, t *testing.T, h *hostsHost, opts ...instance.Option) *instance.Store {
	t.Helper()
	st, err := instance.Open(ctx, h.state, append([]instance.Option{instance.WithStore(instance.StoreURL(h.store)), instance.WithHost(h.name)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// hostsEntry reads the MCP configuration file at path (the
// {"mcpServers": {S: {command, args}}} of Claude Code) and returns the
// entry S.
func hostsEntry(t *testing.T, path, server string) (command string, args []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the client configuration: %v", err)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("%s is not JSON: %v\n%s", path, err, data)
	}
	e, ok := cfg.MCPServers[server]
	if !ok {
		t.Fatalf("%s has no entry %q:\n%s", path, server, data)
	}
	return e.Command, e.Args
}

// hostsArgAfter is the argument that follows flag in args, or "".
func hostsArgAfter(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// localPath is where host h keeps the file that rec (created on another
// host) has at path in its own directory.
func (h *hostsHost) localPath(t *testing.T, rec hostsRecord, path string) string {
	t.Helper()
	rel, err := filepath.Rel(rec.Dir, path)
	if err != nil || !filepath.IsLocal(rel) {
		t.Fatalf("%s is not inside the instance directory %s", path, rec.Dir)
	}
	return filepath.Join(h.state, "instances", rec.ID, rel)
}

func hostsCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	t.Cleanup(cancel)
	return ctx
}

// hostsFollowing is an `instance logs --follow` under way: a process of
// the real binary, whose timing the race detector does not change.
type hostsFollowing struct {
	done chan hostsFollowed
}

type hostsFollowed struct {
	hostsOut
	at time.Time // when it returned
}

// follow starts `instance logs ID --follow` on h and returns once it has
// begun: once its listener (which it starts as it takes the time it
// follows runs from) listens, as conn (a connection to the store's
// database) sees in pg_stat_activity.
func (h *hostsHost) follow(ctx context.Context, t *testing.T, conn *pgx.Conn, id string) *hostsFollowing {
	t.Helper()
	var since time.Time
	if err := conn.QueryRow(ctx, `SELECT now()`).Scan(&since); err != nil {
		t.Fatal(err)
	}
	f := &hostsFollowing{done: make(chan hostsFollowed, 1)}
	args := []string{"instance", "logs", id, "--follow"}
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Env, cmd.Dir = append(h.cliEnv(), h.procEnv()...), h.work
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		res := hostsOut{args: args, code: -1}
		if err := cmd.Wait(); err == nil {
			res.code = 0
		} else if ee, ok := err.(*exec.ExitError); ok {
			res.code = ee.ExitCode()
		}
		res.stdout, res.stderr = out.String(), errOut.String()
		f.done <- hostsFollowed{res, time.Now()}
	}()
	giveUp := time.After(30 * time.Second)
	for listening := false; !listening; {
		if err := conn.QueryRow(ctx, `SELECT count(*) > 0 FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE 'LISTEN %' AND backend_start >= $1`, since).Scan(&listening); err != nil {
			t.Fatal(err)
		}
		select {
		case res := <-f.done:
			t.Fatalf("instance logs --follow on %s ended before the run:\n%s", h.label(), res.hostsOut)
		case <-giveUp:
			t.Fatalf("instance logs --follow on %s of another host's instance does not listen for the store's notifications after 30 s", h.label())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return f
}

// wait waits (30 s at most) for the follow to end, as the run it follows
// has.
func (f *hostsFollowing) wait(t *testing.T) hostsFollowed {
	t.Helper()
	select {
	case res := <-f.done:
		return res
	case <-time.After(30 * time.Second):
		t.Fatalf("instance logs --follow did not end with the run")
	}
	return hostsFollowed{}
}
