package proxy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
	"time"
)

// TestLinkTakesALargeMessageBehindASmallQueue: the queue's bound is on
// what is already waiting, so one message larger than the bound still goes
// to a server that is reading, just slowly.
func TestLinkTakesALargeMessageBehindASmallQueue(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	link := NewLink("up", w, 1<<20)
	// More than the pipe holds: the rest waits in the queue.
	if err := link.Send(bytes.Repeat([]byte("a"), 1<<17)); err != nil {
		t.Fatal(err)
	}
	if err := link.Send(bytes.Repeat([]byte("b"), 2<<20)); err != nil {
		t.Fatalf("a 2 MiB message behind %d queued bytes: %v", link.queued, err)
	}
	// Past the bound, the next one is refused; a reader drains it all.
	if err := link.Send([]byte("c")); err != errNotReading {
		t.Fatalf("over the bound: %v", err)
	}
	n, err := io.Copy(io.Discard, io.LimitReader(r, 1<<17+2<<20))
	if err != nil || n != 1<<17+2<<20 {
		t.Fatalf("read %d: %v", n, err)
	}
}

// TestLinkBoundsTheSDKsWrites: a write of the SDK's waits for the queue, at
// most its timeout; closing the link ends the writes that wait.
func TestLinkBoundsTheSDKsWrites(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe() // nobody reads: the pipe fills up
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	link := NewLink("up", w, 0)
	big := bytes.Repeat([]byte("x"), 1<<20)
	if err := link.write(big, true, 50*time.Millisecond); !errors.Is(err, errWaited) {
		t.Fatalf("a write to a server that does not read: %v", err)
	}
	werr := make(chan error, 1)
	go func() { werr <- link.write([]byte("{}\n"), true, 0) }()
	time.Sleep(20 * time.Millisecond)
	link.close()
	r.Close() // the blocked flusher's write fails
	select {
	case err := <-werr:
		if err == nil {
			t.Fatal("a write queued behind a closed link succeeded")
		}
	case <-time.After(time.Minute):
		t.Fatal("a waiting write outlived the link")
	}
	if err := link.Send([]byte("{}\n")); err != errLinkClosed {
		t.Fatalf("a send after close: %v", err)
	}
}

// TestLinkKeepsNoCallersBytes: what Send must queue (the server's input
// is full) is copied, so the caller may reuse its buffer at once, as the
// fast lane does; and a message the pipe takes costs no allocation.
func TestLinkKeepsNoCallersBytes(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	link := NewLink("up", w, 0)
	small := []byte("{}\n")
	if n := testing.AllocsPerRun(100, func() {
		if err := link.Send(small); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Send to a pipe with room: %v allocations, want 0", n)
	}
	if _, err := io.ReadFull(r, make([]byte, 101*len(small))); err != nil {
		t.Fatal(err)
	}
	buf := bytes.Repeat([]byte("a"), 1<<17) // more than the pipe holds
	if err := link.Send(buf); err != nil {
		t.Fatal(err)
	}
	link.mu.Lock()
	queued := link.flushing // the rest waits: nobody reads yet
	link.mu.Unlock()
	if !queued {
		t.Fatal("nothing was queued: the test's pipe took it all")
	}
	for i := range buf {
		buf[i] = 'b' // the caller reuses its buffer
	}
	got, err := io.ReadAll(io.LimitReader(r, 1<<17))
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.IndexByte(got, 'b'); i >= 0 {
		t.Fatalf("the server read the caller's later bytes at %d of %d", i, len(got))
	}
}
