package proxy

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// Link is the writing side of a stdio server's connection, which the SDK
// path and the [Tap] share: every message to the server goes through it,
// in order. A message is written at once when the server's input has room
// (the common case: no hand-off to another goroutine); when it has not,
// the message waits in a queue that a flusher writes out. So a server that
// stops reading never stalls the tap's caller (the client's input, and
// with it cancellations and built-ins): once the queue holds more than its
// bound, the tap's messages are refused ([Link.Send]). The SDK's wait for
// theirs, for at most the write timeout ([Options.WriteTimeout]).
type Link struct {
	// CallTimeout is how long a call of the tap's may take: the server's
	// mount's call_timeout ([mount.Mount.CallTimeoutOrDefault]).
	CallTimeout time.Duration

	server string
	out    io.Writer
	raw    syscall.RawConn // out's descriptor, for writes that must not block
	// queueOnly: out may block and cannot be tried without blocking, so
	// every message goes through the queue.
	queueOnly bool
	max       int // bytes the queue may hold for the tap's messages

	mu sync.Mutex
	// writeOut is tryWrite's write of pending to raw's descriptor, which
	// sets written and werr: made once, a func value costs no allocation
	// per message.
	writeOut func(fd uintptr) bool
	pending  []byte
	written  int
	werr     error
	queue    []queued
	queued   int // bytes in queue
	flushing bool
	err      error // once set, the link is closed
}

type queued struct {
	msg  []byte
	done chan error // nil: nobody waits
}

// maxQueued bounds what a link queues for a server that does not read.
const maxQueued = 4 << 20

var (
	errNotReading = errors.New("it is not reading its input")
	errLinkClosed = errors.New("its connection is closed")
	// errWaited is an SDK write that waited its whole timeout.
	errWaited = errors.New("the write timed out")
)

// NewLink returns the link of the server named server that writes to out,
// queueing at most max bytes for the tap (0: 4 MiB). An *os.File (a pipe
// to the server) is written without blocking where the system allows it,
// else through the queue; any other writer (in tests) must not block.
func NewLink(server string, out io.Writer, max int) *Link {
	if max <= 0 {
		max = maxQueued
	}
	k := &Link{server: server, out: out, max: max}
	if f, ok := out.(*os.File); ok {
		k.queueOnly = true
		if rc, err := f.SyscallConn(); err == nil && canTryWrite {
			k.raw, k.queueOnly = rc, false
			k.writeOut = func(fd uintptr) bool {
				k.written, k.werr = writeNonblock(fd, k.pending)
				return true
			}
		}
	}
	return k
}

// Server is the name of the server the link writes to.
func (k *Link) Server() string { return k.server }

// Send queues the tap's message: refused when the link is closed, or the
// server has not read what is already queued. msg is not kept: what must
// wait is copied, so the caller may reuse it once Send returns.
func (k *Link) Send(msg []byte) error { return k.write(msg, false, 0) }

// write writes msg after everything before it; with wait (the SDK's
// writes), it returns once msg is written, or with errWaited after timeout
// (0: no bound); else at once.
func (k *Link) write(msg []byte, wait bool, timeout time.Duration) error {
	k.mu.Lock()
	if k.err != nil {
		err := k.err
		k.mu.Unlock()
		return err
	}
	if !k.flushing {
		n, err := k.tryWrite(msg)
		if err != nil {
			k.err = err
			k.mu.Unlock()
			return err
		}
		if n == len(msg) {
			k.mu.Unlock()
			return nil
		}
		msg = msg[n:] // the rest must follow, whatever the queue holds
	} else if !wait && k.queued >= k.max {
		k.mu.Unlock()
		return errNotReading
	}
	// A copy: the caller's buffer is its own again once write returns
	// (the tap reuses its buffers; an SDK write may give up waiting).
	q := queued{msg: append([]byte(nil), msg...)}
	if wait {
		q.done = make(chan error, 1)
	}
	k.queue = append(k.queue, q)
	k.queued += len(msg)
	if !k.flushing {
		k.flushing = true
		go k.flush()
	}
	k.mu.Unlock()
	if !wait {
		return nil
	}
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case err := <-q.done:
		return err
	case <-expired:
		return errWaited
	}
}

// tryWrite writes what the server's input takes without blocking; k.mu
// is held.
func (k *Link) tryWrite(msg []byte) (int, error) {
	switch {
	case k.queueOnly:
		return 0, nil
	case k.raw == nil:
		return k.out.Write(msg)
	}
	k.pending = msg
	err := k.raw.Write(k.writeOut)
	n, werr := k.written, k.werr
	k.pending, k.written, k.werr = nil, 0, nil
	if err != nil {
		return 0, err
	}
	return n, werr
}

// flush writes the queue out, blocking as long as the server needs.
func (k *Link) flush() {
	for {
		k.mu.Lock()
		if len(k.queue) == 0 || k.err != nil {
			rest, err := k.queue, k.err
			k.queue, k.queued, k.flushing = nil, 0, false
			k.mu.Unlock()
			for _, q := range rest {
				if q.done != nil {
					q.done <- err
				}
			}
			return
		}
		q := k.queue[0]
		k.queue = k.queue[1:]
		k.queued -= len(q.msg)
		k.mu.Unlock()
		_, err := k.out.Write(q.msg)
		if q.done != nil {
			q.done <- err
		}
		if err != nil {
			k.mu.Lock()
			if k.err == nil {
				k.err = err
			}
			k.mu.Unlock()
		}
	}
}

// close refuses further writes; queued messages are dropped (the server is
// going away).
func (k *Link) close() {
	k.mu.Lock()
	if k.err == nil {
		k.err = errLinkClosed
	}
	k.mu.Unlock()
}
