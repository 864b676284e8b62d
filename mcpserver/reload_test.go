package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// kbDir is a knowledge-base folder holding one concept.
func kbDir(t *testing.T, concept string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, concept+".md"), []byte("# "+concept+"\n\nAbout "+concept+".\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// resolved applies the prefix contract (mode mount-name) to ms.
func resolved(t *testing.T, ms ...mount.Mount) []mount.Resolved {
	t.Helper()
	rs, err := mount.Resolve("agentctl", mount.PrefixModeMountName, ms)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// awaitNames waits for a tools/list_changed, then lists until cond holds
// (go-sdk may send several notifications for one change).
func (p *proxyEnv) awaitNames(t *testing.T, what string, cond func([]string) bool) []string {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		names := listNames(t, p.cs)
		if cond(names) {
			return names
		}
		select {
		case <-p.notes:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%s: tools/list never showed it; last: %v", what, names)
		}
	}
}

// A running endpoint takes a new mount set without a restart: tools of a
// new knowledge base and server appear, a removed server's go, a kept
// mount whose prefix changes is served under its new names, the client
// hears tools/list_changed, and get_instance says what changed.
func TestSetMountsWhileServing(t *testing.T) {
	forEachPath(t, func(t *testing.T, path servePath) {
		docs := mount.Mount{Kind: mount.KindKB, Name: "docs", Path: kbDir(t, "alpha")}
		up := withBin(t, mcpMount("up"))
		p := startProxyOn(t, path, mount.PrefixModeMountName, docs, up)
		p.awaitNames(t, "the start", func(n []string) bool { return slices.Contains(n, "up__echo") })
		if !slices.Contains(listNames(t, p.cs), "docs__concept_read") {
			t.Fatalf("start: %v", listNames(t, p.cs))
		}
		for len(p.notes) > 0 {
			<-p.notes
		}

		// Remove the server: docs is alone and loses its prefix.
		ch, err := p.ep.SetMounts(resolved(t, docs))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ch.MountsRemoved, []string{"up"}) || !slices.Equal(ch.MountsChanged, []string{"docs"}) {
			t.Fatalf("change: %+v", ch)
		}
		select {
		case n := <-p.notes:
			if n != "list_changed" {
				t.Fatalf("want tools/list_changed, got %s", n)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no notifications/tools/list_changed after the mount change")
		}
		names := p.awaitNames(t, "the removal", func(n []string) bool {
			return !slices.Contains(n, "up__echo") && slices.Contains(n, "concept_read")
		})
		if slices.Contains(names, "docs__concept_read") {
			t.Fatalf("the old name of the renamed knowledge base is still listed: %v", names)
		}
		res, err := p.call(t, "concept_read", map[string]any{"id": "alpha"})
		if err != nil || res.IsError || !strings.Contains(resultText(res), "About alpha") {
			t.Fatalf("concept_read after the rename: %v %+v", err, res)
		}
		if res, err := p.call(t, "up__echo", map[string]any{"text": "x"}); err == nil && !res.IsError {
			t.Fatalf("a removed server's tool still answers: %+v", res)
		}

		// Add a knowledge base and a server: every mount gets a prefix.
		notes := mount.Mount{Kind: mount.KindKB, Name: "notes", Path: kbDir(t, "beta")}
		up2 := withBin(t, mcpMount("up2"))
		if _, err := p.ep.SetMounts(resolved(t, docs, notes, up2)); err != nil {
			t.Fatal(err)
		}
		p.awaitNames(t, "the addition", func(n []string) bool {
			return slices.Contains(n, "up2__echo") && slices.Contains(n, "notes__concept_read") && slices.Contains(n, "docs__concept_read") &&
				!slices.Contains(n, "concept_read")
		})
		res, err = p.call(t, "up2__echo", map[string]any{"text": "hello"})
		if err != nil || res.IsError || !strings.Contains(resultText(res), "hello") {
			t.Fatalf("the new server's tool: %v %+v", err, res)
		}
		if path != viaSDK {
			p.checkPath(t, path, 1) // the lane routes a server added later
		}
		res, err = p.call(t, "notes__concept_read", map[string]any{"id": "beta"})
		if err != nil || res.IsError || !strings.Contains(resultText(res), "About beta") {
			t.Fatalf("the new knowledge base's tool: %v %+v", err, res)
		}

		// get_instance tells the model.
		res, err = p.call(t, "get_instance", nil)
		if err != nil || res.IsError {
			t.Fatalf("get_instance: %v %+v", err, res)
		}
		var out InstanceOutput
		if err := json.Unmarshal([]byte(resultText(res)), &out); err != nil {
			t.Fatal(err)
		}
		if out.ToolsChanged == nil || !slices.Equal(out.ToolsChanged.MountsAdded, []string{"notes", "up2"}) || out.ToolsChanged.Note == "" {
			t.Fatalf("get_instance's tools_changed: %+v", out.ToolsChanged)
		}
		if len(out.Mounts) != 3 {
			t.Fatalf("get_instance's mounts: %+v", out.Mounts)
		}
	})
}

// A knowledge base whose folder is missing is left out with an error
// naming it; the rest of the change is applied.
func TestSetMountsKeepsTheRestWhenOneFails(t *testing.T) {
	t.Parallel()
	docs := mount.Mount{Kind: mount.KindKB, Name: "docs", Path: kbDir(t, "alpha")}
	p := startProxy(t, mount.PrefixModeMountName, docs)
	gone := mount.Mount{Kind: mount.KindKB, Name: "gone", Path: filepath.Join(t.TempDir(), "missing")}
	notes := mount.Mount{Kind: mount.KindKB, Name: "notes", Path: kbDir(t, "beta")}
	ch, err := p.ep.SetMounts(resolved(t, docs, gone, notes))
	if err == nil || !strings.Contains(err.Error(), "missing") || len(ch.Errors) != 1 {
		t.Fatalf("want an error naming the missing folder, got %v (%+v)", err, ch)
	}
	names := listNames(t, p.cs)
	if !slices.Contains(names, "notes__concept_read") || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "gone__") }) {
		t.Fatalf("tools: %v", names)
	}
}

