// Command fakeclient behaves like a coding-agent client (Claude Code, Codex,
// Gemini CLI, ...) for the tests of `agentctl instance run`: it parses its
// arguments as that client's headless form does, finds its MCP configuration
// where that client would, starts the configured servers, lists their tools,
// calls one, and exits with a chosen code.
//
// Build it from the module root with
//
//	go build -o /tmp/fakeclient ./testdata/fakeclient
//
// and install it under a client's program name (a symlink or copy in a
// directory put first on PATH). It picks the client from the base name of
// os.Args[0]; FAKECLIENT_AS=claude overrides that. Its own test builds it
// once in TestMain; `go test ./...` skips testdata, so run that test as
// `go test ./testdata/fakeclient`.
//
// # Argument forms and configuration
//
// The flags each client accepts are in the table in clients.go; any other
// flag is a usage error (message on stderr, exit 2), as with the real
// program. The prompt is printed first, as `fakeclient: prompt=<prompt>`
// (empty when none was given). A run is headless when it has the headless
// flag or subcommand below; otherwise it is the client's interactive form
// (same session; no permission checks, as if a person confirmed each call).
//
//	auggie --print --dont-save-session -i PROMPT --mcp-config FILE
//	    FILE (or inline JSON): {"mcpServers": {S: {command, args, env}}}
//	claude -p PROMPT --mcp-config FILE --strict-mcp-config
//	       [--allowedTools LIST] [--permission-mode MODE]
//	    -p is a switch and PROMPT a positional argument; --mcp-config and
//	    --allowedTools take every following argument up to the next flag, as
//	    in the real program (so `--allowedTools X PROMPT` eats PROMPT).
//	    Same JSON as auggie; without --strict-mcp-config ./.mcp.json is read
//	    too. In a -p run a call of mcp__S__T is denied ("permission denied",
//	    a failed call) unless --permission-mode bypassPermissions,
//	    --dangerously-skip-permissions, or an --allowedTools entry (split at
//	    commas and spaces) is mcp__S, mcp__S__T, or a prefix ending in "*"
//	    that covers mcp__S__T. MCP_TOOL_TIMEOUT is recorded.
//	codex exec --skip-git-repo-check [-c key=value]... PROMPT
//	    $CODEX_HOME/config.toml (default $HOME/.codex; missing = empty), then
//	    each -c applied in order: the key a dotted path, the value TOML (a
//	    string if it does not parse as TOML). Servers: [mcp_servers.S] with
//	    command, args, env, tool_timeout_sec, enabled. Without
//	    --skip-git-repo-check, exec refuses a directory outside a git work
//	    tree (exit 1).
//	gemini -p PROMPT
//	    $GEMINI_CLI_SYSTEM_SETTINGS_PATH merged over ./.gemini/settings.json
//	    (the system file wins per server name): {"mcpServers": {S: {command,
//	    args, env, trust, timeout}}}. In a -p run a server without
//	    "trust": true has its tools ignored (tools=0 and an error).
//	qwen -p PROMPT
//	    as gemini, with $QWEN_CODE_SYSTEM_SETTINGS_PATH and ./.qwen/settings.json
//	opencode run PROMPT, kilo run PROMPT
//	    $OPENCODE_CONFIG, else ./opencode.json: {"mcp": {S: {"type": "local",
//	    "command": [cmd, args...], "environment": {...}, "enabled", "timeout"}}}
//	copilot -p PROMPT --allow-all-tools --additional-mcp-config @FILE
//	    @FILE or inline JSON: {"mcpServers": {S: {type, command, args, env,
//	    tools}}}; type must be "local" or "stdio" and tools must hold "*" or
//	    the tool's name. In a -p run calls are denied unless --allow-all-tools
//	    or --allow-tool S (or S(T)).
//	cn [--config FILE] [--mcp FILE]... --auto -p PROMPT
//	    --mcp adds a block file's servers to the configuration, as cn
//	    does (agentctl passes its file so, keeping the user's own
//	    config.yaml and its models). Each FILE is YAML; only the shape
//	    agentctl writes is read (see yaml.go):
//	    top-level "key: value" lines and "mcpServers:" followed by items
//	    "  - name: X" with "command: X" and "args: [..]" (scalars plain or
//	    JSON-quoted, lists and maps in JSON flow form). In a -p run calls are
//	    denied without --auto.
//	droid exec PROMPT
//	    ./.factory/mcp.json {"mcpServers": {S: {command, args, env, disabled}}}
//	grok -p PROMPT
//	    ./.grok/settings.json {"mcpServers": {S: {name, transport: {type:
//	    "stdio", command, args, env}}}}
//
// Every client also accepts --model (and -m where the real one does).
// A configuration file that exists but does not parse, or names a server
// without a command, is an error (stderr, exit 1).
//
// # Session
//
// Servers are taken in name order. For each: start it (command, args, env
// added to the inherited environment) with the go-sdk client, initialize,
// tools/list, then call the tool named by FAKECLIENT_CALL (its name as
// listed) or else the first whose name starts with "get_instance", with the
// arguments in FAKECLIENT_ARGS (a JSON object; default {}). A result with
// isError is a failed call. Output, one line per server:
//
//	fakeclient: <client> server=<S> tools=<n> called=<tool> ok
//	fakeclient: <client> server=<S> tools=<n> called=<tool> error=<msg>
//
// (called=- when nothing was called), and `fakeclient: <client> servers=0`
// when none is configured, which counts as a failure.
//
// # Environment
//
//	FAKECLIENT_AS       the client to be, instead of the program name
//	FAKECLIENT_REPORT   write a JSON report there (see report in session.go):
//	                    client, args, headless, prompt, cwd, the environment
//	                    values of AGENTCTL_INSTANCE, CODEX_HOME,
//	                    MCP_TOOL_TIMEOUT, OPENCODE_CONFIG, KILO_CONFIG,
//	                    GEMINI_CLI_SYSTEM_SETTINGS_PATH and
//	                    QWEN_CODE_SYSTEM_SETTINGS_PATH, codex_home (the one
//	                    used), the configuration files read, and per server
//	                    name, command, args, timeout as configured (codex
//	                    seconds, others milliseconds), trust, tools listed,
//	                    called, result (first 200 bytes) and error
//	FAKECLIENT_CALL     the tool to call (default: first get_instance*)
//	FAKECLIENT_ARGS     its arguments, a JSON object (default {})
//	FAKECLIENT_WAIT     "signal": after the session print "fakeclient: waiting"
//	                    and block until SIGINT or SIGTERM; "ignore-term": the
//	                    same, ignoring SIGTERM (as some clients do), so that
//	                    only SIGINT or SIGKILL ends it
//	FAKECLIENT_STDIN    "echo": after the session copy each stdin line to
//	                    stdout as "fakeclient: stdin=<line>" until EOF
//	FAKECLIENT_ELICIT   "decline" or "cancel": announce MCP elicitation and
//	                    answer each at once so (as Codex and Claude Code do
//	                    headless); "accept:TEXT": accept with answer TEXT
//	FAKECLIENT_REWRITE  non-empty: write each JSON configuration file read
//	                    back, mode 0644 (as Qwen Code and Cline do)
//	FAKECLIENT_EXIT     the exit code (default 0, or 3 after any failed
//	                    server start, list or call)
//	FAKECLIENT_SESSION  "skip": read the configuration, start no server (for
//	                    the benchmark of the client's own start)
//	FAKECLIENT_TIMEOUT  bound on the session, and again on each wait (Go
//	                    duration or seconds; default 30s)
//
// # Exit codes
//
// 0 success; 1 configuration unreadable; 2 usage; 3 a server failed (unless
// FAKECLIENT_EXIT is set, which then decides); 124 FAKECLIENT_TIMEOUT passed
// while waiting; 130 on SIGINT and 143 on SIGTERM at any time, after printing
// "fakeclient: got SIGINT" (or SIGTERM).
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

