package testkit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestBuffer(t *testing.T) {
	b := NewBuffer("ready")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { fmt.Fprintf(b, "w%d ", i) })
	}
	wg.Wait()
	select {
	case <-b.Seen():
		t.Fatal("Seen before the text was written")
	default:
	}
	fmt.Fprint(b, "rea")
	fmt.Fprint(b, "dy")
	<-b.Seen() // written in two parts: seen once whole
	if got := b.Rewrite(func(s string) string { return "kept" }); len(got) != 8*3+5 {
		t.Errorf("Rewrite returned %q", got)
	}
	if b.String() != "kept" {
		t.Errorf("after Rewrite: %q", b.String())
	}
}

func TestEventually(t *testing.T) {
	n := 0
	Eventually(t, "three polls", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Errorf("polled %d times", n)
	}
}

func TestBuild(t *testing.T) {
	path := Build(t, "minimal", "CGO_ENABLED=0")
	if fi, err := os.Stat(path); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("built %s: %v", path, err)
	}
}

func TestWriteFiles(t *testing.T) {
	dir := t.TempDir()
	WriteFiles(t, dir, map[string]string{"a.md": "A", "sub/deeper/b.md": "B"})
	for name, want := range map[string]string{"a.md": "A", "sub/deeper/b.md": "B"} {
		if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name))); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v", name, b, err)
		}
	}
}

func TestWaitPID(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pid")
	go func() {
		time.Sleep(20 * time.Millisecond)
		_ = os.WriteFile(file+".tmp", []byte("4242\n"), 0o644)
		_ = os.Rename(file+".tmp", file)
	}()
	if pid := WaitPID(t, file); pid != 4242 {
		t.Errorf("WaitPID = %d", pid)
	}
}

func TestAlive(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Error("this process is not alive")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && Alive(cmd.Process.Pid) {
		t.Errorf("pid %d alive after it was reaped", cmd.Process.Pid)
	}
}

func TestToolNames(t *testing.T) {
	ctx := context.Background()
	s := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "test"}, nil)
	for _, name := range []string{"b", "a"} {
		mcp.AddTool(s, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, nil
		})
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := ToolNames(ctx, t, cs); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("ToolNames = %v", got)
	}
}

func TestSlowBody(t *testing.T) {
	// A server that reads the head, answers and closes: closed, with the answer.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	heads := make(chan string, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		head, _ := bufio.NewReader(conn).ReadString('{')
		heads <- head
		fmt.Fprint(conn, "HTTP/1.1 408 Request Timeout\r\n\r\n")
	}()
	answer, closed := SlowBody(t, ln.Addr().String(), "/mcp", "localhost", "X-A: b\r\n", Wait)
	if !closed || !strings.HasPrefix(answer, "HTTP/1.1 408") {
		t.Errorf("SlowBody = %q, %v; want the answer, closed", answer, closed)
	}
	if head := <-heads; !strings.HasPrefix(head, "POST /mcp HTTP/1.1\r\nHost: localhost\r\n") || !strings.Contains(head, "\r\nX-A: b\r\n\r\n") {
		t.Errorf("sent %q", head)
	}
	// A server that never closes: not closed within the bound.
	hold := make(chan struct{})
	defer close(hold)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		go io.Copy(io.Discard, conn)
		<-hold
	}()
	if _, closed := SlowBody(t, ln.Addr().String(), "/", "localhost", "", 200*time.Millisecond); closed {
		t.Error("closed, from a server that holds the connection")
	}
}
