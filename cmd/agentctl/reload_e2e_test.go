package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Issue 25 item 4: changes reach running sessions. Each test runs the
// built binary as the client starts it, with the TypeScript SDK (or go-sdk
// over HTTP) as the client, and changes the instance from another process
// while the session stays open.

// conceptDir is a knowledge-base folder of one concept.
func conceptDir(t *testing.T, concept string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, concept+".md"), []byte("# "+concept+"\n\nAbout "+concept+".\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// cliStep runs agentctl with args, in e's CLI environment, as a step of a
// TypeScript client's plan.
func (e *rcEnv) cliStep(args ...string) tsStep {
	return tsStep{Op: "exec", Argv: append([]string{e.bin}, args...), Env: append(e.cliEnv(), "PWD="+e.work)}
}

// execJSON decodes an exec step's stdout, failing on a non-zero exit.
func execJSON(t *testing.T, r tsResult, v any) {
	t.Helper()
	if r.Code == nil || *r.Code != 0 {
		t.Fatalf("%s: exit %v\nstdout: %s\nstderr: %s", r.Op, r.Code, r.Stdout, r.Stderr)
	}
	if err := json.Unmarshal([]byte(r.Stdout), v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.Stdout)
	}
}

// A mount added while a Gemini session runs (the TypeScript SDK client,
// which follows tools/list_changed as Gemini CLI does) appears in its tool
// list without a restart, and answers; `instance restart` restarts the
// external server under the running session.
func TestMountAddReachesARunningSession(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	pidfile := filepath.Join(e.root, "up.pid")
	rec := e.create(ctx, "--agent", "gemini", "--workspace", e.work, "--kb", "docs="+conceptDir(t, "alpha"),
		"--mcp", "up="+serverBin(t)+" -pidfile "+pidfile)
	command, args := nativeServerAny(t, rec)
	// Waits (at most a minute) for the server's process to change.
	waitRestart := tsStep{Op: "exec", Argv: []string{"sh", "-c", `old=$(cat "$1"); "$2" instance restart "$3" -o json; st=$?; [ $st = 0 ] || exit $st
for i in $(seq 600); do new=$(cat "$1" 2>/dev/null); [ -n "$new" ] && [ "$new" != "$old" ] && exit 0; sleep 0.1; done; echo "pid stayed $old" >&2; exit 1`,
		"sh", pidfile, e.bin, rec.ID}, Env: e.cliEnv()}
	plan := tsPlan{Command: command, Args: args, TimeoutMs: 60_000, Steps: []tsStep{
		{Op: "list"},
		e.cliStep("instance", "mount", "add", rec.ID, "--kb", "notes="+conceptDir(t, "beta"), "--yes", "-o", "json"),
		{Op: "await_tools", Present: []string{"notes__concept_read", "docs__concept_read", "up__echo"}},
		{Op: "call", Name: "notes__concept_read", Arguments: map[string]any{"id": "beta"}},
		waitRestart,
	}}
	out := runTS(ctx, t, plan, otherDir(t), e.clientEnv())
	before := listNames(t, out.result(t, 0, "list"))
	if slices.ContainsFunc(before, func(n string) bool { return strings.Contains(n, "notes__") }) {
		t.Fatalf("notes tools before the mount: %v", before)
	}
	var added struct {
		Mounts  []struct{ Name string } `json:"mounts"`
		Running reach                   `json:"running"`
	}
	r := out.result(t, 1, "exec")
	execJSON(t, r, &added)
	if len(added.Mounts) != 3 || !added.Running.ServedHere || !added.Running.ClientRelists || added.Running.RestartClient {
		t.Fatalf("mount add -o json: %+v", added)
	}
	if !strings.Contains(r.Stderr, "sees the change at once") {
		t.Errorf("mount add did not say the running session sees the change:\n%s", r.Stderr)
	}
	if w := out.result(t, 2, "await_tools"); !w.Received {
		t.Fatalf("the new knowledge base's tools never reached the session's list: %v", listNames(t, w))
	}
	if c := out.result(t, 3, "call"); c.Error != nil || c.Result == nil || c.Result.IsError || !strings.Contains(c.Result.String(), "About beta") {
		t.Fatalf("the new tool: %s", c)
	}
	if r := out.result(t, 4, "exec"); r.Code == nil || *r.Code != 0 {
		t.Fatalf("instance restart did not restart the server: exit %v\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	} else if !strings.Contains(r.Stderr, "on this host") {
		t.Errorf("instance restart did not say an endpoint here restarts it:\n%s", r.Stderr)
	}
}

// nativeServerAny is the command and arguments of rec's client entry
// (mcpServers in its JSON configuration), wherever that file is.
func nativeServerAny(t *testing.T, rec rcRecord) (string, []string) {
	t.Helper()
	ent := nativeEntry(t, rec)
	return ent.Command, ent.Args
}

// For a client that lists its tools once (Claude Code), mount add says the
// session must be restarted, and get_instance tells the model its tools
// changed; mount remove takes the tools away from the running endpoint.
func TestMountChangeTellsANonFollowingClient(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	rec := e.create(ctx, "--agent", "claude-code", "--workspace", e.work, "--kb", "docs="+conceptDir(t, "alpha"))
	command, args := nativeServerAny(t, rec)
	get := "get_instance_agentctl"
	plan := tsPlan{Command: command, Args: args, TimeoutMs: 60_000, Steps: []tsStep{
		{Op: "list"},
		e.cliStep("instance", "mount", "add", rec.ID, "--kb", "notes="+conceptDir(t, "beta"), "--yes", "-o", "json"),
		{Op: "await_tools", Present: []string{"notes__concept_read"}},
		{Op: "call", Name: get},
		e.cliStep("instance", "mount", "remove", rec.ID, "notes", "--yes"),
		{Op: "await_tools", Present: []string{"concept_read"}, Absent: []string{"notes__concept_read", "docs__concept_read"}},
	}}
	out := runTS(ctx, t, plan, otherDir(t), e.clientEnv())
	if !slices.Contains(listNames(t, out.result(t, 0, "list")), get) {
		t.Fatalf("no %s: %v", get, listNames(t, out.result(t, 0, "list")))
	}
	var added struct {
		Running reach `json:"running"`
	}
	r := out.result(t, 1, "exec")
	execJSON(t, r, &added)
	if !added.Running.ServedHere || added.Running.ClientRelists || !added.Running.RestartClient {
		t.Fatalf("mount add -o json running: %+v", added.Running)
	}
	if !strings.Contains(r.Stderr, "claude-code does not list its tools again: restart a running session") {
		t.Errorf("mount add did not say the session must be restarted:\n%s", r.Stderr)
	}
	if w := out.result(t, 2, "await_tools"); !w.Received {
		t.Fatalf("the added tools never reached the endpoint's list: %v", listNames(t, w))
	}
	call := out.result(t, 3, "call")
	if call.Error != nil || call.Result == nil {
		t.Fatalf("get_instance: %s", call)
	}
	var info struct {
		ToolsChanged *struct {
			MountsAdded []string `json:"mounts_added"`
			Note        string   `json:"note"`
		} `json:"tools_changed"`
	}
	if err := json.Unmarshal(call.Result.StructuredContent, &info); err != nil || info.ToolsChanged == nil {
		t.Fatalf("get_instance has no tools_changed: %v %s", err, call.Result)
	}
	if !slices.Equal(info.ToolsChanged.MountsAdded, []string{"notes"}) || !strings.Contains(info.ToolsChanged.Note, "restarts the client") {
		t.Fatalf("tools_changed: %+v", info.ToolsChanged)
	}
	if r := out.result(t, 4, "exec"); r.Code == nil || *r.Code != 0 {
		t.Fatalf("mount remove: exit %v\n%s", r.Code, r.Stderr)
	}
	if w := out.result(t, 5, "await_tools"); !w.Received {
		t.Fatalf("after mount remove, docs alone again and unprefixed: %v", listNames(t, w))
	}
}

// agentctl serve's endpoint of an instance follows its mounts too: a
// go-sdk client connected over HTTP hears tools/list_changed and lists the
// new tools.
func TestServeHTTPMountAddReachesTheEndpoint(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	e := newRCEnv(t)
	rec := e.create(ctx, "--agent", "copilot-cli", "--workspace", e.work, "--transport", "http", "--kb", "docs="+conceptDir(t, "alpha"))
	d := startServe(ctx, e)
	changed := make(chan struct{}, 8)
	c := mcp.NewClient(&mcp.Implementation{Name: "go-client", Version: "v1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: d.url(rec.ID), HTTPClient: &http.Client{Transport: bearerTransport{}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if names := testkit.ToolNames(ctx, t, cs); !slices.Contains(names, "concept_read") {
		t.Fatalf("before: %v", names)
	}
	e.mustRun(ctx, "instance", "mount", "add", rec.ID, "--kb", "notes="+conceptDir(t, "beta"), "--yes")
	for {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal("no tools/list_changed over HTTP after mount add")
		}
		names := testkit.ToolNames(ctx, t, cs)
		if slices.Contains(names, "notes__concept_read") && slices.Contains(names, "docs__concept_read") {
			break
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "notes__concept_read", Arguments: map[string]any{"id": "beta"}})
	if err != nil || res.IsError {
		t.Fatalf("the new tool over HTTP: %v %+v", err, res)
	}
	// A session that starts now is told the new names in its
	// instructions, from the same running endpoint.
	if before := cs.InitializeResult().Instructions; strings.Contains(before, `knowledge base "notes"`) {
		t.Fatalf("the first session's instructions already named the new tool:\n%s", before)
	}
	cs2, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: d.url(rec.ID), HTTPClient: &http.Client{Transport: bearerTransport{}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.Close()
	if instr := cs2.InitializeResult().Instructions; !strings.Contains(instr, `knowledge base "notes", notes__{tool}`) {
		t.Fatalf("a later session's instructions do not name the new tool:\n%s", instr)
	}
}
