package guard

import (
	"bytes"
	"errors"
	"io"

	"github.com/agentctl/agentctl/mcpserver/internal/wire"
)

// pump hands each non-blank line to route, and what route returns for it
// (nil: nothing) to sdk, until the input ends (err: nil at its end) or sdk fails (sdkGone). A
// line over the bound goes to tooLong, and reading goes on; with tooLong
// nil, it ends the input.
func pump(lr *wire.Lines, sdk io.Writer, route func([]byte) []byte, tooLong func(*wire.TooLongError)) (err error, sdkGone bool) {
	for {
		line, err := lr.Next()
		if tl, ok := errors.AsType[*wire.TooLongError](err); ok && tooLong != nil {
			tooLong(tl)
			continue
		}
		// A byte-order mark before a message (JSON forbids it, some
		// Windows tools write it) is dropped, and the rest read as usual.
		line = bytes.TrimPrefix(line, byteOrderMark)
		if len(bytes.TrimSpace(line)) > 0 {
			if out := route(line); out != nil {
				if werr := writeLine(sdk, out); werr != nil {
					return werr, true
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return err, false
		}
	}
}

// byteOrderMark is UTF-8's.
var byteOrderMark = []byte("\ufeff")

// writeLine writes line to w with its newline.
func writeLine(w io.Writer, line []byte) error {
	if line[len(line)-1] != '\n' {
		line = append(line, '\n')
	}
	_, err := w.Write(line)
	return err
}
