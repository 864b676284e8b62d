package proxy

import (
	"bytes"
	"io"
	"strconv"
	"sync"
)

// MaxStderrLine bounds one line of a server's stderr in the log: past it,
// the rest of the line is counted, not kept, and the line ends with
// "… [N bytes cut]". A server that writes megabytes without a newline
// costs the endpoint this much memory, no more.
const MaxStderrLine = 64 << 10

// linePrefixer writes each line with a prefix, so several servers' stderr
// can share one log file. It holds at most one line, cut at max bytes, and
// looks at each byte written once: memory bounded, time linear, whatever
// the server writes.
type linePrefixer struct {
	mu     *sync.Mutex // shared by the servers writing to w: one line at a time
	w      io.Writer
	prefix string
	max    int // MaxStderrLine unless a test says otherwise

	line []byte // prefix, then the line's first bytes (at most max)
	cut  int64  // bytes of the line past max, dropped
}

func newLinePrefixer(mu *sync.Mutex, w io.Writer, prefix string) *linePrefixer {
	return &linePrefixer{mu: mu, w: w, prefix: prefix, max: MaxStderrLine}
}

func (p *linePrefixer) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.keep(b)
			return n, nil
		}
		p.keep(b[:i])
		p.flush()
		b = b[i+1:]
	}
	return n, nil
}

// keep adds part of the current line: what fits under max, the rest counted.
func (p *linePrefixer) keep(b []byte) {
	if p.line == nil {
		p.line = append(make([]byte, 0, len(p.prefix)+min(p.max, 4096)), p.prefix...)
	}
	room := len(p.prefix) + p.max - len(p.line)
	if len(b) > room {
		p.cut += int64(len(b) - room)
		b = b[:room]
	}
	p.line = append(p.line, b...)
}

// flush writes the current line, its newline now come, and starts the next.
// A failed write loses the line and nothing else: were Write to return the
// error, os/exec would stop reading the server's stderr and close it, and
// the server's next write there could kill it (SIGPIPE).
func (p *linePrefixer) flush() {
	if p.line == nil {
		p.line = append(p.line, p.prefix...)
	}
	if p.cut > 0 {
		p.line = append(p.line, "… ["...)
		p.line = strconv.AppendInt(p.line, p.cut, 10)
		p.line = append(p.line, " bytes cut]"...)
	}
	p.line = append(p.line, '\n')
	p.mu.Lock()
	_, _ = p.w.Write(p.line) // a failure is dropped: see above
	p.mu.Unlock()
	p.line, p.cut = p.line[:len(p.prefix)], 0 // the prefix stays
}