// RestartServers restarts a running server at once: a new process, its
// tools served again.
func TestRestartServers(t *testing.T) {
	forEachPath(t, func(t *testing.T, path servePath) {
		pidfile := filepath.Join(t.TempDir(), "pid")
		p := startProxyOn(t, path, mount.PrefixModeMountName, withBin(t, mcpMount("up", "-pidfile", pidfile)))
		p.awaitNames(t, "the start", func(n []string) bool { return slices.Contains(n, "echo") })
		first, _ := os.ReadFile(pidfile)
		if got := p.ep.RestartServers(); !slices.Equal(got, []string{"up"}) {
			t.Fatalf("RestartServers: %v", got)
		}
		if got := p.ep.RestartServers("nope"); len(got) != 0 {
			t.Fatalf("RestartServers(nope): %v", got)
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			now, _ := os.ReadFile(pidfile)
			if len(now) > 0 && string(now) != string(first) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the server was not restarted (pid %s)", first)
			}
			time.Sleep(20 * time.Millisecond)
		}
		// Served again by the new process.
		deadline = time.Now().Add(60 * time.Second)
		for {
			res, err := p.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "again"}})
			if err == nil && !res.IsError {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("echo after the restart: %v %+v", err, res)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// A server kept by a mount change keeps running, under its new prefix.
func TestSetMountsKeepsAServer(t *testing.T) {
	forEachPath(t, func(t *testing.T, path servePath) {
		pidfile := filepath.Join(t.TempDir(), "pid")
		up := withBin(t, mcpMount("up", "-pidfile", pidfile))
		p := startProxyOn(t, path, mount.PrefixModeMountName, up)
		p.awaitNames(t, "the start", func(n []string) bool { return slices.Contains(n, "echo") })
		first, _ := os.ReadFile(pidfile)
		docs := mount.Mount{Kind: mount.KindKB, Name: "docs", Path: kbDir(t, "alpha")}
		if _, err := p.ep.SetMounts(resolved(t, up, docs)); err != nil {
			t.Fatal(err)
		}
		p.awaitNames(t, "the prefix", func(n []string) bool {
			return slices.Contains(n, "up__echo") && slices.Contains(n, "docs__concept_read") && !slices.Contains(n, "echo")
		})
		res, err := p.call(t, "up__echo", map[string]any{"text": "hi"})
		if err != nil || res.IsError {
			t.Fatalf("up__echo: %v %+v", err, res)
		}
		// Another mount, the server's names unchanged: still served.
		notes := mount.Mount{Kind: mount.KindKB, Name: "notes", Path: kbDir(t, "beta")}
		if _, err := p.ep.SetMounts(resolved(t, up, docs, notes)); err != nil {
			t.Fatal(err)
		}
		p.awaitNames(t, "another knowledge base", func(n []string) bool {
			return slices.Contains(n, "up__echo") && slices.Contains(n, "notes__concept_read")
		})
		if w := p.ep.Withheld(); len(w) != 0 {
			t.Fatalf("a kept server's tools are withheld: %+v", w)
		}
		if now, _ := os.ReadFile(pidfile); string(now) != string(first) {
			t.Fatalf("the kept server was restarted: pid %s, then %s", first, now)
		}
	})
}

// A knowledge base whose new folder cannot be opened keeps serving its
// old one under its old names; two bases that swap prefixes both get
// theirs (no name is held by a base on its way out).
func TestSetMountsKeepsAWorkingBase(t *testing.T) {
	t.Parallel()
	docs := mount.Mount{Kind: mount.KindKB, Name: "docs", Path: kbDir(t, "alpha"), ToolPrefix: "x"}
	notes := mount.Mount{Kind: mount.KindKB, Name: "notes", Path: kbDir(t, "beta"), ToolPrefix: "y"}
	p := startProxy(t, mount.PrefixModeMountName, docs, notes)

	moved := docs
	moved.Path = filepath.Join(t.TempDir(), "missing")
	ch, err := p.ep.SetMounts(resolved(t, moved, notes))
	if err == nil || len(ch.Errors) != 1 {
		t.Fatalf("want an error for the missing folder, got %v %+v", err, ch)
	}
	res, err := p.call(t, "x__concept_read", map[string]any{"id": "alpha"})
	if err != nil || res.IsError || !strings.Contains(resultText(res), "About alpha") {
		t.Fatalf("the base whose new folder is missing no longer answers: %v %+v", err, res)
	}

	docs.ToolPrefix, notes.ToolPrefix = "y", "x"
	if _, err := p.ep.SetMounts(resolved(t, docs, notes)); err != nil {
		t.Fatal(err)
	}
	for tool, want := range map[string]string{"y__concept_read": "alpha", "x__concept_read": "beta"} {
		res, err := p.call(t, tool, map[string]any{"id": want})
		if err != nil || res.IsError || !strings.Contains(resultText(res), "About "+want) {
			t.Errorf("%s after the swap: %v %+v", tool, err, res)
		}
	}
}