func main() {
	os.Exit(run())
}

func run() int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sigs
		code, name := 130, "SIGINT"
		if s == syscall.SIGTERM {
			code, name = 143, "SIGTERM"
		}
		fmt.Printf("fakeclient: got %s\n", name)
		os.Exit(code)
	}()

	name := os.Getenv("FAKECLIENT_AS")
	if name == "" {
		name = filepath.Base(os.Args[0])
	}
	c, ok := clients[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "fakeclient: no client %q (install it as one of %s, or set FAKECLIENT_AS)\n", name, clientNames())
		return 2
	}
	inv, err := parseArgs(name, c, os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 2
	}
	timeout := envDuration("FAKECLIENT_TIMEOUT", 30*time.Second)
	fmt.Printf("fakeclient: prompt=%s\n", inv.prompt)

	rep := newReport(inv)
	servers, err := c.load(inv)
	rep.Configs = inv.configs
	rep.CodexHome = inv.codexHome
	if err != nil {
		rep.Error = err.Error()
		writeReport(rep)
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	failed := false
	if os.Getenv("FAKECLIENT_SESSION") != "skip" {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		failed = session(ctx, inv, c, servers)
		cancel()
	}
	rep.Servers = servers
	writeReport(rep)

	switch {
	case os.Getenv("FAKECLIENT_WAIT") == "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("fakeclient: waiting")
		time.Sleep(timeout)
		fmt.Println("fakeclient: no signal within FAKECLIENT_TIMEOUT")
		return 124
	case os.Getenv("FAKECLIENT_WAIT") == "signal":
		fmt.Println("fakeclient: waiting")
		time.Sleep(timeout) // the signal handler exits
		fmt.Println("fakeclient: no signal within FAKECLIENT_TIMEOUT")
		return 124
	case os.Getenv("FAKECLIENT_STDIN") == "echo":
		if !echoStdin(timeout) {
			fmt.Println("fakeclient: stdin still open after FAKECLIENT_TIMEOUT")
			return 124
		}
	}
	if s, ok := os.LookupEnv("FAKECLIENT_EXIT"); ok {
		code, err := strconv.Atoi(s)
		if err != nil {
			fmt.Fprintf(os.Stderr, "fakeclient: FAKECLIENT_EXIT=%q is not a number\n", s)
			return 2
		}
		return code
	}
	if failed {
		return 3
	}
	return 0
}

// echoStdin copies stdin lines to stdout until EOF; false if timeout passed
// first.
func echoStdin(timeout time.Duration) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			fmt.Printf("fakeclient: stdin=%s\n", sc.Text())
		}
	}()
	select {
	case <-done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// envDuration reads a Go duration or a number of seconds from env key.
func envDuration(key string, def time.Duration) time.Duration {
	s := os.Getenv(key)
	if s == "" {
		return def
	}
	if d, err := time.ParseDuration(s); err == nil {
		return d
	}
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(n * float64(time.Second))
	}
	fmt.Fprintf(os.Stderr, "fakeclient: %s=%q is not a duration; using %v\n", key, s, def)
	return def
}
