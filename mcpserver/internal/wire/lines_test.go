package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestLinesFramesMessages(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // several of the reader's buffers
	in := "one\n\n" + long + "\nlast without newline"
	lr := NewLines(strings.NewReader(in), 0)
	var got []string
	for {
		line, err := lr.Next()
		if len(line) > 0 {
			got = append(got, string(line))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"one\n", "\n", long + "\n", "last without newline"}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %.40q, want %.40q", i, got[i], want[i])
		}
	}
}

func TestLinesBoundsAMessage(t *testing.T) {
	for _, n := range []int{100, 100 << 10} { // within one buffer, and across several
		lr := NewLines(strings.NewReader(strings.Repeat("a", n)+"\nnext\n"), n-1)
		if _, err := lr.Next(); !errors.Is(err, ErrLineTooLong) {
			t.Fatalf("a %d-byte line under a bound of %d: %v", n, n-1, err)
		}
	}
	lr := NewLines(strings.NewReader(strings.Repeat("a", 99)+"\n"), 100)
	if line, err := lr.Next(); err != nil || len(line) != 100 {
		t.Fatalf("a line of exactly the bound: %d bytes, %v", len(line), err)
	}
}

// TestLinesSkipsALineOverTheBound: a line over the bound is read to its end
// without being held (the buffer stays near the bound, whatever the line's
// length), reported with its size, and the next line reads as usual.
func TestLinesSkipsALineOverTheBound(t *testing.T) {
	const max = 1 << 10
	huge := strings.Repeat("a", 10<<20)
	for _, tail := range []string{"\nnext\n", ""} { // ended by a newline, and by the end of the input
		lr := NewLines(strings.NewReader(huge+tail), max)
		_, err := lr.Next()
		var tl *TooLongError
		if !errors.As(err, &tl) || !errors.Is(err, ErrLineTooLong) || tl.Size < len(huge) || tl.Max != max {
			t.Fatalf("a %d-byte line under a bound of %d: %v", len(huge), max, err)
		}
		if cap(lr.buf) > max+64<<10 {
			t.Fatalf("the skipped line was held: a buffer of %d bytes", cap(lr.buf))
		}
		line, err := lr.Next()
		if tail == "" {
			if err != io.EOF || len(line) != 0 {
				t.Fatalf("after a skipped last line: %q, %v", line, err)
			}
			continue
		}
		if err != nil || string(line) != "next\n" {
			t.Fatalf("the line after the skipped one: %q, %v", line, err)
		}
	}
}

// TestLinesShowsASkippedLine: Skipped sees every byte of a line over the
// bound, in order, and nothing of the lines around it.
func TestLinesShowsASkippedLine(t *testing.T) {
	const max = 1 << 10
	huge := "{" + strings.Repeat("a", 200<<10) + "}\n"
	var seen bytes.Buffer
	lr := NewLines(strings.NewReader("short\n"+huge+"next\n"), max)
	lr.Skipped = func(piece []byte) { seen.Write(piece) }
	if line, err := lr.Next(); err != nil || string(line) != "short\n" {
		t.Fatalf("first line: %q, %v", line, err)
	}
	if _, err := lr.Next(); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("the long line: %v", err)
	}
	if seen.String() != huge {
		t.Fatalf("Skipped saw %d bytes (%.20q...), want the %d of the line", seen.Len(), seen.String(), len(huge))
	}
	if line, err := lr.Next(); err != nil || string(line) != "next\n" {
		t.Fatalf("after it: %q, %v", line, err)
	}
}
