package wire

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLine is the default bound of one message: go-sdk's own
// ([mcp.DefaultMaxLineLength], 16 MiB).
const MaxLine = mcp.DefaultMaxLineLength

// ErrLineTooLong is a message longer than the bound of its [Lines].
var ErrLineTooLong = errors.New("a message longer than the limit")

// TooLongError is a message over the bound of its [Lines], which skipped
// it: the next call of [Lines.Next] reads the line after it.
type TooLongError struct {
	Size, Max int // the message's length with its newline, and the bound
}

func (e *TooLongError) Error() string {
	return fmt.Sprintf("a message of %d bytes, over the limit of %d", e.Size, e.Max)
}

// Unwrap makes a TooLongError match [ErrLineTooLong].
func (e *TooLongError) Unwrap() error { return ErrLineTooLong }

// Lines reads newline-delimited messages into a reused buffer, each at
// most a bound long: the client's, and each stdio server's.
type Lines struct {
	br  *bufio.Reader
	buf []byte
	max int
	// Skipped, if set, sees a line over the bound as [Lines.Next] skips
	// it, a piece at a time and in order, never the whole line at once
	// (an [IDReader] reads the id of an answer too long to keep from it).
	Skipped func(piece []byte)
}

// NewLines reads r's messages of at most max bytes (0: [MaxLine]).
func NewLines(r io.Reader, max int) *Lines {
	if max <= 0 {
		max = MaxLine
	}
	return &Lines{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the next line with its newline (the last one may lack it),
// valid until the following call. At the end of the input it returns what
// is left with [io.EOF]. A line over the bound is read to its end but never
// held: Next returns a [*TooLongError] for it, and the following call
// reads on from the next line.
func (r *Lines) Next() ([]byte, error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(r.buf) == 0 && err == nil && len(chunk) <= r.max {
			return chunk, nil // the whole line was in the buffer: no copy
		}
		if len(r.buf)+len(chunk) > r.max {
			if r.Skipped != nil {
				r.Skipped(r.buf)
				r.Skipped(chunk)
			}
			return nil, r.skip(len(r.buf)+len(chunk), err)
		}
		r.buf = append(r.buf, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		return r.buf, err
	}
}

// skip reads the rest of a line over the bound, of which size bytes are
// read (the last chunk's read error err), keeping none of it.
func (r *Lines) skip(size int, err error) error {
	r.buf = r.buf[:0]
	for err == bufio.ErrBufferFull {
		var chunk []byte
		chunk, err = r.br.ReadSlice('\n')
		size += len(chunk)
		if r.Skipped != nil {
			r.Skipped(chunk)
		}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return &TooLongError{Size: size, Max: r.max}
}
