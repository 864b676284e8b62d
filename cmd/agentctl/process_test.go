package main

// Tests of the real agentctl binary as a process: concurrent creates from
// many processes, all-or-nothing creates, and the stdio endpoint's process
// behaviour (stdout carries only the protocol, clean exits on EOF and
// SIGTERM, a missing instance is exit 3).

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	_ "modernc.org/sqlite"
)

// instanceDirEntries lists <state>/instances: the visible directories and
// any hidden entries (staging or deleting leftovers).
func instanceDirEntries(t *testing.T, state string) (dirs, hidden []string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(state, "instances"))
	if err != nil {
		t.Fatalf("read the instances directory: %v", err)
	}
	for _, ent := range ents {
		switch {
		case strings.HasPrefix(ent.Name(), "."):
			hidden = append(hidden, ent.Name())
		case ent.IsDir():
			dirs = append(dirs, ent.Name())
		default:
			hidden = append(hidden, ent.Name()+" (not a directory)")
		}
	}
	sort.Strings(dirs)
	return dirs, hidden
}

// listIDs runs `instance list -o json` and returns the sorted ids.
func (e *rcEnv) listIDs(ctx context.Context) []string {
	e.t.Helper()
	out := e.mustRun(ctx, "instance", "list", "-o", "json")
	var recs []rcRecord
	if err := json.Unmarshal([]byte(out), &recs); err != nil {
		e.t.Fatalf("instance list -o json: %v\n%s", err, out)
	}
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	sort.Strings(ids)
	return ids
}

func TestConcurrentCreates(t *testing.T) {
	t.Parallel()
	const n = 32
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := newRCEnv(t)

	// Start every process before waiting on any, all against one fresh state
	// directory (which none of them has initialised yet).
	cmds := make([]*exec.Cmd, n)
	outs := make([]*bytes.Buffer, n)
	errs := make([]*bytes.Buffer, n)
	for i := range cmds {
		cmd := exec.CommandContext(ctx, e.bin, "instance", "create", "--agent", "auggie", "-o", "json")
		cmd.Env, cmd.Dir = e.cliEnv(), e.work
		outs[i], errs[i] = &bytes.Buffer{}, &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = outs[i], errs[i]
		if err := cmd.Start(); err != nil {
			t.Fatalf("start create %d: %v", i, err)
		}
		cmds[i] = cmd
	}
	var ids []string
	failed := false
	for i, cmd := range cmds {
		err := cmd.Wait()
		if err != nil {
			failed = true
			t.Errorf("create %d: %v\nstdout:\n%s\nstderr:\n%s", i, err, outs[i], errs[i])
			continue
		}
		var rec rcRecord
		if err := json.Unmarshal(outs[i].Bytes(), &rec); err != nil || rec.ID == "" {
			failed = true
			t.Errorf("create %d printed no record: %v\n%s", i, err, outs[i])
			continue
		}
		if _, err := os.Stat(rec.MCPConfigPath); err != nil {
			t.Errorf("create %d: its MCP configuration is missing: %v", i, err)
		}
		ids = append(ids, rec.ID)
	}
	if failed {
		t.FailNow()
	}
	sort.Strings(ids)
	if got := slices.Compact(slices.Clone(ids)); len(got) != n {
		t.Fatalf("%d distinct ids among %d creates: %v", len(got), n, ids)
	}
	if listed := e.listIDs(ctx); !slices.Equal(listed, ids) {
		t.Errorf("instance list has %d ids %v,\nwant the %d created %v", len(listed), listed, n, ids)
	}
	dirs, hidden := instanceDirEntries(t, e.state)
	if !slices.Equal(dirs, ids) {
		t.Errorf("instances/ holds %d directories %v,\nwant one per created id %v", len(dirs), dirs, ids)
	}
	if len(hidden) > 0 {
		t.Errorf("instances/ holds leftovers: %v", hidden)
	}
}

