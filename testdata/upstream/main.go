// Command upstream is a small, deterministic MCP server used as an "upstream"
// in agentctl's tests. It serves MCP over stdio (stdout carries only the
// protocol; diagnostics go to stderr).
//
// Build it from the module root with
//
//	go build -o /tmp/upstream ./testdata/upstream
//
// Flags:
//
//	-tools N          register tool_0 ... tool_{N-1} (default 3)
//	-page2            list pages of 2 items (ServerOptions.PageSize = 2)
//	-stderr TEXT      write TEXT and a newline to stderr at start
//	-pidfile FILE     write the process id to FILE at start
//	-exit-at-start    exit with code 2 at start, before reading stdin
//	-flag-file FILE   behave as -exit-at-start if FILE exists at start
//	-hang-start       never answer initialize; exit when stdin closes
//	-crash-after N    exit with code 3 on the N-th tools/call (from 1; 0 = never)
//	-echo-meta        also register echo_meta (below); off by default, so that
//	                  the tool lists other tests compare stay as they are
//	-tool-names, -tool-count  extra tools (see tools_flags.go)
//	-misbehave        also register the tools of a server that misbehaves
//	                  (below); off by default for the same reason
//	-start-delay, -start-gate  come up late (see delay_flags.go)
//
// At start the -stderr text and the -pidfile are written first, then the
// exit/hang flags are applied.
//
// Tools, besides tool_i ({text?} → "tool_i: <text>", structured
// {"tool": name, "text": text}):
//
//	echo {text}       text back, structured {"text": text}; read-only, title "Echo"
//	fail              a result with isError and text "upstream says no"
//	crash             exit with code 3 before answering
//	slow {ms}         take ms milliseconds, sending progress every 50ms when the
//	                  request has a progress token; on cancellation log
//	                  "slow cancelled" to stderr and return the context error
//	change_tools      remove tool_0 and add tool_new; the SDK then sends
//	                  notifications/tools/list_changed (debounced, so after the
//	                  result, while a following tools/list already sees the change)
//
// With -echo-meta:
//
//	echo_meta         the request's _meta as this server received it, as JSON
//	                  text and structured {"meta": ...}: null when the request
//	                  had no _meta, {} when it had an empty one. A progress token
//	                  that starts with "agentctl-" is shown as "agentctl-*" (its
//	                  number differs by path and call); any other is shown as is
//
// With -misbehave:
//
//	truncate_answer   its answer is cut short: the line ends (with a newline)
//	                  in the middle of the result, after the id
//	garbage_line      writes a cut-short notification line (no id) before
//	                  answering "garbage written" as usual
//	big {bytes}       a text result of that many bytes of "x"
//	rpc_error {code}  a JSON-RPC error answer with that code, message
//	                  "upstream error CODE" and data {"detail":"kept"}
//	hang              answers only when the call is cancelled: logs
//	                  "hang cancelled" to stderr and returns the context error
//	numbers {meta}    structured {"big":12345678901234567890,"huge":1e400,
//	                  "tenth":0.1,"sum":0.30000000000000004}, written as is;
//	                  with "meta": true also a _meta member (a result the
//	                  fast lane cannot relay as written)
//	pid               its process id, as text
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	var (
		nTools      = flag.Int("tools", 3, "number of tool_i tools")
		page2       = flag.Bool("page2", false, "use a list page size of 2")
		stderrText  = flag.String("stderr", "", "text to write to stderr at start")
		pidFile     = flag.String("pidfile", "", "file to write the process id to")
		exitAtStart = flag.Bool("exit-at-start", false, "exit with code 2 at start")
		flagFile    = flag.String("flag-file", "", "exit with code 2 at start if this file exists")
		hangStart   = flag.Bool("hang-start", false, "never answer initialize")
		crashAfter  = flag.Int("crash-after", 0, "exit with code 3 on the N-th tools/call")
		echoMeta    = flag.Bool("echo-meta", false, "register echo_meta")
		misbehave   = flag.Bool("misbehave", false, "register the misbehaving tools")
	)
	flag.Parse()

	if *stderrText != "" {
		fmt.Fprintln(os.Stderr, *stderrText)
	}
	if *pidFile != "" {
		if err := os.WriteFile(*pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "upstream:", err)
			os.Exit(1)
		}
	}
	delayStart() // delay_flags.go
	if *flagFile != "" {
		if _, err := os.Stat(*flagFile); err == nil {
			*exitAtStart = true
		}
	}
	if *exitAtStart {
		os.Exit(2)
	}
	if *hangStart {
		// Swallow everything until stdin closes; SIGTERM keeps its default
		// action (terminate).
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}

	opts := &mcp.ServerOptions{}
	if *page2 {
		opts.PageSize = 2
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1.0.0"}, opts)
	if *crashAfter > 0 {
		server.AddReceivingMiddleware(crashAfterMiddleware(*crashAfter))
	}
	for i := range *nTools {
		addNumberedTool(server, fmt.Sprintf("tool_%d", i))
	}
	if *craftFile != "" {
		server.AddReceivingMiddleware(craftTokens) // lane_flags.go
	}
	addSpecialTools(server)
	addNamedTools(server) // tools_flags.go
	if *echoMeta {
		addEchoMeta(server)
	}
	var transport mcp.Transport = &mcp.StdioTransport{}
	if *misbehave {
		out := &cutter{w: os.Stdout}
		addMisbehaving(server, out)
		transport = &mcp.IOTransport{Reader: os.Stdin, Writer: out}
	}

	if err := server.Run(context.Background(), transport); err != nil {
		fmt.Fprintln(os.Stderr, "upstream:", err)
		os.Exit(1)
	}
}

