package proxy

import (
	"bytes"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestLinePrefixerPrefixesEachLine(t *testing.T) {
	var mu sync.Mutex
	var out bytes.Buffer
	a := newLinePrefixer(&mu, &out, "[a] ")
	b := newLinePrefixer(&mu, &out, "[b] ")
	for _, w := range []struct {
		p *linePrefixer
		s string
	}{{a, "one"}, {b, "x\n"}, {a, " two\nthree\n\n"}, {a, "partial"}} {
		if n, err := w.p.Write([]byte(w.s)); n != len(w.s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v; want %d, nil", w.s, n, err, len(w.s))
		}
	}
	want := "[b] x\n[a] one two\n[a] three\n[a] \n"
	if got := out.String(); got != want {
		t.Errorf("log:\n%q\nwant\n%q", got, want)
	}
}

func TestLinePrefixerCutsLongLines(t *testing.T) {
	var mu sync.Mutex
	var out bytes.Buffer
	p := newLinePrefixer(&mu, &out, "[s] ")
	p.max = 10
	for _, s := range []string{"01234", "56789abc", "def\nshort\n", "0123456789", "\n"} {
		p.Write([]byte(s))
	}
	want := "[s] 0123456789… [6 bytes cut]\n[s] short\n[s] 0123456789\n"
	if got := out.String(); got != want {
		t.Errorf("log:\n%q\nwant\n%q", got, want)
	}
}

// A server writing 50 MB of stderr without a newline costs the endpoint one
// line's bound of memory, and each byte is looked at once: before, every
// write re-read and copied the whole pending line (18 s and 269 MB for
// 40 MB). Bytes allocated measure both: a quadratic re-scan copies what it
// scans.
func TestLinePrefixerBoundedOnEndlessLine(t *testing.T) {
	var mu sync.Mutex
	var out bytes.Buffer
	p := newLinePrefixer(&mu, &out, "[s] ")
	chunk := bytes.Repeat([]byte("x"), 32<<10) // what os/exec's copier writes
	const total = 50 << 20

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range total / len(chunk) {
		p.Write(chunk)
		if c := cap(p.line); c > 2*(len(p.prefix)+MaxStderrLine) {
			t.Fatalf("the pending line holds %d bytes; want at most about %d", c, len(p.prefix)+MaxStderrLine)
		}
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("writing %d MB without a newline allocated %d MB; want a bounded amount (under 8 MB)", total>>20, alloc>>20)
	}
	if out.Len() != 0 {
		t.Fatalf("wrote %d bytes before the line ended", out.Len())
	}

	p.Write([]byte("\n"))
	want := "[s] " + strings.Repeat("x", MaxStderrLine) + "… [52363264 bytes cut]\n"
	if got := out.String(); got != want {
		t.Errorf("the cut line has %d bytes, ends %q; want %d bytes ending %q", len(got), got[max(0, len(got)-40):], len(want), want[len(want)-40:])
	}
}

type failingWriter struct{ calls int }

func (f *failingWriter) Write([]byte) (int, error) { f.calls++; return 0, os.ErrClosed }

// A log that fails (its rotation could not reopen it) must not stop the
// server's stderr being read: os/exec closes the pipe when Write errs.
func TestLinePrefixerKeepsReadingWhenTheLogFails(t *testing.T) {
	var mu sync.Mutex
	w := &failingWriter{}
	p := newLinePrefixer(&mu, w, "[s] ")
	for _, s := range []string{"one\n", "two\nthree"} {
		if n, err := p.Write([]byte(s)); n != len(s) || err != nil {
			t.Errorf("Write(%q) = %d, %v; want %d, nil", s, n, err, len(s))
		}
	}
	if w.calls != 2 {
		t.Errorf("the log was written %d times; want 2 (one per line)", w.calls)
	}
}
