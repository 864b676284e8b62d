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
	"context"
	"encoding/json"
	"errors"
	"net/http"
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
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHostsFleet: two hosts (and a SQLite host for contrast) on one
// PostgreSQL server, a database per subtest.
func TestHostsFleet(t *testing.T) {
	t.Parallel()
	pg := testkit.StartPostgres(t)
	pair := func(t *testing.T) (a, b *hostsHost, store string) {
		store = pg.NewDatabase(t)
		return newHostsHost(t, pg, store, "host-a"), newHostsHost(t, pg, store, "host-b"), store
	}

	// instance list shows the fleet's instances with their HOST; --host
	// and --here keep one host's.
	t.Run("List", func(t *testing.T) {
		t.Parallel()
		ctx := hostsCtx(t)
		a, b, _ := pair(t)
		a1 := a.create(ctx, "--agent", "claude-code", "--name", "alpha")
		b1 := b.create(ctx, "--agent", "claude-code")
		a2 := a.create(ctx, "--agent", "auggie")
		want := map[string]string{a1.ID: "host-a", b1.ID: "host-b", a2.ID: "host-a"}
		order := []string{a1.ID, b1.ID, a2.ID} // oldest first

		// On a terminal: a HOST column, each instance's host in it.
		for _, h := range []*hostsHost{a, b} {
			res := h.exec(ctx, true, "instance", "list")
			if res.code != 0 {
				t.Fatalf("%s", res)
			}
			head, rows := hostsTable(t, res.stdout)
			col, idCol := slices.Index(head, "HOST"), slices.Index(head, "ID")
			if col < 0 || idCol < 0 {
				t.Fatalf("instance list on %s (PostgreSQL): no HOST or ID column in %q\n%s", h.name, head, res.stdout)
			}
			var ids []string
			for _, r := range rows {
				id := hostsFullID(t, r[idCol], order...)
				ids = append(ids, id)
				if r[col] != want[id] {
					t.Errorf("instance list on %s: %s has HOST %q, want %q", h.name, id, r[col], want[id])
				}
			}
			if !slices.Equal(ids, order) {
				t.Errorf("instance list on %s lists %v, want every host's instances oldest first %v", h.name, ids, order)
			}
		}
		// Off a terminal: HOST is the 4th column (after ID, NAME, AGENT).
		for _, r := range hostsTSV(a.must(ctx, "instance", "list")) {
			if len(r) < 4 || r[3] != want[r[0]] {
				t.Errorf("instance list | cat: row %q, want HOST %q as the 4th column", r, want[r[0]])
			}
		}

		// --host NAME keeps that host's, from any host.
		listIDs := func(h *hostsHost, args ...string) (ids, hosts []string) {
			t.Helper()
			out := h.must(ctx, append([]string{"instance", "list", "-o", "json"}, args...)...)
			var recs []hostsRecord
			if err := json.Unmarshal([]byte(out), &recs); err != nil {
				t.Fatalf("instance list -o json %v: %v\n%s", args, err, out)
			}
			for _, r := range recs {
				ids, hosts = append(ids, r.ID), append(hosts, r.Host)
			}
			return ids, hosts
		}
		if ids, hosts := listIDs(b); !slices.Equal(ids, order) || !slices.Equal(hosts, []string{"host-a", "host-b", "host-a"}) {
			t.Errorf("instance list -o json on host-b: ids %v hosts %q, want %v with \"host\" host-a, host-b, host-a", ids, hosts, order)
		}
		if ids, _ := listIDs(b, "--host", "host-a"); !slices.Equal(ids, []string{a1.ID, a2.ID}) {
			t.Errorf("instance list --host host-a on host-b: %v, want host-a's %v", ids, []string{a1.ID, a2.ID})
		}
		if ids, _ := listIDs(a, "--host", "nowhere"); len(ids) != 0 {
			t.Errorf("instance list --host nowhere: %v, want none", ids)
		}
		if ids, _ := listIDs(b, "--here"); !slices.Equal(ids, []string{b1.ID}) {
			t.Errorf("instance list --here on host-b: %v, want host-b's [%s]", ids, b1.ID)
		}
		if ids, _ := listIDs(a, "--here"); !slices.Equal(ids, []string{a1.ID, a2.ID}) {
			t.Errorf("instance list --here on host-a: %v, want host-a's", ids)
		}
		// The table too keeps one host's.
		res := b.exec(ctx, true, "instance", "list", "--here")
		if _, rows := hostsTable(t, res.stdout); res.code != 0 || len(rows) != 1 || hostsFullID(t, rows[0][1], order...) != b1.ID {
			t.Errorf("instance list --here on host-b (terminal): want the one row of %s\n%s", b1.ID, res)
		}

		res = b.exec(ctx, false, "instance", "list", "--here", "--host", "x")
		if res.code != ExitUsage || !strings.Contains(res.stderr, "--here") || !strings.Contains(res.stderr, "--host") {
			t.Errorf("instance list --here --host x: want exit %d (usage) naming both flags\n%s", ExitUsage, res)
		}

		// A store of one host's (SQLite) has no HOST column.
		s := newHostsHost(t, nil, "", "")
		s1 := s.create(ctx, "--agent", "claude-code")
		res = s.exec(ctx, true, "instance", "list")
		head, rows := hostsTable(t, res.stdout)
		if res.code != 0 || slices.Contains(head, "HOST") || len(rows) != 1 || hostsFullID(t, rows[0][1], s1.ID) != s1.ID {
			t.Errorf("instance list on SQLite: want one row and no HOST column, got header %q\n%s", head, res)
		}
		if r := hostsTSV(s.must(ctx, "instance", "list")); len(r) != 1 || len(r[0]) != len(head) {
			t.Errorf("instance list | cat on SQLite: %q, want one row of the %d columns %q", r, len(head), head)
		}
	})

	// instance questions without an instance is the fleet's inbox: every
	// open question of every host's instances, oldest first.
	t.Run("Inbox", func(t *testing.T) {
		t.Parallel()
		ctx := hostsCtx(t)
		a, b, _ := pair(t)
		ra := a.create(ctx, "--agent", "claude-code", "--name", "alpha")
		rb := b.create(ctx, "--agent", "auggie")
		// Each host asks through the store at the times its clock says:
		// hosts interleaved, so that only the time orders them.
		t0 := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
		at := func(d time.Duration) instance.Option {
			return instance.WithClock(func() time.Time { return t0.Add(d) })
		}
		ask := func(h *hostsHost, id, text string, d time.Duration) string {
			t.Helper()
			q, err := hostsOpen(ctx, t, h, at(d)).AddQuestion(ctx, id, text, nil)
			if err != nil {
				t.Fatal(err)
			}
			return q.ID
		}
		q1 := ask(b, rb.ID, "first, from host-b?", 0)
		q2 := ask(a, ra.ID, "second, from host-a?", time.Second)
		q3 := ask(b, rb.ID, "third, from host-b?", 2*time.Second)
		qa := ask(a, ra.ID, "answered already?", 3*time.Second)
		if _, err := hostsOpen(ctx, t, b).Answer(ctx, ra.ID, qa, "yes", true); err != nil {
			t.Fatal(err)
		}
		type row struct{ inst, host, id, text string }
		want := []row{{rb.ID, "host-b", q1, "first, from host-b?"}, {"alpha", "host-a", q2, "second, from host-a?"}, {rb.ID, "host-b", q3, "third, from host-b?"}}

		res := a.exec(ctx, true, "instance", "questions")
		if res.code != 0 {
			t.Fatalf("%s", res)
		}
		head, rows := hostsTable(t, res.stdout)
		ci, ch, cid, cq := slices.Index(head, "INSTANCE"), slices.Index(head, "HOST"), slices.Index(head, "ID"), slices.Index(head, "QUESTION")
		if ci < 0 || ch < 0 || cid < 0 || cq < 0 {
			t.Fatalf("instance questions on PostgreSQL: header %q, want INSTANCE, HOST, ID and QUESTION\n%s", head, res.stdout)
		}
		var got []row
		for _, r := range rows {
			inst := r[ci] // the label, else the id's shortest unique prefix
			if inst != "alpha" {
				inst = hostsFullID(t, inst, rb.ID)
			}
			got = append(got, row{inst, r[ch], r[cid], r[cq]})
		}
		if !slices.Equal(got, want) {
			t.Errorf("instance questions (the inbox) on host-a:\n got %q\nwant %q (open ones of both hosts, oldest first)", got, want)
		}
		// Off a terminal: INSTANCE, HOST, ID first.
		got = nil
		for _, r := range hostsTSV(b.must(ctx, "instance", "questions")) {
			if len(r) < 5 {
				t.Fatalf("instance questions | cat: row %q", r)
			}
			got = append(got, row{r[0], r[1], r[2], r[4]})
		}
		if !slices.Equal(got, want) {
			t.Errorf("instance questions | cat on host-b:\n got %q\nwant %q", got, want)
		}

		out := b.must(ctx, "instance", "questions", "-o", "json")
		var qs []map[string]any
		if err := json.Unmarshal([]byte(out), &qs); err != nil || qs == nil {
			t.Fatalf("instance questions -o json: want a JSON array: %v\n%s", err, out)
		}
		wantJSON := []map[string]any{
			{"id": q1, "instance_id": rb.ID, "instance_name": "", "agent": "auggie", "host": "host-b"},
			{"id": q2, "instance_id": ra.ID, "instance_name": "alpha", "agent": "claude-code", "host": "host-a"},
			{"id": q3, "instance_id": rb.ID, "instance_name": "", "agent": "auggie", "host": "host-b"},
		}
		if len(qs) != len(wantJSON) {
			t.Fatalf("instance questions -o json: %d questions, want %d:\n%s", len(qs), len(wantJSON), out)
		}
		for i, w := range wantJSON {
			for k, v := range w {
				if got, ok := qs[i][k]; !ok || got != v {
					t.Errorf("instance questions -o json [%d].%s = %v (present %v), want %q", i, k, got, ok, v)
				}
			}
		}

		res = a.exec(ctx, false, "instance", "questions", "--all")
		if res.code != ExitUsage || !strings.Contains(res.stderr, "--all") {
			t.Errorf("instance questions --all without an instance: want exit %d (usage)\n%s", ExitUsage, res)
		}
		// With an instance, --all is that instance's, answered ones too.
		var mine []rcQuestion
		if err := json.Unmarshal([]byte(b.must(ctx, "instance", "questions", "alpha", "--all", "-o", "json")), &mine); err != nil || len(mine) != 2 {
			t.Errorf("instance questions alpha --all on host-b: %v %+v, want alpha's two questions", err, mine)
		}

		// SQLite: the inbox has no HOST column.
		s := newHostsHost(t, nil, "", "")
		rs := s.create(ctx, "--agent", "claude-code")
		if _, err := hostsOpen(ctx, t, s).AddQuestion(ctx, rs.ID, "alone?", nil); err != nil {
			t.Fatal(err)
		}
		res = s.exec(ctx, true, "instance", "questions")
		head, rows = hostsTable(t, res.stdout)
		if res.code != 0 || slices.Contains(head, "HOST") || !slices.Contains(head, "INSTANCE") || len(rows) != 1 {
			t.Errorf("instance questions on SQLite: want one row, INSTANCE and no HOST column; header %q\n%s", head, res)
		}
	})

	// Another host's instance: host-b makes its client files under its
	// own state directory, runs it and connects it; what it cannot make
	// (a token, templates) is refused naming host-a.
	t.Run("ForeignInstance", func(t *testing.T) {
		t.Parallel()
		ctx := hostsCtx(t)
		a, b, store := pair(t)
		rec := a.create(ctx, "--agent", "claude-code")
		bDir := filepath.Join(b.state, "instances", rec.ID)
		if _, err := os.Stat(bDir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("host-b has a directory for host-a's instance before using it: %v", err)
		}

		res := b.exec(ctx, false, "instance", "run", rec.ID, "--prompt", "hi", "--dry-run", "-o", "json")
		if res.code != 0 {
			t.Fatalf("instance run --dry-run on host-b of host-a's instance:\n%s", res)
		}
		var plan struct {
			Program string   `json:"program"`
			Args    []string `json:"args"`
			Log     string   `json:"log"`
		}
		if err := json.Unmarshal([]byte(res.stdout), &plan); err != nil {
			t.Fatalf("instance run --dry-run -o json: %v\n%s", err, res.stdout)
		}
		cfg := b.localPath(t, rec, rec.MCPConfigPath)
		if got := hostsArgAfter(plan.Args, "--mcp-config"); got != cfg {
			t.Errorf("the plan on host-b hands the client %q, want host-b's copy %s (args %q)", got, cfg, plan.Args)
		}
		if want := filepath.Join(bDir, "run.log"); plan.Log != want {
			t.Errorf("the plan on host-b logs to %q, want %s", plan.Log, want)
		}
		command, args := hostsEntry(t, cfg, rec.ServerName)
		if command != b.bin {
			t.Errorf("host-b's entry starts %q, want this host's agentctl %s", command, b.bin)
		}
		wantStore := instance.RedactStore(store)
		if hostsArgAfter(args, "--instance") != rec.ID || hostsArgAfter(args, "--state-dir") != b.state || hostsArgAfter(args, "--store") != wantStore {
			t.Errorf("host-b's entry args %q, want --instance %s --state-dir %s --store %s", args, rec.ID, b.state, wantStore)
		}
		if data, _ := os.ReadFile(cfg); strings.Contains(string(data), a.password) {
			t.Errorf("host-b's client configuration holds the store's password:\n%s", data)
		}
		if data, err := os.ReadFile(filepath.Join(bDir, "instructions.md")); err != nil || !strings.Contains(string(data), rec.ID) {
			t.Errorf("host-b's instructions.md (%v) does not name the instance:\n%s", err, data)
		}
		// host-a's own files are as create made them.
		if _, args := hostsEntry(t, rec.MCPConfigPath, rec.ServerName); hostsArgAfter(args, "--state-dir") != a.state {
			t.Errorf("host-a's entry args %q changed: want --state-dir %s", args, a.state)
		}

		// A real headless run on host-b: its client starts the endpoint
		// from host-b's entry (the password from PGPASSWORD) and calls it.
		run, rep := b.runWithFake(ctx, fakeClientOnPath(t, "claude"), b.procEnv(), "instance", "run", rec.ID, "--prompt", "hi from b")
		if run.code != 0 || rep == nil || len(rep.Servers) != 1 {
			t.Fatalf("instance run on host-b of host-a's instance: want exit 0 and one server\n%s", run)
		}
		if s := rep.Servers[0]; s.Error != "" || !strings.HasPrefix(s.Called, "get_instance") || !strings.Contains(s.Result, rec.ID) {
			t.Errorf("the client on host-b: server %+v, want get_instance of %s\n%s", s, rec.ID, run)
		}
		if log, err := os.ReadFile(filepath.Join(bDir, "run.log")); err != nil || !strings.Contains(string(log), "fakeclient: prompt=hi from b") {
			t.Errorf("host-b's run.log (%v) lacks the run's output:\n%s", err, log)
		}

		// connect on host-b, of an instance host-b never used: it makes the
		// files first, and the client's file gets host-b's entry.
		rc := a.create(ctx, "--agent", "claude-code")
		res = b.exec(ctx, false, "instance", "connect", rc.ID)
		if res.code != 0 {
			t.Fatalf("instance connect on host-b of host-a's instance:\n%s", res)
		}
		if _, args := hostsEntry(t, filepath.Join(rc.Workspace, ".mcp.json"), rc.ServerName); hostsArgAfter(args, "--instance") != rc.ID ||
			hostsArgAfter(args, "--state-dir") != b.state || hostsArgAfter(args, "--store") != wantStore {
			t.Errorf("the workspace's .mcp.json after connect on host-b: args %q, want host-b's entry (--state-dir %s --store %s)", args, b.state, wantStore)
		}
		if _, err := os.Stat(b.localPath(t, rc, rc.MCPConfigPath)); err != nil {
			t.Errorf("connect on host-b did not make the instance's configuration there: %v", err)
		}

		// An HTTP instance's configuration holds its token: host-b
		// cannot make it.
		rh := a.create(ctx, "--agent", "claude-code", "--transport", "http")
		for _, args := range [][]string{{"instance", "run", rh.ID, "--prompt", "hi", "--dry-run"}, {"instance", "connect", rh.ID}} {
			res = b.exec(ctx, false, args...)
			if res.code != ExitInvalid || !strings.Contains(res.stderr, "host-a") || !strings.Contains(res.stderr, "token") {
				t.Errorf("%s on host-b of host-a's HTTP instance: want exit %d naming host-a and the token\n%s", args[1], ExitInvalid, res)
			}
		}
		// Nor an instance made from templates, kept in host-a's files.
		tpl := filepath.Join(a.root, "instructions.md")
		if err := os.WriteFile(tpl, []byte("Ask with {{tool:ask_user_question}}.\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		rt := a.create(ctx, "--agent", "claude-code", "--instructions", tpl)
		res = b.exec(ctx, false, "instance", "run", rt.ID, "--prompt", "hi", "--dry-run")
		if res.code != ExitInvalid || !strings.Contains(res.stderr, "host-a") || !strings.Contains(res.stderr, "template") {
			t.Errorf("instance run on host-b of host-a's instance made from templates: want exit %d naming host-a and the templates\n%s", ExitInvalid, res)
		}
		for _, id := range []string{rh.ID, rt.ID} {
			if _, err := os.Stat(filepath.Join(b.state, "instances", id, ".mcp.json")); err == nil {
				t.Errorf("a refused instance %s has a client configuration on host-b", id)
			}
		}
	})

	// mcp serve on host-b of host-a's instance: a client lists its tools;
	// host-b's state directory gets the instance's directory.
	// Another host makes an instance's files again from the record: the
	// client file the record names, whatever that host's definition of
	// the agent says now. Before, host-b wrote its definition's
	// fc/two.json, connect then looked for the record's fc/one.json and
	// failed, and every later command failed to publish the files ("file
	// exists"). A delete from host-b says host-a's files stay there.
	t.Run("DefinitionChanged", func(t *testing.T) {
		t.Parallel()
		ctx := hostsCtx(t)
		a, b, _ := pair(t)
		def := func(h *hostsHost, file string) {
			dir := filepath.Join(h.config, "agentctl", "agents")
			body := "id = \"fc\"\nname = \"FC\"\n[mcp]\nfile = \"" + file + "\"\nkey = \"servers\"\n" +
				"entry = { command = \"{command}\", args = \"{args}\" }\n" +
				"[capabilities.tool_names]\nnamespacing = \"none\"\ntemplate = \"{tool}\"\n"
			if strings.HasSuffix(file, ".json") {
				body = strings.Replace(body, "[capabilities", "connect = { workspace = \".fc/mcp.json\" }\n[capabilities", 1)
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "fc.toml"), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		def(a, "fc/one.json")
		def(b, "fc/two.json")
		rec := a.create(ctx, "--agent", "fc")
		local := func(name string) string { return filepath.Join(b.state, "instances", rec.ID, "fc", name) }
		// What an earlier attempt left does not stop the files joining it.
		if err := os.MkdirAll(filepath.Dir(local("left")), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(local("left"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			b.must(ctx, "instance", "connect", rec.ID)
		}
		if _, err := os.Stat(local("one.json")); err != nil {
			t.Errorf("host-b made no fc/one.json, the file the record names: %v", err)
		}
		if _, err := os.Stat(local("two.json")); err == nil {
			t.Error("host-b made fc/two.json, its definition's file, not the record's")
		}
		def(b, "fc/config.yaml")
		if err := os.Remove(local("one.json")); err != nil {
			t.Fatal(err)
		}
		res := b.exec(ctx, false, "instance", "connect", rec.ID)
		if res.code != ExitInvalid || !strings.Contains(res.stderr, `its client reads fc/one.json, but agent "fc"'s definition here writes yaml files`) {
			t.Errorf("connect on host-b with a definition of another file kind: want exit %d saying so\n%s", ExitInvalid, res)
		}
		res = b.exec(ctx, false, "instance", "delete", rec.ID)
		if res.code != 0 || !strings.Contains(res.stderr, "Its files on host host-a ("+rec.Dir+") stay there until `agentctl gc` runs on host-a.") {
			t.Errorf("delete on host-b: want it to say host-a's files stay there\n%s", res)
		}
	})

	t.Run("MCPServe", func(t *testing.T) {
		t.Parallel()
		ctx := hostsCtx(t)
		a, b, _ := pair(t)
		rec := a.create(ctx, "--agent", "claude-code")
		bDir := filepath.Join(b.state, "instances", rec.ID)
		if _, err := os.Stat(bDir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("host-b has a directory for host-a's instance before serving it: %v", err)
		}
		cmd := exec.Command(b.bin, "mcp", "serve", "--instance", rec.ID)
		cmd.Env, cmd.Dir = append(b.cliEnv(), b.procEnv()...), b.work
		stderr := &lockedBuffer{}
		cmd.Stderr = stderr
		client := mcp.NewClient(&mcp.Implementation{Name: "hosts-test", Version: "v1"}, nil)
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("mcp serve on host-b of host-a's instance: %v\nstderr:\n%s", err, stderr.String())
		}
		defer cs.Close()
		names := testkit.ToolNames(ctx, t, cs)
		get := slices.IndexFunc(names, func(n string) bool { return strings.HasPrefix(n, "get_instance") })
		if get < 0 || !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "ask_user_question") }) {
			t.Fatalf("mcp serve on host-b lists %q, want the built-in tools", names)
		}
		got, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: names[get], Arguments: map[string]any{}})
		if err != nil || got.IsError {
			t.Fatalf("%s on host-b: %v %+v", names[get], err, got)
		}
		if raw, _ := json.Marshal(got.StructuredContent); !strings.Contains(string(raw), rec.ID) {
			t.Errorf("%s on host-b answered %s, want instance %s", names[get], raw, rec.ID)
		}
		if fi, err := os.Stat(bDir); err != nil || !fi.IsDir() {
			t.Errorf("serving host-a's instance on host-b made no directory %s: %v", bDir, err)
		}
		if strings.Contains(stderr.String(), a.password) {
			t.Errorf("mcp serve's log shows the store's password:\n%s", stderr.String())
		}
	})

	// A headless run's output is kept in the store, so that `instance
	// logs` on another host prints it, and --follow follows it.
	t.Run("Logs", func(t *testing.T) {
		t.Parallel()
		ctx := hostsCtx(t)
		a, b, store := pair(t)
		rec := a.create(ctx, "--agent", "claude-code")
		path := fakeClientOnPath(t, "claude")

		// host-b follows, from before the run.
		conn, err := pgx.Connect(ctx, store)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		fw := b.follow(ctx, t, conn, rec.ID)

		run, rep := a.runWithFake(ctx, path, a.procEnv(), "instance", "run", rec.ID, "--prompt", "hello from host-a")
		ranAt := time.Now()
		if run.code != 0 || rep == nil {
			t.Fatalf("instance run on host-a:\n%s", run)
		}
		log, err := os.ReadFile(filepath.Join(rec.Dir, "run.log"))
		if err != nil || !strings.Contains(string(log), "fakeclient: prompt=hello from host-a") || !strings.Contains(string(log), " ok\n") {
			t.Fatalf("host-a's run.log (%v) lacks the client's output:\n%s", err, log)
		}

		f := fw.wait(t)
		t.Logf("the run on host-a ended -> instance logs --follow on host-b exited: %v", f.at.Sub(ranAt))
		if f.code != 0 || f.stdout != string(log) {
			t.Errorf("instance logs --follow on host-b: want exit 0 and host-a's run.log exactly\n%s\nrun.log:\n%s", f.hostsOut, log)
		}
		res := b.exec(ctx, false, "instance", "logs", rec.ID)
		if res.code != 0 || res.stdout != string(log) {
			t.Errorf("instance logs on host-b: want host-a's run.log exactly\n%s\nrun.log:\n%s", res, log)
		}
		if _, err := os.Stat(filepath.Join(b.state, "instances", rec.ID, "run.log")); err == nil {
			t.Errorf("host-b has a run.log of host-a's instance: logs should come from the store")
		}

		// SQLite: run.log only, nothing in the store.
		s := newHostsHost(t, nil, "", "")
		rs := s.create(ctx, "--agent", "claude-code")
		if run, _ := s.runWithFake(ctx, path, nil, "instance", "run", rs.ID, "--prompt", "local"); run.code != 0 {
			t.Fatalf("instance run on SQLite:\n%s", run)
		}
		if log, err := os.ReadFile(filepath.Join(rs.Dir, "run.log")); err != nil || !strings.Contains(string(log), "fakeclient: prompt=local") {
			t.Errorf("run.log on SQLite (%v):\n%s", err, log)
		}
		chunks, err := hostsOpen(ctx, t, s).RunLog(ctx, rs.ID, 0)
		if err != nil || len(chunks) != 0 {
			t.Errorf("a run on SQLite stored %d chunks of output in run_logs (%v), want none", len(chunks), err)
		}
	})

	// A follower's wake means "read again", not "there is output": woken
	// for nothing, as a reconnected listener or a tick wakes it, it
	// still prints the whole of a run's output before it ends.
	t.Run("LogsFollowSpuriousWakes", func(t *testing.T) {
		t.Parallel()
		ctx := hostsCtx(t)
		a, b, store := pair(t)
		rec := a.create(ctx, "--agent", "claude-code")
		path := fakeClientOnPath(t, "claude")
		conn, err := pgx.Connect(ctx, store)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		// Wake the followers of the instance's run log all the time.
		waker, err := pgx.Connect(ctx, store)
		if err != nil {
			t.Fatal(err)
		}
		stop, stopped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := waker.Exec(ctx, `SELECT pg_notify('agentctl_logs', $1)`, rec.ID); err != nil {
					return
				}
				time.Sleep(200 * time.Microsecond)
			}
		}()
		defer func() {
			close(stop)
			<-stopped
			waker.Close(context.Background())
		}()
		const runs = 6
		missed := 0
		for i := range runs {
			fw := b.follow(ctx, t, conn, rec.ID)
			run, _ := a.runWithFake(ctx, path, a.procEnv(), "instance", "run", rec.ID, "--prompt", "run "+itoa(i))
			if run.code != 0 {
				t.Fatalf("instance run on host-a:\n%s", run)
			}
			log, err := os.ReadFile(filepath.Join(rec.Dir, "run.log"))
			if err != nil {
				t.Fatal(err)
			}
			// The follower prints the stored output from the first run's.
			if f := fw.wait(t); f.code != 0 || f.stdout != string(log) {
				missed++
				t.Errorf("run %d: instance logs --follow on host-b printed %d bytes, exit %d; host-a's run.log has %d; missing %q",
					i, len(f.stdout), f.code, len(log), strings.TrimPrefix(string(log), f.stdout))
			}
		}
		if missed > 0 {
			t.Errorf("%d of %d follows on host-b ended without the end of the run's output: launch.Run stores the output's last chunk "+
				"(RunLogWriter.Close, deferred) after it records the run's end (EndRun), and a follower that reads the end before that chunk stops", missed, runs)
		}
	})

	// A knowledge base is a folder of the host that created the instance:
	// serving it where the folder is missing says which and where.
	t.Run("KBMissing", func(t *testing.T) {
		t.Parallel()
		ctx := hostsCtx(t)
		a, b, _ := pair(t)
		docs := filepath.Join(a.root, "docs")
		testkit.WriteFiles(t, docs, map[string]string{"readme.md": "the docs\n"})
		rec := a.create(ctx, "--agent", "claude-code", "--kb", "handbook="+docs)
		if err := os.RemoveAll(docs); err != nil {
			t.Fatal(err)
		}
		res := b.exec(ctx, false, "mcp", "serve", "--instance", rec.ID)
		if res.code == 0 {
			t.Fatalf("mcp serve on host-b with the knowledge base's folder missing: want a failure\n%s", res)
		}
		for _, w := range []string{rec.ID, `"handbook"`, docs, "host-b", "host-a"} {
			if !strings.Contains(res.stderr, w) {
				t.Errorf("mcp serve on host-b: the error does not name %s\n%s", w, res)
			}
		}
	})
}

