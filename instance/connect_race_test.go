//go:build unix

package instance_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/agentctl/agentctl/instance"
)

// TestConnectConcurrent: instances connected to one workspace file at the
// same moment all end up in it (none of the edits is lost).
func TestConnectConcurrent(t *testing.T) {
	st := openStore(t)
	ws := t.TempDir()
	var recs []*instance.Record
	for i := range 6 {
		recs = append(recs, create(t, st, "cursor", func(o *instance.CreateOptions) {
			o.Workspace = ws
			o.ServerName = "s" + string(rune('a'+i))
		}))
	}
	for round := range 5 {
		_ = os.Remove(filepath.Join(ws, ".cursor", "mcp.json"))
		var wg sync.WaitGroup
		for _, r := range recs {
			wg.Go(func() {
				if _, err := instance.Connect(r, instance.ConnectOptions{}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		data, err := os.ReadFile(filepath.Join(ws, ".cursor", "mcp.json"))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			MCPServers map[string]any `json:"mcpServers"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.MCPServers) != len(recs) {
			t.Fatalf("round %d: %d of %d entries survived concurrent connects:\n%s", round, len(doc.MCPServers), len(recs), data)
		}
	}
}

// lockedRewrite changes the file at path as a program that locks the file
// it edits does: an flock(2) on the file (the one still at path once
// locked), then read it, change it and write it back in place.
func lockedRewrite(path string, change func(map[string]any)) error {
	for {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return err
		}
		fi, _ := f.Stat()
		if cur, err := os.Stat(path); err != nil || !os.SameFile(fi, cur) {
			f.Close() // replaced while we waited
			continue
		}
		defer f.Close()
		data, err := io.ReadAll(f)
		if err != nil {
			return err
		}
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("%w in\n%s", err, data)
		}
		change(doc)
		out, _ := json.MarshalIndent(doc, "", "  ")
		if err := f.Truncate(0); err != nil {
			return err
		}
		_, err = f.WriteAt(out, 0)
		return err
	}
}

// TestConnectConcurrentWriter: another program that locks the file it
// edits (flock) appends its own servers to it in place, one at a time in a
// loop, while the instance is connected and
// disconnected again and again: every one of its servers survives, and
// agentctl's entry comes and goes.
func TestConnectConcurrentWriter(t *testing.T) {
	st := openStore(t)
	ws := t.TempDir()
	rec := create(t, st, "cursor", func(o *instance.CreateOptions) { o.Workspace = ws })
	path := filepath.Join(ws, ".cursor", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"mcpServers": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	const cycles = 60
	stop := make(chan struct{})
	type result struct {
		writes int
		err    error
	}
	done := make(chan result, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- result{i, nil}
				return
			default:
			}
			var lost error
			err := lockedRewrite(path, func(doc map[string]any) {
				servers, _ := doc["mcpServers"].(map[string]any)
				for j := range i {
					if _, ok := servers[fmt.Sprintf("w%d", j)]; !ok && lost == nil {
						lost = fmt.Errorf("the writer's server w%d is gone before it writes w%d", j, i)
					}
				}
				servers[fmt.Sprintf("w%d", i)] = map[string]any{"command": "w", "args": []any{i}}
			})
			if err = cmp.Or(err, lost); err != nil {
				done <- result{i, err}
				return
			}
		}
	}()
	for i := range cycles {
		if res, err := instance.Connect(rec, instance.ConnectOptions{}); err != nil {
			t.Fatalf("cycle %d connect: %+v, %v", i, res, err)
		}
		// The other program may have written its version over the
		// connected one: the entry is then absent.
		if res, err := instance.Disconnect(rec, instance.ConnectOptions{}); err != nil {
			t.Fatalf("cycle %d disconnect: %+v, %v", i, res, err)
		}
	}
	close(stop)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	writes := r.writes
	t.Logf("%d cycles, %d writes by the other program", cycles, writes)
	data, _ := os.ReadFile(path)
	var doc struct {
		MCPServers map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for j := range writes {
		if _, ok := doc.MCPServers[fmt.Sprintf("w%d", j)]; !ok {
			t.Errorf("the writer's server w%d was lost", j)
		}
	}
	if _, ok := doc.MCPServers["agentctl"]; ok {
		t.Errorf("agentctl's entry left after the last disconnect")
	}
}
