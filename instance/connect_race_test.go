//go:build unix

package instance_test

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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

// editorSave saves as an editor that takes no lock does: its own buffer
// (the edit count and its server, nothing it read) written to a new file
// renamed over the old one. It does not read the file: an editor saves
// what it holds.
func editorSave(path string, change func(map[string]any)) error {
	doc := map[string]any{"mcpServers": map[string]any{}}
	change(doc)
	out, _ := json.MarshalIndent(doc, "", "  ")
	if err := os.WriteFile(path+".editor", out, 0o644); err != nil {
		return err
	}
	return os.Rename(path+".editor", path)
}

// TestConnectConcurrentWriter: another program writes the file again and
// again (its edit count and a server of its own) while the instance is
// connected and disconnected a thousand times, and none of its writes is
// lost. The program either locks the file it edits (flock) and changes
// what it reads in place: each of its edits must find the one before; or
// takes no lock and saves its own buffer by renaming a new file over the
// old one, as editors do: after each connect or disconnect the file must
// hold its latest save (or a later one), never an older one. agentctl's
// entry comes and goes; against a program that saves every millisecond, a
// connect may give up with a conflict (nothing changed, exit code 4): that
// is allowed.
func TestConnectConcurrentWriter(t *testing.T) {
	for _, w := range []struct {
		name    string
		rewrite func(string, func(map[string]any)) error
		pause   time.Duration // between edits
	}{{"locks", lockedRewrite, 0}, {"renames", editorSave, time.Millisecond}} {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			concurrentWriter(t, w.rewrite, w.pause)
		})
	}
}

func concurrentWriter(t *testing.T, rewrite func(string, func(map[string]any)) error, pause time.Duration) {
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
	const cycles = 1000
	stop := make(chan struct{})
	type result struct {
		writes int
		err    error
	}
	done := make(chan result, 1)
	var saved atomic.Int64 // the writer's last edit written
	saved.Store(-1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- result{i, nil}
				return
			default:
			}
			if pause > 0 {
				time.Sleep(pause)
			}
			var lost error
			err := rewrite(path, func(doc map[string]any) {
				if n, _ := doc["edits"].(float64); i > 0 && pause == 0 && int(n) != i-1 {
					lost = fmt.Errorf("the writer's edit %d is gone when it makes edit %d:\n%v", i-1, i, doc)
				}
				doc["edits"] = i
				servers, _ := doc["mcpServers"].(map[string]any)
				servers["w"] = map[string]any{"command": "w", "args": []any{i}}
			})
			if err = cmp.Or(err, lost); err != nil {
				done <- result{i, err}
				return
			}
			saved.Store(int64(i))
		}
	}()
	conflicts := 0
	for i := range cycles {
		for _, op := range []func(*instance.Record, instance.ConnectOptions) (*instance.ConnectResult, error){instance.Connect, instance.Disconnect} {
			// The other program may have written its version over the
			// connected one: the entry is then absent.
			if res, err := op(rec, instance.ConnectOptions{}); errors.Is(err, instance.ErrConflict) && pause > 0 {
				conflicts++ // it saved on every attempt: nothing was changed
			} else if err != nil {
				t.Fatalf("cycle %d: %+v, %v", i, res, err)
			}
			last := saved.Load()
			data, _ := os.ReadFile(path)
			var doc struct{ Edits *int64 }
			if json.Unmarshal(data, &doc) == nil && last >= 0 && (doc.Edits == nil || *doc.Edits < last) {
				t.Fatalf("cycle %d: the writer's edit %d was written before agentctl's change ended, and the file holds an older one:\n%s", i, last, data)
			}
		}
	}
	close(stop)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Logf("%d cycles, %d edits by the other program, %d refused as conflicts", cycles, r.writes, conflicts)
	if _, err := instance.Connect(rec, instance.ConnectOptions{}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	var doc struct {
		Edits      int            `json:"edits"`
		MCPServers map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Edits != r.writes-1 || doc.MCPServers["w"] == nil {
		t.Errorf("the writer's last edit (%d) was lost:\n%s", r.writes-1, data)
	}
	if doc.MCPServers["agentctl"] == nil {
		t.Errorf("agentctl's entry is not in the file once the writer stopped:\n%s", data)
	}
}