// crashAfterMiddleware exits the process with code 3 on the n-th tools/call.
func crashAfterMiddleware(n int) mcp.Middleware {
	var calls atomic.Int64
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" && calls.Add(1) == int64(n) {
				fmt.Fprintf(os.Stderr, "upstream: crashing on call %d\n", n)
				os.Exit(3)
			}
			return next(ctx, method, req)
		}
	}
}

type textIn struct {
	Text string `json:"text,omitempty" jsonschema:"text to include in the result"`
}

type toolOut struct {
	Tool string `json:"tool"`
	Text string `json:"text"`
}

// addNumberedTool adds a tool named name that answers "name: <text>".
func addNumberedTool(s *mcp.Server, name string) {
	mcp.AddTool(s, &mcp.Tool{Name: name, Description: "Numbered test tool " + name + "."},
		func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, toolOut, error) {
			return textResult(name + ": " + in.Text), toolOut{Tool: name, Text: in.Text}, nil
		})
}

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type echoOut struct {
	Text string `json:"text"`
}

type slowIn struct {
	MS int `json:"ms"`
}

var slowSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"ms": map[string]any{"type": "integer", "description": "duration in milliseconds"},
	},
}

// emptyObject is the input schema of tools without arguments.
var emptyObject = map[string]any{"type": "object"}

func addSpecialTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{
		Name:        "echo",
		Title:       "Echo",
		Description: "Echo the text back.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
		return textResult(in.Text), echoOut(in), nil
	})

	s.AddTool(&mcp.Tool{Name: "fail", Description: "Always fails with a tool error.", InputSchema: emptyObject},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res := textResult("upstream says no")
			res.IsError = true
			return res, nil
		})

	s.AddTool(&mcp.Tool{Name: "crash", Description: "Exits the server with code 3 before answering.", InputSchema: emptyObject},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "upstream: crash tool called")
			os.Exit(3)
			return nil, nil
		})

	// slow is a raw handler so that a cancellation is returned as a protocol
	// error rather than as an isError result.
	s.AddTool(&mcp.Tool{Name: "slow", Description: "Takes ms milliseconds, reporting progress every 50ms.", InputSchema: slowSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in slowIn
			if len(req.Params.Arguments) > 0 {
				if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
					return nil, err
				}
			}
			if err := slow(ctx, req, time.Duration(in.MS)*time.Millisecond); err != nil {
				return nil, err
			}
			return textResult(fmt.Sprintf("slow: done after %dms", in.MS)), nil
		})

	s.AddTool(&mcp.Tool{Name: "change_tools", Description: "Removes tool_0 and adds tool_new.", InputSchema: emptyObject},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// The SDK sends notifications/tools/list_changed 10ms after the
			// last change, i.e. after this result has been written.
			s.RemoveTools("tool_0")
			addNumberedTool(s, "tool_new")
			return textResult("tools changed"), nil
		})
}

