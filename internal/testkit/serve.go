package testkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolNames lists cs's tools (tools/list, failing tb on an error) and
// returns their names in the server's order.
func ToolNames(ctx context.Context, tb testing.TB, cs *mcp.ClientSession) []string {
	tb.Helper()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		tb.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// SlowBody sends a POST of path to addr on a raw connection, with host and
// headers (each line ending in \r\n), whose body (announced as 100000
// bytes) comes one byte every 50ms, and reports whether the server closed
// the connection within bound, and what it answered before, if anything.
func SlowBody(tb testing.TB, addr, path, host, headers string, bound time.Duration) (answer string, closed bool) {
	tb.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000\r\n%s\r\n{", path, host, headers)
	if err != nil {
		tb.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(bound))
	b, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return string(b), false
	}
	return string(b), true // EOF or reset: closed
}
