package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestScripts runs the end-to-end scripts in testdata/script/*.txtar. Each
// script runs `exec agentctl ...` (this test binary, see TestMain) in its own
// $WORK with HOME and the XDG directories inside it and no AGENTCTL_*
// variable from the outer environment.
//
// Custom commands, for what testscript cannot say by itself:
//
//	exits N CMD [ARGS...]
//	    run CMD like exec and require exit code N (0 included); stdout and
//	    stderr are kept for the stdout/stderr commands that follow.
//	json [-in FILE] PATH WANT
//	    the JSON value at PATH in the last stdout (or FILE) equals WANT.
//	    PATH is jq-like: .id, .capabilities.tool_names.namespacing, .[0].id,
//	    .mcpServers.agentctl.args[1]; a trailing |length gives the length of
//	    an array, object or string. A string value is compared as is, any
//	    other value as compact JSON (true, 64, ["a","b"]). With !, the value
//	    differs from WANT or is absent.
//	perm FILE MODE
//	    FILE's permission bits are MODE, in octal (600); with !, they are not.
//	setenvjson NAME PATH [FILE]
//	    set the environment variable NAME to the JSON value at PATH in the last
//	    stdout (or FILE), as json compares it.
//	entries N DIR
//	    DIR holds exactly N entries, hidden ones included.
//	commonprefix NAME A B
//	    set NAME to the longest common prefix of A and B; fails if it is empty
//	    or is A or B itself.
//	waitmatch FILE PATTERN
//	    wait until FILE exists and its content matches the regular expression
//	    PATTERN: a way to synchronise with a command running in the background
//	    (give up after a minute, far beyond any machine's slowness).
//	askquestion INSTANCE TEXT [CHOICE...]
//	reportprogress INSTANCE STATUS MESSAGE [PERCENT]
//	    do in the store what the endpoint's ask_user_question and
//	    report_progress tools do (Store.AskQuestion, Store.RecordProgress), so
//	    scripts can test the CLI side (questions, answer, events, wait) without
//	    an MCP client; the round trip through the endpoint is the job of the
//	    tests that drive the real binary with an MCP client. The store is $AGENTCTL_STATE_DIR if set, else
//	    $XDG_STATE_HOME/agentctl; INSTANCE is anything `instance show` takes.
//
// $TSCLIENT_NODE is node and $EVERYTHING the reference server
// @modelcontextprotocol/server-everything (start it with "stdio");
// $UPSTREAM is the test upstream (testdata/upstream, flags in its doc).
//
//	mcp INSTANCE STEP...
//	    drive `agentctl mcp serve --instance INSTANCE` with the TypeScript MCP
//	    client (testdata/tsclient). STEP is "list", "instructions" or "call
//	    NAME JSON-ARGS" (call takes the next two words). stdout gets one line
//	    per result: "tool NAME" per listed tool, "instructions TEXT" (the
//	    initialize instructions), "result NAME JSON", "iserror NAME TEXT",
//	    "error NAME CODE MESSAGE"; stderr gets the endpoint's stderr.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("..", "..", "testdata", "script"),
		// Under the test's own folder: testscript's default folder in
		// TMPDIR is left behind, empty, when -run picks some scripts.
		WorkdirRoot:         t.TempDir(),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			node, client := tsClientPaths()
			env.Setenv("TSCLIENT_NODE", node)
			env.Setenv("TSCLIENT", client)
			// The reference MCP server, an external server for scripts.
			env.Setenv("EVERYTHING", filepath.Join(filepath.Dir(client), "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
			// The test upstream (testdata/upstream), built by TestMain.
			if b := builds["server"]; b != nil {
				<-b.done
				if b.err != nil {
					return fmt.Errorf("go build testdata/upstream: %v\n%s", b.err, b.out)
				}
				env.Setenv("UPSTREAM", b.path)
			}
			home := filepath.Join(env.WorkDir, "home")
			if err := os.MkdirAll(home, 0o755); err != nil {
				return err
			}
			env.Setenv("HOME", home)
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
			env.Setenv("XDG_STATE_HOME", filepath.Join(env.WorkDir, ".state"))
			for _, k := range []string{
				"AGENTCTL_STATE_DIR", "AGENTCTL_AGENTS_DIR", "AGENTCTL_SERVER_NAME",
				"AGENTCTL_LOG_LEVEL", "AGENTCTL_QUESTION_TIMEOUT", "AGENTCTL_CONFIG",
				"NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE",
			} {
				env.Setenv(k, "")
			}
			// Under -race every successful agentctl would sleep a second at
			// exit; races are still reported (exit 66) without the sleep.
			if os.Getenv("GORACE") == "" {
				env.Setenv("GORACE", "atexit_sleep_ms=10")
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":          cmdExits,
			"json":           cmdJSON,
			"setenvjson":     cmdSetenvJSON,
			"entries":        cmdEntries,
			"commonprefix":   cmdCommonPrefix,
			"waitmatch":      cmdWaitMatch,
			"mcp":            cmdMCP,
			"askquestion":    cmdAskQuestion,
			"reportprogress": cmdReportProgress,
			"perm":           cmdPerm,
		},
	})
}

// cmdPerm is `perm FILE MODE`: FILE's permission bits are MODE (octal).
func cmdPerm(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: perm FILE MODE")
	}
	fi, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	got := fmt.Sprintf("%o", fi.Mode().Perm())
	if (got == args[1]) == neg {
		ts.Fatalf("%s has mode %s (want %s%s)", args[0], got, map[bool]string{true: "anything but ", false: ""}[neg], args[1])
	}
}

func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exits (say which code you expect)")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exits N CMD [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad code %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}

// jsonSource reads the JSON document a command looks at: FILE, else stdout.
func jsonSource(ts *testscript.TestScript, file string) any {
	name := "stdout"
	if file != "" {
		name = file
	}
	var v any
	if err := json.Unmarshal([]byte(ts.ReadFile(name)), &v); err != nil {
		ts.Fatalf("%s is not JSON: %v", name, err)
	}
	return v
}

// jsonAt evaluates a jq-like PATH: .a.b, .[0], .a[2].b, optionally |length.
func jsonAt(v any, path string) (any, error) {
	p, length := strings.CutSuffix(path, "|length")
	if !strings.HasPrefix(p, ".") {
		return nil, fmt.Errorf("path %q must start with '.'", path)
	}
	rest := p[1:]
	for rest != "" {
		switch {
		case rest[0] == '.':
			rest = rest[1:]
		case rest[0] == '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, fmt.Errorf("path %q: missing ']'", path)
			}
			i, err := strconv.Atoi(rest[1:end])
			if err != nil {
				return nil, fmt.Errorf("path %q: bad index %q", path, rest[1:end])
			}
			a, ok := v.([]any)
			if !ok || i < 0 || i >= len(a) {
				return nil, fmt.Errorf("no element [%d] in %s", i, path)
			}
			v, rest = a[i], rest[end+1:]
		default:
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("no key %q in %s: not an object", rest[:end], path)
			}
			if v, ok = m[rest[:end]]; !ok {
				return nil, fmt.Errorf("no key %q in %s", rest[:end], path)
			}
			rest = rest[end:]
		}
	}
	if length {
		switch x := v.(type) {
		case []any:
			return float64(len(x)), nil
		case map[string]any:
			return float64(len(x)), nil
		case string:
			return float64(len(x)), nil
		}
		return nil, fmt.Errorf("%s has no length", p)
	}
	return v, nil
}

// jsonText is how json compares a value: a string as is, else compact JSON.
func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func cmdJSON(ts *testscript.TestScript, neg bool, args []string) {
	file := ""
	if len(args) > 0 && args[0] == "-in" {
		if len(args) < 2 {
			ts.Fatalf("usage: json [-in FILE] PATH WANT")
		}
		file, args = args[1], args[2:]
	}
	if len(args) != 2 {
		ts.Fatalf("usage: json [-in FILE] PATH WANT")
	}
	v, err := jsonAt(jsonSource(ts, file), args[0])
	if err != nil {
		if neg {
			return
		}
		ts.Fatalf("%v", err)
	}
	got := jsonText(v)
	switch {
	case !neg && got != args[1]:
		ts.Fatalf("%s is %s, want %s", args[0], got, args[1])
	case neg && got == args[1]:
		ts.Fatalf("%s is %s, want anything else", args[0], got)
	}
}

func cmdSetenvJSON(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: setenvjson NAME PATH [FILE]")
	}
	file := ""
	if len(args) == 3 {
		file = args[2]
	}
	v, err := jsonAt(jsonSource(ts, file), args[1])
	ts.Check(err)
	ts.Setenv(args[0], jsonText(v))
}

func cmdEntries(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: entries N DIR")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	des, err := os.ReadDir(ts.MkAbs(args[1]))
	ts.Check(err)
	if len(des) != want {
		names := make([]string, len(des))
		for i, d := range des {
			names[i] = d.Name()
		}
		ts.Fatalf("%s holds %d entries %q, want %d", args[1], len(des), names, want)
	}
}

func cmdCommonPrefix(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: commonprefix NAME A B")
	}
	a, b := args[1], args[2]
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	if n == 0 || n == len(a) || n == len(b) {
		ts.Fatalf("%q and %q have no common proper prefix", a, b)
	}
	ts.Setenv(args[0], a[:n])
}

// withScriptStore opens the store the script's agentctl uses and resolves ref.
func withScriptStore(ts *testscript.TestScript, ref string, fn func(context.Context, *instance.Store, *instance.Record) error) {
	dir := ts.Getenv("AGENTCTL_STATE_DIR")
	if dir == "" {
		dir = filepath.Join(ts.Getenv("XDG_STATE_HOME"), "agentctl")
	}
	ctx := context.Background()
	st, err := instance.Open(ctx, ts.MkAbs(dir))
	ts.Check(err)
	defer st.Close()
	rec, err := st.Get(ctx, ref)
	ts.Check(err)
	ts.Check(fn(ctx, st, rec))
}

func cmdAskQuestion(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: askquestion INSTANCE TEXT [CHOICE...]")
	}
	withScriptStore(ts, args[0], func(ctx context.Context, st *instance.Store, rec *instance.Record) error {
		_, err := st.AskQuestion(ctx, rec.ID, args[1], args[2:])
		return err
	})
}

func cmdReportProgress(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 || len(args) > 4 {
		ts.Fatalf("usage: reportprogress INSTANCE STATUS MESSAGE [PERCENT]")
	}
	var pct *float64
	if len(args) == 4 {
		p, err := strconv.ParseFloat(args[3], 64)
		ts.Check(err)
		pct = &p
	}
	withScriptStore(ts, args[0], func(ctx context.Context, st *instance.Store, rec *instance.Record) error {
		_, err := st.RecordProgress(ctx, rec.ID, "report_progress_"+rec.ServerName, args[1], args[2], pct)
		return err
	})
}

func cmdWaitMatch(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitmatch FILE PATTERN")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	name := ts.MkAbs(args[0])
	deadline := time.Now().Add(time.Minute)
	for {
		data, err := os.ReadFile(name)
		if err == nil && re.Match(data) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s did not match %q within a minute; it holds %q", args[0], args[1], data)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tsClientPaths finds node and the TypeScript client; a missing one makes
// the mcp command fail with a message saying what to install.
func tsClientPaths() (node, client string) {
	node, _ = exec.LookPath("node")
	client, _ = filepath.Abs(filepath.Join("..", "..", "testdata", "tsclient", "client.mjs"))
	return node, client
}

func cmdMCP(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! mcp")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: mcp INSTANCE STEP...")
	}
	node, client := ts.Getenv("TSCLIENT_NODE"), ts.Getenv("TSCLIENT")
	if node == "" {
		ts.Fatalf("node is not installed; the TypeScript MCP client needs Node.js")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(client), "node_modules")); err != nil {
		ts.Fatalf("testdata/tsclient/node_modules is missing: run `make deps` (npm ci)")
	}
	bin, err := exec.LookPath("agentctl")
	if err != nil {
		// testscript puts its commands on the script's PATH.
		for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
			if p := filepath.Join(dir, "agentctl"); fileExists(p) {
				bin = p
				break
			}
		}
	}
	if bin == "" {
		ts.Fatalf("agentctl not found on the script's PATH")
	}
	var steps []map[string]any
	for i := 1; i < len(args); i++ {
		switch args[i] {
		case "list", "instructions":
			steps = append(steps, map[string]any{"op": args[i]})
		case "call":
			if i+2 >= len(args) {
				ts.Fatalf("call needs NAME and JSON arguments")
			}
			var callArgs map[string]any
			if err := json.Unmarshal([]byte(args[i+2]), &callArgs); err != nil {
				ts.Fatalf("call %s: arguments: %v", args[i+1], err)
			}
			steps = append(steps, map[string]any{"op": "call", "name": args[i+1], "arguments": callArgs})
			i += 2
		default:
			ts.Fatalf("unknown step %q (list, instructions, call NAME JSON)", args[i])
		}
	}
	env := map[string]string{}
	for _, k := range []string{"HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "AGENTCTL_STATE_DIR", "AGENTCTL_CONFIG", "AGENTCTL_LOG_LEVEL", "GORACE"} {
		env[k] = ts.Getenv(k)
	}
	plan, _ := json.Marshal(map[string]any{
		"command": bin, "args": []string{"mcp", "serve", "--instance", args[0]},
		"env": env, "steps": steps, "format": "lines", "timeoutMs": 60000,
	})
	if err := ts.Exec(node, client, string(plan)); err != nil {
		ts.Fatalf("mcp client: %v", err)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
