package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCLINeverShowsAnHTTPServersSecrets: an HTTP server mounted with a
// user, a password and a query in its URL and a header, unreachable
// (connection refused): instance create, instance show and mcp serve
// (its log at debug, and get_instance as the model reads it) show none of
// them.
func TestCLINeverShowsAnHTTPServersSecrets(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), rcTimeout)
	defer cancel()
	secrets := []string{"plantedUser", "plantedPassword", "plantedKey", "plantedToken"}
	// Port 1 (tcpmux) is privileged and unused: connecting is refused. A
	// port freed after a listen could be taken by a parallel test meanwhile.
	addr := "127.0.0.1:1"
	e := newRCEnv(t)
	mountFlags := []string{"--mcp", "remote=http://plantedUser:plantedPassword@" + addr + "/mcp?key=plantedKey",
		"--mcp-header", "remote:Authorization=Bearer plantedToken"}

	seen := map[string]string{}
	check := func() {
		t.Helper()
		for what, text := range seen {
			for _, s := range secrets {
				if strings.Contains(text, s) {
					t.Errorf("%s shows the secret %q:\n%s", what, s, text)
				}
			}
		}
	}
	res := e.run(ctx, append([]string{"instance", "create", "--agent", "auggie", "--name", "text"}, mountFlags...)...)
	if res.code != 0 {
		t.Fatalf("want exit 0\n%s", res)
	}
	seen["instance create"] = res.stdout + res.stderr
	res = e.run(ctx, append([]string{"instance", "create", "--agent", "auggie", "-o", "json"}, mountFlags...)...)
	if res.code != 0 {
		t.Fatalf("want exit 0\n%s", res)
	}
	seen["instance create -o json"] = res.stdout + res.stderr
	var rec rcRecord
	if err := json.Unmarshal([]byte(res.stdout), &rec); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"instance", "show", rec.ID}, {"instance", "show", rec.ID, "-o", "json"}} {
		res := e.run(ctx, args...)
		if res.code != 0 {
			t.Fatalf("want exit 0\n%s", res)
		}
		if !strings.Contains(res.stdout, "redacted") {
			t.Errorf("%s should show the URL, redacted:\n%s", strings.Join(args, " "), res)
		}
		seen[strings.Join(args, " ")] = res.stdout + res.stderr
	}
	check()

	cmd := exec.Command(e.bin, "mcp", "serve", "--instance", rec.ID, "--log-level", "debug")
	cmd.Env, cmd.Dir = e.cliEnv(), e.work
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	sess, err := mcp.NewClient(&mcp.Implementation{Name: "secrets-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	// The first tools/list waits for every server's first attempt, so
	// get_instance then reports the refused connection.
	if _, err := sess.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list: %v\nstderr:\n%s", err, stderr.String())
	}
	r, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "get_instance", Arguments: map[string]any{}})
	if err != nil || r.IsError {
		t.Fatalf("get_instance: %v %+v\nstderr:\n%s", err, r, stderr.String())
	}
	var text strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	structured, _ := json.Marshal(r.StructuredContent)
	if err := sess.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if !strings.Contains(text.String(), `"state": "down"`) || !strings.Contains(text.String(), "refused") {
		t.Errorf("get_instance should say the server is down and why:\n%s", text.String())
	}
	seen["get_instance's text"] = text.String()
	seen["get_instance's structured content"] = string(structured)
	seen["mcp serve's stderr"] = stderr.String()
	check()
}