// hostsHealth is what these tests read of GET /health.
type hostsHealth struct {
	Status     string `json:"status"`
	Store      string `json:"store"`
	StoreOK    *bool  `json:"store_ok"`
	StoreError string `json:"store_error"`
}

// TestHostsStoreDown: a PostgreSQL store stopped and started again, seen
// by a daemon's /health and by the CLI; and /health on SQLite.
func TestHostsStoreDown(t *testing.T) {
	t.Parallel()
	ctx := hostsCtx(t)
	pg := testkit.StartPostgres(t) // its own: it is stopped
	store := pg.NewDatabase(t)
	name := instance.RedactStore(store)
	a := newHostsHost(t, pg, store, "host-a")
	a.create(ctx, "--agent", "claude-code")
	d := startServe(ctx, a.rcEnv, "--store", store)
	health := func() (hostsHealth, int, string) {
		code, body := rawRequest(t, http.MethodGet, "http://"+d.addr+"/health", "", nil)
		var h hostsHealth
		_ = json.Unmarshal([]byte(body), &h)
		return h, code, body
	}
	// await polls /health until it is ok (true) or degraded (false).
	await := func(when string, ok bool) {
		t.Helper()
		var (
			h    hostsHealth
			code int
			body string
		)
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			h, code, body = health()
			if strings.Contains(body, pg.Password()) {
				t.Fatalf("%s: GET /health shows the store's password: %s", when, body)
			}
			if h.StoreOK != nil && *h.StoreOK == ok {
				break
			}
		}
		switch {
		case ok && (code != http.StatusOK || h.Status != "ok" || h.Store != "postgres" || h.StoreOK == nil || !*h.StoreOK || h.StoreError != ""):
			t.Errorf("%s: GET /health %d %s, want 200 {status ok, store postgres, store_ok true}", when, code, body)
		case !ok && (code != http.StatusServiceUnavailable || h.Status != "degraded" || h.Store != "postgres" || h.StoreOK == nil || *h.StoreOK ||
			!strings.Contains(h.StoreError, name)):
			t.Errorf("%s: GET /health %d %s, want 503 {status degraded, store postgres, store_ok false, store_error naming %s}", when, code, body, name)
		}
	}
	await("store up", true)
	pg.Stop(t)
	await("store down", false)

	// The CLI, while the store is down: an error naming the store,
	// without its password.
	res := a.exec(ctx, false, "instance", "list")
	if res.code == 0 || !strings.Contains(res.stderr, name) || strings.Contains(res.stderr+res.stdout, pg.Password()) {
		t.Errorf("instance list (in-process) with the store down: want a failure naming %s without the password\n%s", name, res)
	}
	proc := a.runEnv(ctx, a.procEnv(), "instance", "list")
	if proc.code == 0 || !strings.Contains(proc.stderr, name) || strings.Contains(proc.stderr+proc.stdout, pg.Password()) {
		t.Errorf("instance list (process) with the store down: want a failure naming %s without the password\n%s", name, proc)
	}

	pg.Start(t)
	await("store up again", true)
	if strings.Contains(d.stderr.String(), pg.Password()) {
		t.Errorf("the daemon's log shows the store's password:\n%s", d.stderr.String())
	}
	if res := a.exec(ctx, false, "instance", "list"); res.code != 0 {
		t.Errorf("instance list after the store came back:\n%s", res)
	}

	// SQLite: the store is the state directory's file, and answers.
	s := newHostsHost(t, nil, "", "")
	s.create(ctx, "--agent", "claude-code")
	ds := startServe(ctx, s.rcEnv)
	code, body := rawRequest(t, http.MethodGet, "http://"+ds.addr+"/health", "", nil)
	var h hostsHealth
	if err := json.Unmarshal([]byte(body), &h); err != nil || code != http.StatusOK || h.Status != "ok" || h.Store != "sqlite" || h.StoreOK == nil || !*h.StoreOK {
		t.Errorf("GET /health on SQLite: %d %s, want 200 {status ok, store sqlite, store_ok true}", code, body)
	}
}

// hostsFullID is the one of ids that short, an id as a table on a terminal
// shows it (its shortest unique prefix, at least 8 characters), is the
// prefix of; the test fails if it is none's, or too short.
func hostsFullID(t *testing.T, short string, ids ...string) string {
	t.Helper()
	var found []string
	for _, id := range ids {
		if strings.HasPrefix(id, short) {
			found = append(found, id)
		}
	}
	if len(found) != 1 || len(short) < minShortID {
		t.Fatalf("the id %q on a terminal is a prefix of %q of %q, want of one, at least %d characters", short, found, ids, minShortID)
	}
	return found[0]
}
