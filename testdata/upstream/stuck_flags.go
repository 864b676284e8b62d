package main

// Flags for the tests of what agentctl shows of a failing server's stderr
// and of a server that stops reading its input (issue 22, item 7):
//
//	-stderr-quoted Q  write the Go-quoted string Q (strconv.Unquote: "\x1b",
//	                  "\xff", "\n" as Go writes them) to stderr as it is,
//	                  when the flag is read
//	-stderr-env NAMES write NAME=VALUE to stderr for each name of the
//	                  comma-separated list, from the environment, when the
//	                  flag is read: a server that prints its secrets
//	-stop-reading     once a line of its input holds STOP-READING (an echo
//	                  of that text), never read stdin again: that line goes
//	                  unanswered, and what agentctl writes next fills the
//	                  pipe
//
// The stderr flags write when they are read, so before anything else
// (-stderr, -exit-at-start); give them first to keep their order. This
// file is apart from main.go so that its flags and main.go's change
// independently.

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// stopReadingMarker in a line of the server's input makes -stop-reading
// stop reading.
const stopReadingMarker = "STOP-READING"

func init() {
	flag.Func("stderr-quoted", "write this Go-quoted string to stderr", func(q string) error {
		s, err := strconv.Unquote(q)
		if err != nil {
			return fmt.Errorf("not a Go-quoted string: %v", err)
		}
		_, err = os.Stderr.WriteString(s)
		return err
	})
	flag.Func("stderr-env", "write NAME=VALUE to stderr for each comma-separated NAME", func(names string) error {
		for name := range strings.SplitSeq(names, ",") {
			fmt.Fprintf(os.Stderr, "%s=%s\n", name, os.Getenv(name))
		}
		return nil
	})
	flag.BoolFunc("stop-reading", "stop reading stdin at a line holding "+stopReadingMarker, func(string) error {
		return gateStdin()
	})
}

// gateStdin puts a pipe in place of os.Stdin and passes the input's lines
// through it up to the first that holds stopReadingMarker; from then on
// nothing reads the input.
func gateStdin() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	in := os.Stdin
	os.Stdin = r
	go func() {
		br := bufio.NewReader(in)
		for {
			line, err := br.ReadBytes('\n')
			if bytes.Contains(line, []byte(stopReadingMarker)) {
				fmt.Fprintln(os.Stderr, "upstream: no longer reading stdin")
				select {} // the server goes on, deaf
			}
			if len(line) > 0 {
				if _, werr := w.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				w.Close()
				return
			}
		}
	}()
	return nil
}
