// Command byterelay is the floor of the lane's benchmark through real
// processes (BenchmarkLaneProcess in cmd/agentctl): the smallest stdio
// proxy, a process that starts the server given as its arguments and
// copies lines between its own stdio and the server's, as any stdio MCP
// proxy must at least do.
package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
)

func main() {
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		os.Exit(1)
	}
	copyLines := func(dst io.Writer, src io.Reader) {
		r := bufio.NewReaderSize(src, 1<<16)
		for {
			line, err := r.ReadSlice('\n')
			if len(line) > 0 {
				if _, werr := dst.Write(line); werr != nil {
					return
				}
			}
			if err != nil && err != bufio.ErrBufferFull {
				return
			}
		}
	}
	go func() { copyLines(in, os.Stdin); in.Close() }()
	copyLines(os.Stdout, out)
	_ = cmd.Wait()
}
