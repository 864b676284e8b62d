package guard

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a client's output that tests read while the guard writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestGuardWritesWholeMessagesUntilClosed: concurrent writers' messages
// never interleave, and nothing is written after Close.
func TestGuardWritesWholeMessagesUntilClosed(t *testing.T) {
	var out lockedBuffer
	g := New(&out, Options{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := strings.Repeat(string(rune('a'+i)), 1000) + "\n"
			for range 50 {
				if _, err := g.Write([]byte(msg)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if len(line) != 1000 || strings.Trim(line, line[:1]) != "" {
			t.Fatalf("interleaved: %.60q", line)
		}
	}
	g.Close()
	if _, err := g.Write([]byte("late\n")); !errors.Is(err, ErrClosed) {
		t.Fatalf("a write after Close: %v", err)
	}
}

// TestGuardServesTheSDKsSide: lines nobody takes reach the SDK's side of
// the connection, which ends with the input.
func TestGuardServesTheSDKsSide(t *testing.T) {
	g := New(io.Discard, Options{})
	go g.Serve(context.Background(), strings.NewReader("{\"a\":1}\n{\"b\":2}\n"), func(line []byte) bool { return bytes.Contains(line, []byte(`"b"`)) })
	got, err := io.ReadAll(g.sdkR)
	if err != nil || string(got) != "{\"a\":1}\n" {
		t.Fatalf("the SDK read %q, %v", got, err)
	}
}
