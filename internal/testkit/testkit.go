// Package testkit holds what agentctl's tests share: a buffer that
// several goroutines write while a test reads it, polling until a
// condition holds, building a program of the module's testdata, writing a
// tree of files, waiting for a pid file, telling whether a process is
// alive, listing an MCP session's tool names and sending an HTTP body
// slowly. It is imported by tests only.
package testkit

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Buffer is a bytes.Buffer safe for concurrent writers and a reader. Made
// with [NewBuffer], it also tells when what was written first contains a
// given text ([Buffer.Seen]).
type Buffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

// NewBuffer returns a Buffer whose Seen channel is closed once what was
// written contains want.
func NewBuffer(want string) *Buffer {
	return &Buffer{want: want, seen: make(chan struct{})}
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.b.Write(p)
	if b.want != "" && strings.Contains(b.b.String(), b.want) {
		b.once.Do(func() { close(b.seen) })
	}
	return n, err
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Rewrite replaces what was written, s, by with(s) in one step (no write
// comes between), and returns s.
func (b *Buffer) Rewrite(with func(s string) string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.b.String()
	b.b.Reset()
	b.b.WriteString(with(s))
	return s
}

// Seen is closed once what was written contains the text given to
// [NewBuffer] (never for a Buffer made otherwise).
func (b *Buffer) Seen() <-chan struct{} { return b.seen }

// Wait is how long [Eventually] waits: far beyond any machine's slowness,
// so that only a hang fails.
const Wait = time.Minute

// Eventually polls cond until it holds, failing the test after [Wait]
// with what was awaited.
func Eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(Wait)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WriteFiles writes files, slash paths relative to dir mapped to their
// contents, making the folders they need.
func WriteFiles(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// WaitPID waits (as [Eventually]) until file holds a process id, and
// returns it.
func WaitPID(tb testing.TB, file string) int {
	tb.Helper()
	var pid int
	Eventually(tb, "the pid file "+file, func() bool {
		b, err := os.ReadFile(file)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}

// Root is the module's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Build builds the module's ./testdata/NAME into a temporary directory of
// tb's, with env (NAME=VALUE) added to the test's environment, and returns
// the program's path.
func Build(tb testing.TB, name string, env ...string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), name)
	cmd := exec.CommandContext(context.Background(), "go", "build", "-o", path, "./testdata/"+name)
	cmd.Dir, cmd.Env = Root(), append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build testdata/%s: %v\n%s", name, err, out)
	}
	return path
}
