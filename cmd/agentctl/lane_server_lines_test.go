package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLaneSurvivesBrokenServerLines runs the built binary with the fast
// lane in front of a server that answers one call with a line cut short
// (then sends tools/list_changed) and another with 17 MiB, over the 16 MiB
// limit (the test server's -craft). Each fails alone, with an error naming
// the server (and the limit); the server is kept: its list_changed
// arrives, get_instance says it is up, and the next call is answered.
// (The SDK path's side of this is package proxy's.)
func TestLaneSurvivesBrokenServerLines(t *testing.T) {
	t.Parallel()
	bin, up := realBinary(t), serverBin(t)
	root := t.TempDir()
	env := fuzzEnv(t, root)
	spec, err := json.Marshal(map[string]any{"command": up, "args": []string{"-tools", "0", "-craft"}, "tool_prefix": "up"})
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(root, "work")
	create := exec.Command(bin, "instance", "create", "--agent", "codex", "--workspace", work, "--mcp-json", "up="+string(spec))
	create.Env, create.Dir = env, work
	out, err := create.Output()
	if err != nil {
		t.Fatalf("instance create: %v", err)
	}
	p := startFuzzPeer(t, bin, env, work, strings.TrimSpace(string(out)), true)
	call := func(id, text string) (answer string, notes [][]byte) {
		t.Helper()
		line := `{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"up__echo","arguments":{"text":"` + text + `"}}}`
		if _, err := io2(p.stdin, line); err != nil {
			t.Fatal(err)
		}
		answers, notes, err := p.until(id)
		if err != nil || len(answers) != 0 {
			t.Fatalf("call %s: %v; other answers: %s", id, err, showLines(answers))
		}
		return p.last, notes
	}
	ans, notes := call("t1", "craft:truncated")
	if !strings.Contains(ans, `MCP server \"up\" sent a line that is not JSON; agentctl skipped it, so this call failed (the server keeps running)`) {
		t.Fatalf("truncated answer: got %.500s", ans)
	}
	ans, more := call("h1", "craft:huge")
	if !strings.Contains(ans, `MCP server \"up\" sent an answer of 17825`) || !strings.Contains(ans, `over the limit of 16777216 (ask the tool for less)`) {
		t.Fatalf("huge answer: got %.500s", ans)
	}
	ans, rest := call("a1", "after")
	if !strings.Contains(ans, `"text":"after"`) {
		t.Fatalf("the next call: got %.500s", ans)
	}
	// The list_changed the server sent after the cut-short line reaches
	// the client once the endpoint has listed the server again, which may
	// be after these answers: wait for it if it has not come yet.
	notes = append(append(notes, more...), rest...)
	if !strings.Contains(string(showLines(notes)), `notifications/tools/list_changed`) {
		if err := p.awaitLine([]byte(`notifications/tools/list_changed`), "tools/list_changed after the broken line"); err != nil {
			t.Fatalf("%v; notifications so far: %s", err, showLines(notes))
		}
	}
	if _, err := io2(p.stdin, `{"jsonrpc":"2.0","id":"g1","method":"tools/call","params":{"name":"get_instance_agentctl","arguments":{}}}`); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.until("g1"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.last, `"name":"up","state":"up"`) {
		t.Fatalf("get_instance: %.1500s", p.last)
	}
	if !strings.Contains(p.stderr.String(), `MCP server wrote output agentctl could not read`) {
		t.Fatalf("nothing logged:\n%s", tail(p.stderr.String(), 3000))
	}
}