func TestFailedCreateLeavesNothing(t *testing.T) {
	t.Parallel()
	// assertUnchanged checks that the store and instances/ hold exactly the ids.
	assertUnchanged := func(ctx context.Context, t *testing.T, e *rcEnv, ids []string) {
		t.Helper()
		if got := e.listIDs(ctx); !slices.Equal(got, ids) {
			t.Errorf("instance list = %v, want only %v", got, ids)
		}
		dirs, hidden := instanceDirEntries(t, e.state)
		if !slices.Equal(dirs, ids) {
			t.Errorf("instances/ holds %v, want only %v", dirs, ids)
		}
		if len(hidden) > 0 {
			t.Errorf("instances/ holds leftovers of the failed create: %v", hidden)
		}
	}

	t.Run("duplicate-label", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
		defer cancel()
		e := newRCEnv(t)
		first := e.create(ctx, "--agent", "auggie", "--name", "x")
		// The second create stages its files, then finds the label taken.
		res := e.run(ctx, "instance", "create", "--agent", "claude-code", "--name", "x", "-o", "json")
		if res.code != ExitInvalid {
			t.Fatalf("second create with the same label: want exit %d\n%s", ExitInvalid, res)
		}
		if res.stdout != "" || !strings.Contains(res.stderr, `"x" already exists`) {
			t.Errorf("want no stdout and a message that the label exists\n%s", res)
		}
		assertUnchanged(ctx, t, e, []string{first.ID})
		var shown rcRecord
		if err := json.Unmarshal([]byte(e.mustRun(ctx, "instance", "show", "x", "-o", "json")), &shown); err != nil {
			t.Fatal(err)
		}
		if shown.ID != first.ID || shown.Agent != "auggie" {
			t.Errorf("label x names %s (%s), want the first instance %s (auggie)", shown.ID, shown.Agent, first.ID)
		}
	})

	// The other failures are injected into the state database with SQL
	// triggers, so they happen at a precise point of a real create.
	inject := func(t *testing.T, e *rcEnv, stmts ...string) {
		t.Helper()
		db, err := sql.Open("sqlite", "file:"+filepath.Join(e.state, "state.db")+"?_pragma=busy_timeout(30000)")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, s := range stmts {
			if _, err := db.Exec(s); err != nil {
				t.Fatalf("inject %q: %v", s, err)
			}
		}
	}

	t.Run("insert-fails", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
		defer cancel()
		e := newRCEnv(t)
		first := e.create(ctx, "--agent", "auggie")
		inject(t, e, `CREATE TRIGGER inject_insert_failure BEFORE INSERT ON instances BEGIN SELECT RAISE(ABORT, 'injected insert failure'); END`)
		res := e.run(ctx, "instance", "create", "--agent", "auggie", "-o", "json")
		if res.code != ExitError || res.stdout != "" || !strings.Contains(res.stderr, "injected insert failure") {
			t.Fatalf("create with a failing insert: want exit %d, no stdout, the injected error on stderr\n%s", ExitError, res)
		}
		assertUnchanged(ctx, t, e, []string{first.ID})
		// The store is usable afterwards.
		inject(t, e, `DROP TRIGGER inject_insert_failure`)
		second := e.create(ctx, "--agent", "auggie")
		assertUnchanged(ctx, t, e, sortedIDs(first.ID, second.ID))
	})

	t.Run("commit-fails-after-publish", func(t *testing.T) {
		t.Parallel()
		// A deferred foreign key makes COMMIT fail: after the row is
		// inserted and the staged directory is renamed into place.
		ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
		defer cancel()
		e := newRCEnv(t)
		first := e.create(ctx, "--agent", "auggie")
		inject(t, e,
			`CREATE TABLE inject_parent (id INTEGER PRIMARY KEY)`,
			`CREATE TABLE inject_child (pid INTEGER REFERENCES inject_parent(id) DEFERRABLE INITIALLY DEFERRED)`,
			`CREATE TRIGGER inject_commit_failure AFTER INSERT ON instances BEGIN INSERT INTO inject_child (pid) VALUES (42); END`,
		)
		res := e.run(ctx, "instance", "create", "--agent", "claude-code", "-o", "json")
		if res.code != ExitError || res.stdout != "" || !strings.Contains(res.stderr, "FOREIGN KEY") {
			t.Fatalf("create with a failing commit: want exit %d, no stdout, the constraint error on stderr\n%s", ExitError, res)
		}
		assertUnchanged(ctx, t, e, []string{first.ID})
		inject(t, e, `DROP TRIGGER inject_commit_failure`)
		second := e.create(ctx, "--agent", "auggie")
		assertUnchanged(ctx, t, e, sortedIDs(first.ID, second.ID))
	})
}

