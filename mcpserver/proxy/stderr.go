package proxy

import (
	"bytes"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
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

// What a server's [ServerStatus] shows of its stderr while it is not up:
// the last lines its processes wrote, which say why it failed in its own
// words. Each line is cut at stderrTailLine bytes.
const (
	StderrTailLines = 20
	StderrTailBytes = 4 << 10
	stderrTailLine  = 1 << 10
)

// stderrTail keeps the last lines a server's process wrote to its stderr:
// at most [StderrTailLines] lines and [StderrTailBytes] bytes, each line
// with the server's secrets taken out (see stderrRedactor), invalid UTF-8
// replaced (so that it is valid in JSON) and cut at stderrTailLine bytes.
// Blank lines are not kept. Control characters are kept: JSON escapes
// them, and a terminal's output neutralises them (`tools list`).
type stderrTail struct {
	redact *strings.Replacer
	// overlap is the longest secret's length less one: a line held only
	// up to hold bytes loses that many more from its end once redacted,
	// where a secret may begin that goes on in the bytes not held.
	hold, overlap int

	mu    sync.Mutex
	lines []string
	size  int    // bytes in lines
	line  []byte // the current line's first bytes (at most hold)
	cut   int64  // bytes of the current line past hold, dropped
}

func newStderrTail(r *stderrRedaction) *stderrTail {
	return &stderrTail{redact: r.replacer, hold: stderrTailLine + r.longest, overlap: max(r.longest-1, 0)}
}

func (t *stderrTail) Write(b []byte) (int, error) {
	n := len(b)
	t.mu.Lock()
	defer t.mu.Unlock()
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			t.keep(b)
			break
		}
		t.keep(b[:i])
		t.flush()
		b = b[i+1:]
	}
	return n, nil
}

// flush ends the current line. The caller holds mu.
func (t *stderrTail) flush() {
	t.push(t.clean(t.line, t.cut, false))
	t.line, t.cut = t.line[:0], 0
}

// endLine ends a line left unfinished by a process that is gone (its last
// words may lack a newline). The server calls it when its process has
// ended, before it says it is down.
func (t *stderrTail) endLine() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.line) > 0 || t.cut > 0 {
		t.flush()
	}
}

// keep adds part of the current line: what fits under hold, the rest
// counted.
func (t *stderrTail) keep(b []byte) {
	if room := t.hold - len(t.line); len(b) > room {
		t.cut += int64(len(b) - room)
		b = b[:room]
	}
	t.line = append(t.line, b...)
}

// clean is a line as the tail keeps it: redacted, valid UTF-8, cut. An
// open line (the process is still writing it) may end in the first part
// of a secret, as may one cut short at hold: the last overlap bytes of
// either are not shown.
func (t *stderrTail) clean(line []byte, cut int64, open bool) string {
	s := t.redact.Replace(string(line))
	if cut > 0 || open {
		// What is left at the end of a secret cut short is no longer than
		// overlap.
		drop := min(t.overlap, len(s))
		s = s[:len(s)-drop]
		if cut > 0 {
			cut += int64(drop)
		}
	}
	s = strings.ToValidUTF8(strings.TrimRight(s, "\r"), "\uFFFD")
	if len(s) > stderrTailLine {
		i := stderrTailLine
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		cut += int64(len(s) - i)
		s = s[:i]
	}
	if cut > 0 {
		s += "… [" + strconv.FormatInt(cut, 10) + " bytes cut]"
	}
	return s
}

// push adds a line, dropping the oldest ones past the bounds.
func (t *stderrTail) push(s string) {
	if strings.TrimSpace(s) == "" {
		return
	}
	t.lines = append(t.lines, s)
	t.size += len(s)
	for len(t.lines) > StderrTailLines || t.size > StderrTailBytes {
		t.size -= len(t.lines[0])
		t.lines = t.lines[1:]
	}
}

// Lines returns the tail, oldest first, with what there is of the line
// a running process has not ended yet as its last; nil when there is
// none.
func (t *stderrTail) Lines() []string {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.line) == 0 && t.cut == 0 {
		return slices.Clone(t.lines)
	}
	c := stderrTail{lines: slices.Clone(t.lines), size: t.size}
	c.push(t.clean(t.line, t.cut, true))
	return c.lines
}
