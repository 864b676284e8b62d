package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// syncBuffer is a bytes.Buffer safe for the server's writers and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func intID(t *testing.T, n int64) jsonrpc.ID {
	id, err := jsonrpc.MakeID(float64(n))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestStdioConnSkipsBadLines: the SDK path's connection to a stdio server
// reads on past a line cut short, one over the limit and one that is not
// JSON; it fails the calls whose ids it can read from them (and only
// those), reports each, hands the rest to go-sdk, and keeps a result's
// structuredContent as written.
func TestStdioConnSkipsBadLines(t *testing.T) {
	t.Parallel()
	out := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"te`,
		`{"jsonrpc":"2.0","id":2,"result":{"content":[],"structuredContent":{"n":1e400}}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"text":"` + strings.Repeat("a", 1000) + `"}}`,
		`not JSON at all`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
	}, "\n") + "\n"
	var stderr syncBuffer
	p := NewPool([]mount.Resolved{server("up", "sh")}, &reconciles{}, Options{Stderr: &stderr, MaxLine: 256})
	s := p.Servers()[0]
	// The server prints its lines, then reads its stdin until the test
	// closes it. (A `cat &` would read /dev/null: sh gives a background
	// job that stdin, and the shell, done, closed the pipe's last reader
	// before the test's writes, which then failed with EPIPE.)
	cmd := exec.Command("sh", "-c", `printf '%s' "$1"; exec cat >/dev/null`, "sh", out)
	conn, err := (&commandTransport{server: s, cmd: cmd}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	recs := map[int64]*callRecord{}
	for id := int64(1); id <= 3; id++ {
		recs[id] = &callRecord{}
		ctx := context.WithValue(context.Background(), callRecordKey{}, recs[id])
		req := &jsonrpc.Request{ID: intID(t, id), Method: "tools/call", Params: json.RawMessage(`{}`)}
		if err := conn.Write(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	read := func() jsonrpc.Message {
		t.Helper()
		m, err := conn.Read(context.Background())
		if err != nil {
			t.Fatalf("Read: %v\nstderr:\n%s", err, stderr.String())
		}
		return m
	}
	failed := func(id int64, why string) {
		t.Helper()
		resp, ok := read().(*jsonrpc.Response)
		if !ok || resp.ID != intID(t, id) || resp.Error == nil {
			t.Fatalf("want a failed answer to %d, got %#v", id, resp)
		}
		if a := recs[id].snapshot(); !strings.Contains(a.why, why) {
			t.Fatalf("call %d: why %q, want %q", id, a.why, why)
		}
	}
	failed(1, "a line that is not JSON")
	resp, ok := read().(*jsonrpc.Response)
	if !ok || resp.ID != intID(t, 2) || resp.Error != nil || string(resp.Result) != `{"content":[]}` {
		t.Fatalf("the good answer: %#v", resp)
	}
	if a := recs[2].snapshot(); a.aside == nil || string(a.aside.structured) != `{"n":1e400}` {
		t.Fatalf("structuredContent kept: %+v", a.aside)
	}
	failed(3, "over the limit of 256")
	if req, ok := read().(*jsonrpc.Request); !ok || req.Method != "notifications/tools/list_changed" {
		t.Fatalf("the notification after the bad lines: %#v", req)
	}
	if _, err := conn.Read(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("at the end: %v", err)
	}
	for _, want := range []string{
		"[up] agentctl: line 1 of its output was a line that is not JSON",
		"[up] agentctl: line 3 of its output was an answer of 1046 bytes, over the limit of 256",
		"[up] agentctl: line 4 of its output was a line that is not JSON (unmarshaling jsonrpc message: json: expected 'null' but found invalid token: not JSON at all); it was skipped",
		"no call's answer could be matched to it",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if st := s.Status(); !strings.Contains(st.Error, "line 4 of its output") {
		t.Errorf("status: %+v", st)
	}
}

// TestStdioConnBoundsItsWrites: a server that does not read its input
// fails the write that waited writeTimeout for it, and every later one,
// with the fast lane's words; the connection then closes itself (the
// server is stopped) and its end says why, so that the server is started
// again. Before, the write, and every call to the server, blocked for
// ever.
func TestStdioConnBoundsItsWrites(t *testing.T) {
	t.Parallel()
	p := NewPool([]mount.Resolved{server("stuck", "sh")}, &reconciles{}, Options{WriteTimeout: 100 * time.Millisecond})
	s := p.Servers()[0]
	// The server never reads its input.
	cmd := exec.Command("sleep", "3600")
	conn, err := (&commandTransport{server: s, cmd: cmd}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	big := &jsonrpc.Request{ID: intID(t, 1), Method: "tools/call", Params: json.RawMessage(`{"text":"` + strings.Repeat("x", 4<<20) + `"}`)}
	werr := make(chan error, 1)
	go func() { werr <- conn.Write(context.Background(), big) }()
	var err1 error
	select {
	case err1 = <-werr:
	case <-time.After(time.Minute):
		t.Fatal("a write to a server that does not read never ended")
	}
	if err1 == nil || err1.Error() != "it is not reading its input (a message waited 100ms for it)" {
		t.Fatalf("the write: %v", err1)
	}
	var nr *notReadingError
	if !errors.As(err1, &nr) || !errors.Is(err1, errRejected) {
		t.Fatalf("the write's error %#v should be a notReadingError that go-sdk reads as rejected by the transport", err1)
	}
	small := &jsonrpc.Request{ID: intID(t, 2), Method: "tools/call", Params: json.RawMessage(`{}`)}
	if err := conn.Write(context.Background(), small); !errors.As(err, &nr) {
		t.Fatalf("a write after it: %v", err)
	}
	// The connection ends on its own, saying why.
	rerr := make(chan error, 1)
	go func() {
		for {
			if _, err := conn.Read(context.Background()); err != nil {
				rerr <- err
				return
			}
		}
	}()
	select {
	case err := <-rerr:
		if want := "agentctl stopped it: it is not reading its input (a message waited 100ms for it)"; err == nil || err.Error() != want {
			t.Fatalf("the connection ended with %v, want %q", err, want)
		}
	case <-time.After(time.Minute):
		t.Fatal("the connection to a server that does not read did not end")
	}
	conn.Close() // returns once the close under way has stopped the server
	if cmd.ProcessState == nil {
		t.Fatal("the server was not stopped")
	}
}