func sortedIDs(ids ...string) []string {
	sort.Strings(ids)
	return ids
}

// jsonrpcLine checks that line is one JSON-RPC 2.0 message and decodes it.
type jsonrpcMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func parseJSONRPC(line []byte) (jsonrpcMsg, error) {
	var m jsonrpcMsg
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&m); err != nil {
		return m, err
	}
	if dec.More() {
		return m, errors.New("more than one JSON value on the line")
	}
	if m.JSONRPC != "2.0" {
		return m, errors.New(`no "jsonrpc": "2.0"`)
	}
	isResponse := len(m.ID) > 0 && (m.Result != nil || m.Error != nil)
	if !isResponse && m.Method == "" {
		return m, errors.New("neither a response nor a request or notification")
	}
	return m, nil
}

func TestServeStdoutIsProtocolOnly(t *testing.T) {
	t.Parallel()
	t.Run("go-sdk-client-then-eof", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
		defer cancel()
		e := newRCEnv(t)
		rec := e.create(ctx, "--agent", "auggie")

		cmd := exec.Command(e.bin, "mcp", "serve", "--instance", rec.ID, "--log-level", "debug")
		cmd.Env, cmd.Dir = e.cliEnv(), e.work
		var stderr lockedBuffer
		cmd.Stderr = &stderr
		// Close closes stdin and waits this long before sending SIGTERM: an
		// endpoint that ignored EOF would be stopped by the signal instead.
		const terminateAfter = time.Minute
		client := mcp.NewClient(&mcp.Implementation{Name: "agentctl-process-test", Version: "1.0.0"}, nil)
		sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateAfter}, nil)
		if err != nil {
			t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
		}
		res, err := sess.ListTools(ctx, nil)
		if err != nil {
			sess.Close()
			t.Fatalf("tools/list: %v\nstderr:\n%s", err, stderr.String())
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		sort.Strings(names)
		if want := []string{"ask_user_question", "get_instance", "report_progress"}; !slices.Equal(names, want) {
			t.Errorf("tools/list = %v, want %v", names, want)
		}

		start := time.Now()
		closeErr := sess.Close()
		took := time.Since(start)
		if cmd.ProcessState == nil {
			t.Fatalf("the endpoint was not waited for by Close (%v)", closeErr)
		}
		if code := cmd.ProcessState.ExitCode(); code != 0 || closeErr != nil {
			t.Errorf("after EOF the endpoint exited %d (%v), want 0\nstderr:\n%s", code, closeErr, stderr.String())
		}
		if took >= terminateAfter {
			t.Errorf("the endpoint did not exit on EOF; Close had to signal it (%s)", took)
		}
		logs := stderr.String()
		if !strings.Contains(logs, "level=DEBUG") || !strings.Contains(logs, "msg=serving") || !strings.Contains(logs, rec.ID) {
			t.Errorf("stderr has no debug log lines about serving %s:\n%s", rec.ID, logs)
		}
	})

	t.Run("raw-pipes-then-sigterm", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
		defer cancel()
		e := newRCEnv(t)
		rec := e.create(ctx, "--agent", "auggie")

		p := e.startServePipes(rec.ID, "--log-level", "debug")
		cmd, stdin, stdout, stderr := p.cmd, p.stdin, p.stdout, p.stderr
		exited := make(chan struct{})
		waitStarted := false
		defer func() {
			select {
			case <-exited:
			default:
				_ = cmd.Process.Kill()
				if !waitStarted {
					_ = cmd.Wait()
				}
			}
		}()

		// Every stdout line, in order; the channel closes at EOF.
		lines := make(chan []byte, 64)
		var all [][]byte // owned by the reader until lines is closed
		readDone := make(chan struct{})
		go func() {
			defer close(readDone)
			defer close(lines)
			sc := bufio.NewScanner(stdout)
			sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
			for sc.Scan() {
				l := slices.Clone(sc.Bytes())
				all = append(all, l)
				lines <- l
			}
		}()
		send := func(msg string) {
			t.Helper()
			if _, err := io.WriteString(stdin, msg+"\n"); err != nil {
				t.Fatalf("write to the endpoint: %v\nstderr:\n%s", err, stderr.String())
			}
		}
		// await reads stdout until the response with id arrives.
		await := func(id int) jsonrpcMsg {
			t.Helper()
			for {
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatalf("stdout ended before the response to %d\nstderr:\n%s", id, stderr.String())
					}
					m, err := parseJSONRPC(l)
					if err != nil {
						t.Fatalf("stdout line is not JSON-RPC (%v): %q", err, l)
					}
					if string(m.ID) == itoa(id) {
						return m
					}
				case <-ctx.Done():
					t.Fatalf("no response to %d: %v\nstderr:\n%s", id, ctx.Err(), stderr.String())
				}
			}
		}

		send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		if m := await(1); m.Error != nil || m.Result == nil {
			t.Fatalf("initialize failed: %+v", m.Error)
		}
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		m := await(2)
		var lr struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if m.Error != nil || json.Unmarshal(m.Result, &lr) != nil {
			t.Fatalf("tools/list: %+v %s", m.Error, m.Result)
		}
		var names []string
		for _, tool := range lr.Tools {
			names = append(names, tool.Name)
		}
		sort.Strings(names)
		if want := []string{"ask_user_question", "get_instance", "report_progress"}; !slices.Equal(names, want) {
			t.Errorf("tools/list = %v, want %v", names, want)
		}
		// Calls that log at debug: an unknown tool and a progress report.
		send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`)
		if m := await(3); m.Error == nil || m.Error.Code != -32602 {
			t.Errorf("tools/call of an unknown tool: want error -32602, got %+v %s", m.Error, m.Result)
		}
		send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"report_progress","arguments":{"message":"raw"}}}`)
		if m := await(4); m.Error != nil || !strings.Contains(string(m.Result), `"recorded":true`) {
			t.Errorf("tools/call report_progress: %+v %s", m.Error, m.Result)
		}

		// SIGTERM with stdin still open: a clean exit with code 0.
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-readDone:
		case <-time.After(30 * time.Second):
			t.Fatalf("the endpoint did not close stdout within 30s of SIGTERM\nstderr:\n%s", stderr.String())
		}
		waitErr := make(chan error, 1)
		waitStarted = true
		go func() { waitErr <- cmd.Wait(); close(exited) }()
		select {
		case err := <-waitErr:
			if err != nil {
				t.Errorf("after SIGTERM the endpoint exited with %v (code %d), want 0\nstderr:\n%s", err, cmd.ProcessState.ExitCode(), stderr.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the endpoint did not exit within 30s of SIGTERM\nstderr:\n%s", stderr.String())
		}
		stdin.Close()

		for _, l := range all { // lines is closed: the reader is done with all
			if _, err := parseJSONRPC(l); err != nil {
				t.Errorf("stdout line is not JSON-RPC (%v): %q", err, l)
			}
		}
		logs := stderr.String()
		for _, want := range []string{"level=DEBUG", "msg=serving", "unknown tool", "report_progress_agentctl"} {
			if !strings.Contains(logs, want) {
				t.Errorf("stderr lacks %q; the logs:\n%s", want, logs)
			}
		}
	})
}

