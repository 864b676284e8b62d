package lane

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/agentctl/agentctl/mcpserver/proxy"
)

// serverLink is the lane's side of one connection to an external stdio server.
//
// Every message to the server, the lane's and the SDK's, goes through
// write, in order. A message is written at once when the server's input
// has room (the common case: no hand-off to another goroutine); when it has
// not, the message waits in a queue that a flusher writes out. So a server
// that stops reading never stalls the client's other messages
// (cancellations, built-ins) behind it: once the queue holds more than
// maxQueued bytes, further lane calls are refused with a tool error.
type serverLink struct {
	server string
	// sdk is the SDK's connection to the server (set before its output
	// is read), told of the answers to its calls that cannot be read.
	sdk *proxy.Recorder
	out io.Writer
	raw syscall.RawConn // out's descriptor, for writes that must not block
	// queueOnly: out may block and cannot be tried without blocking, so
	// every message goes through the queue.
	queueOnly bool
	max       int // bytes the queue may hold for lane calls

	mu       sync.Mutex
	queue    []queued
	queued   int // bytes in queue
	flushing bool
	err      error // once set, the link is closed
}

type queued struct {
	msg  []byte
	done chan error // nil: nobody waits
}

// maxQueued bounds what the lane queues for a server that does not read.
const maxQueued = 4 << 20

var (
	errNotReading = errors.New("it is not reading its input")
	errLinkClosed = errors.New("its connection is closed")
)

// newServerLink returns the link that writes to out: an *os.File (a pipe to
// the server) is written without blocking where the system allows it, else
// through the queue; any other writer (in tests) must not block.
func newServerLink(server string, out io.Writer) *serverLink {
	k := &serverLink{server: server, out: out, max: maxQueued}
	if f, ok := out.(*os.File); ok {
		k.queueOnly = true
		if rc, err := f.SyscallConn(); err == nil && canTryWrite {
			k.raw, k.queueOnly = rc, false
		}
	}
	return k
}

// send queues the lane's message: refused when the link is closed or the
// server has not read what is already queued.
func (k *serverLink) send(msg []byte) error { return k.write(msg, false) }

// write writes msg after everything before it; with wait, it returns once
// msg is written (the SDK's writes), else at once.
func (k *serverLink) write(msg []byte, wait bool) error {
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
	q := queued{msg: msg}
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
	if wait {
		return <-q.done
	}
	return nil
}

// tryWrite writes what the server's input takes without blocking.
func (k *serverLink) tryWrite(msg []byte) (int, error) {
	switch {
	case k.queueOnly:
		return 0, nil
	case k.raw == nil:
		return k.out.Write(msg)
	}
	var (
		n    int
		werr error
	)
	if err := k.raw.Write(func(fd uintptr) bool {
		n, werr = writeNonblock(fd, msg)
		return true
	}); err != nil {
		return 0, err
	}
	return n, werr
}

// flush writes the queue out, blocking as long as the server needs.
func (k *serverLink) flush() {
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
func (k *serverLink) close() {
	k.mu.Lock()
	if k.err == nil {
		k.err = errLinkClosed
	}
	k.mu.Unlock()
}
