package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/agentctl/agentctl/mcpserver/internal/wire"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
	var stderr testkit.Buffer
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

// TestStdioReportHidesTheServersSecrets: a line of a server's output that
// is not JSON is reported with go-sdk's words, which quote the line; a
// secret of the server's environment in it (a tool that printed its
// token) is taken out of the report get_instance shows the model and of
// the log, as it is of the server's stderr.
func TestStdioReportHidesTheServersSecrets(t *testing.T) {
	t.Parallel()
	const secret = "ghp_S3cretTokenValue42"
	m := server("gh", "sh")
	m.Env = map[string]string{"GITHUB_TOKEN": secret}
	var stderr testkit.Buffer
	p := NewPool([]mount.Resolved{m}, &reconciles{}, Options{Stderr: &stderr})
	s := p.Servers()[0]
	cmd := exec.Command("sh", "-c", `printf 'token=%s\n' "$1"; exec cat >/dev/null`, "sh", secret)
	conn, err := (&commandTransport{server: s, cmd: cmd}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Read(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("after the line: %v", err)
	}
	st := s.Status()
	if !strings.Contains(st.Error, "line 1 of its output was a line that is not JSON") || !strings.Contains(st.Error, Redacted) ||
		strings.Contains(st.Error, secret) || strings.Contains(stderr.String(), secret) {
		t.Errorf("status %q\nstderr %s\nwant the line reported, its secret redacted", st.Error, stderr.String())
	}
}

// TestStdioReportCutsWholeCharacters: the part of go-sdk's error a report
// repeats is cut at a character's end, not in the middle of one: the report
// is text that get_instance shows as JSON, and a broken character would be
// replaced there.
func TestStdioReportCutsWholeCharacters(t *testing.T) {
	t.Parallel()
	p := NewPool([]mount.Resolved{server("u", "sh")}, &reconciles{}, Options{})
	s := p.Servers()[0]
	line := strings.Repeat("é", 300) // two bytes each: a cut at 200 bytes of the error may split one
	for _, pad := range []string{"", "x"} {
		cmd := exec.Command("sh", "-c", `printf '%s\n' "$1"; exec cat >/dev/null`, "sh", pad+line)
		conn, err := (&commandTransport{server: s, cmd: cmd}).Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Read(context.Background()); !errors.Is(err, io.EOF) {
			t.Fatalf("after the line: %v", err)
		}
		conn.Close()
		if st := s.Status(); !utf8.ValidString(st.Error) || !strings.Contains(st.Error, "é...") {
			t.Errorf("pad %q: report %q; want it valid UTF-8, cut after a whole é", pad, st.Error)
		}
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

// recordingTap takes the lines and answers whose id names "tap".
type recordingTap struct {
	mu                    sync.Mutex
	up                    *Link
	lines, answers, downs []string
}

func (r *recordingTap) Up(link *Link) { r.mu.Lock(); r.up = link; r.mu.Unlock() }

func (r *recordingTap) Line(_ *Link, m *wire.Message) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, string(m.ID))
	return bytes.Contains(m.ID, []byte("tap-")) // not one written with escapes
}

func (r *recordingTap) Answer(_ *Link, resp *jsonrpc.Response, unreadable string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := fmt.Sprint(resp.ID.Raw())
	r.answers = append(r.answers, id+" "+unreadable)
	return strings.Contains(id, "tap")
}

func (r *recordingTap) Down(link *Link, cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.downs = append(r.downs, fmt.Sprint(link == r.up, cause))
}

// TestStdioConnOffersLinesToTheTap: the pool's tap hears of the connection,
// is offered each line of the server's that is JSON, read once, then each
// answer as go-sdk read it, and the ids of the answers that could not be
// read; what it takes never reaches go-sdk; it hears of the connection's
// end.
func TestStdioConnOffersLinesToTheTap(t *testing.T) {
	t.Parallel()
	out := strings.Join([]string{
		`{"jsonrpc":"2.0","id":"tap-1","result":{}}`,
		`{"jsonrpc":"2.0","id":"tap-2","result":{"content":[{"type":"te`,
		`{"jsonrpc":"2.0","id":"tap\u002d3","result":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
	}, "\n") + "\n"
	var stderr testkit.Buffer
	p := NewPool([]mount.Resolved{server("up", "sh")}, &reconciles{}, Options{Stderr: &stderr})
	tap := &recordingTap{}
	p.SetTap(tap)
	cmd := exec.Command("sh", "-c", `printf '%s' "$1"; exec cat >/dev/null`, "sh", out)
	conn, err := (&commandTransport{server: p.Servers()[0], cmd: cmd}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if m, err := conn.Read(context.Background()); err != nil || m.(*jsonrpc.Response).ID != intID(t, 1) {
		t.Fatalf("go-sdk read %#v, %v", m, err)
	}
	if _, err := conn.Read(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("at the end: %v", err)
	}
	tap.mu.Lock()
	defer tap.mu.Unlock()
	if tap.up == nil || tap.up.Server() != "up" || tap.up.CallTimeout != mount.DefaultCallTimeout {
		t.Fatalf("the tap's link: %+v", tap.up)
	}
	if want := []string{`"tap-1"`, `"tap\u002d3"`, `1`}; !slices.Equal(tap.lines, want) {
		t.Errorf("lines offered %q, want %q", tap.lines, want)
	}
	if want := []string{"tap-2 a line that is not JSON", "tap-3 ", "1 "}; !slices.Equal(tap.answers, want) {
		t.Errorf("answers offered %q, want %q", tap.answers, want)
	}
	if want := []string{"true EOF"}; !slices.Equal(tap.downs, want) {
		t.Errorf("downs %q, want %q", tap.downs, want)
	}
	if want := "[up] agentctl: line 2 of its output was a line that is not JSON"; !strings.Contains(stderr.String(), want) ||
		!strings.Contains(stderr.String(), "the call it answered (agentctl's id tap-2 upstream) failed") {
		t.Errorf("stderr:\n%s\nwant %q", stderr.String(), want)
	}
}

// TestStopAsTheSDKDoes pins the stdio transport's copy of go-sdk's stdio
// shutdown (stdioConn.stop, from go-sdk v1.8.0 pipeRWC.Close): the same
// servers stopped by it and by mcp.CommandTransport end the same way, and
// that way shows the order: a server that reads its input ends when it is
// closed; one that does not is sent SIGTERM; one that ignores SIGTERM too
// is killed.
func TestStopAsTheSDKDoes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("signals")
	}
	t.Parallel()
	servers := []struct {
		what, script, want string // want: what Close returns
	}{
		{"reads its input", `cat >/dev/null`, "<nil>"},
		{"ignores its closed input", `exec 0</dev/null; while :; do sleep 0.05; done`, "signal: terminated"},
		{"ignores SIGTERM too", `trap '' TERM; exec 0</dev/null; while :; do sleep 0.05; done`, "signal: killed"},
	}
	for _, s := range servers {
		for _, sdk := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/sdk=%v", s.what, sdk), func(t *testing.T) {
				t.Parallel()
				cmd := exec.Command("/bin/sh", "-c", s.script)
				p := NewPool([]mount.Resolved{server("s", "sh")}, &reconciles{}, Options{})
				var tr mcp.Transport = &commandTransport{server: p.Servers()[0], cmd: cmd}
				if sdk {
					tr = &mcp.CommandTransport{Command: cmd, TerminateDuration: StopGrace}
				}
				conn, err := tr.Connect(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if got := fmt.Sprint(conn.Close()); got != s.want {
					t.Fatalf("Close: %s, want %s", got, s.want)
				}
			})
		}
	}
}