func TestServeMissingInstance(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)

	wantNotFound := func(ref string) {
		t.Helper()
		res := e.run(ctx, "mcp", "serve", "--instance", ref)
		if res.code != ExitNotFound {
			t.Errorf("serve %s: want exit %d\n%s", ref, ExitNotFound, res)
		}
		if res.stdout != "" {
			t.Errorf("serve %s: stdout must be empty, got %q", ref, res.stdout)
		}
		if !strings.Contains(res.stderr, "not found") || !strings.Contains(res.stderr, ref) {
			t.Errorf("serve %s: stderr should say the instance was not found:\n%s", ref, res.stderr)
		}
	}
	wantNotFound("nosuch")

	rec := e.create(ctx, "--agent", "auggie")
	// While it exists, the same command serves it (and exits 0 on EOF: its
	// stdin is empty).
	if res := e.run(ctx, "mcp", "serve", "--instance", rec.ID); res.code != 0 || res.stdout != "" {
		t.Fatalf("serve of an existing instance with empty input: want exit 0 and no output\n%s", res)
	}
	e.mustRun(ctx, "instance", "delete", rec.ID)
	if _, err := os.Stat(rec.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after delete the instance directory %s still exists (%v)", rec.Dir, err)
	}
	wantNotFound(rec.ID)
}