// slow waits for d, sending a progress notification every 50ms if the request
// carries a progress token. It returns ctx.Err() if ctx is cancelled first.
func slow(ctx context.Context, req *mcp.CallToolRequest, d time.Duration) error {
	done := time.NewTimer(d)
	defer done.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	token := req.Params.GetProgressToken()
	total := float64(d / (50 * time.Millisecond))
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			fmt.Fprintln(os.Stderr, "slow cancelled")
			return ctx.Err()
		case <-done.C:
			return nil
		case <-tick.C:
			if token == nil {
				continue
			}
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token,
				Progress:      float64(n),
				Total:         total,
				Message:       fmt.Sprintf("slow: %d", n),
			})
			if err != nil {
				fmt.Fprintln(os.Stderr, "upstream: progress:", err)
			}
		}
	}
}

// addEchoMeta adds echo_meta, which answers with the _meta it received.
func addEchoMeta(s *mcp.Server) {
	s.AddTool(&mcp.Tool{Name: "echo_meta", Description: "Returns the request's _meta as received.", InputSchema: emptyObject},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			meta := req.Params.Meta
			if tok, ok := meta["progressToken"].(string); ok && strings.HasPrefix(tok, "agentctl-") {
				meta = maps.Clone(meta)
				meta["progressToken"] = "agentctl-*"
			}
			text, err := json.Marshal(meta)
			if err != nil {
				return nil, err
			}
			res := textResult(string(text))
			res.StructuredContent = map[string]any{"meta": meta}
			return res, nil
		})
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// cutMarker in a message makes cutter end its line just before it.
const cutMarker = "CUT-THIS-LINE-HERE"

// cutter is the server's stdout with -misbehave: it cuts short a message
// holding cutMarker, and writes raw lines between messages.
type cutter struct {
	mu sync.Mutex
	w  io.Writer
}

func (c *cutter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i := bytes.Index(p, []byte(cutMarker)); i >= 0 {
		if _, err := c.w.Write(append(p[:i:i], '\n')); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.w.Write(p)
}

// raw writes line as it is, between two messages.
func (c *cutter) raw(line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	io.WriteString(c.w, line)
}

func (c *cutter) Close() error { return nil }

type bigIn struct {
	Bytes int `json:"bytes"`
}

type codeIn struct {
	Code int64 `json:"code"`
}

func addMisbehaving(s *mcp.Server, out *cutter) {
	s.AddTool(&mcp.Tool{Name: "truncate_answer", Description: "Its answer's line is cut short.", InputSchema: emptyObject},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("this answer is " + cutMarker + " cut short"), nil
		})
	s.AddTool(&mcp.Tool{Name: "garbage_line", Description: "Writes a cut-short line, then answers.", InputSchema: emptyObject},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			out.raw(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","da` + "\n")
			return textResult("garbage written"), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "A text result of the given size."},
		func(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
			return textResult(strings.Repeat("x", in.Bytes)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "rpc_error", Description: "A JSON-RPC error answer with the given code."},
		func(_ context.Context, _ *mcp.CallToolRequest, in codeIn) (*mcp.CallToolResult, any, error) {
			return nil, nil, &jsonrpc.Error{Code: in.Code, Message: fmt.Sprintf("upstream error %d", in.Code), Data: json.RawMessage(`{"detail":"kept"}`)}
		})
	s.AddTool(&mcp.Tool{Name: "hang", Description: "Never answers.", InputSchema: emptyObject},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			fmt.Fprintln(os.Stderr, "hang cancelled")
			return nil, ctx.Err()
		})
	s.AddTool(&mcp.Tool{Name: "numbers", Description: "Structured numbers a float64 cannot hold.", InputSchema: emptyObject},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res := textResult("numbers")
			res.StructuredContent = json.RawMessage(`{"big":12345678901234567890,"huge":1e400,"tenth":0.1,"sum":0.30000000000000004}`)
			var args struct{ Meta bool }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			if args.Meta {
				res.Meta = mcp.Meta{"note": "kept"}
			}
			return res, nil
		})
	s.AddTool(&mcp.Tool{Name: "pid", Description: "The server's process id.", InputSchema: emptyObject},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult(strconv.Itoa(os.Getpid())), nil
		})
}
