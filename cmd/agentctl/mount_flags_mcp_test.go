package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/mcpserver/mount"
)

// TestMCPFlagOptions: --mcp takes ,prefix=P (and ,timeout=D,
// ,call_timeout=D) after the command, as --kb takes ,prefix=P; a comma in
// quotes or escaped belongs to the command; any other comma is refused
// with a message that says how to write it, never split off silently.
func TestMCPFlagOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		flag    string
		command string
		args    []string
		url     string
		prefix  string
		timeout time.Duration
		call    time.Duration
	}{
		{flag: "up=python3 server.py,prefix=u2", command: "python3", args: []string{"server.py"}, prefix: "u2"},
		{flag: "up=python3 server.py, prefix=u2", command: "python3", args: []string{"server.py"}, prefix: "u2"},
		{flag: "up=python3 server.py,tool_prefix=u2,timeout=30s,call_timeout=2m", command: "python3", args: []string{"server.py"}, prefix: "u2",
			timeout: 30 * time.Second, call: 2 * time.Minute},
		{flag: "up=srv --list 'a,b' \"c,d\" e\\,f", command: "srv", args: []string{"--list", "a,b", "c,d", "e,f"}},
		{flag: "up=srv --list 'a,b',prefix=p", command: "srv", args: []string{"--list", "a,b"}, prefix: "p"},
		{flag: "up=npx -y @playwright/mcp", command: "npx", args: []string{"-y", "@playwright/mcp"}},
		{flag: "api=https://mcp.example.com/mcp,prefix=api2", url: "https://mcp.example.com/mcp", prefix: "api2"},
		{flag: "api=https://mcp.example.com/mcp?f=a%2Cb", url: "https://mcp.example.com/mcp?f=a%2Cb"},
	} {
		m, err := parseMCPFlag(tc.flag)
		if err != nil {
			t.Errorf("%q: %v", tc.flag, err)
			continue
		}
		if m.Kind != mount.KindServer || m.Command != tc.command || !slices.Equal(m.Args, tc.args) || m.URL != tc.url || m.ToolPrefix != tc.prefix ||
			time.Duration(m.Timeout) != tc.timeout || time.Duration(m.CallTimeout) != tc.call {
			t.Errorf("%q: %+v", tc.flag, m)
		}
	}

	const secret = "plantedToken"
	for _, tc := range []struct{ flag, want string }{
		{"up=python3 server.py --token " + secret + ",b", `invalid --mcp for "up": a ',' outside quotes ends the command and starts the mount's options (,prefix=P ,timeout=D ,call_timeout=D), and what follows one is none of them (not shown); put a comma that belongs to the command in quotes ('a,b' or a\,b), write one of a URL as %2C, or give the server as JSON: --mcp-json up='{"command":"...","args":["..."],"tool_prefix":"..."}'`},
		{"up=python3 server.py,prefx=u2", "what follows one is none of them"},
		{"up=python3 server.py,prefix=u2," + secret, "what follows one is none of them"},
		{"api=https://h.example/mcp?a=1,2", "write one of a URL as %2C"},
		{"up=python3 server.py,prefix=", `invalid --mcp for "up": prefix= needs a value`},
		{"up=python3 server.py,timeout=soon", `invalid --mcp for "up": timeout="soon" is not a duration`},
		{"up=python3 server.py,call_timeout=0", `invalid --mcp for "up": call_timeout="0": use a duration above zero`},
		{"up=python3 server.py,timeout=-1s", `invalid --mcp for "up": timeout="-1s": use a duration above zero`},
		{"up=,prefix=u2", `invalid --mcp for "up": no command before the first ','`},
	} {
		_, err := parseMCPFlag(tc.flag)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error saying %q", tc.flag, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "server.py") {
			t.Errorf("%q: the error repeats the command line: %v", tc.flag, err)
		}
		if _, ok := err.(*usageError); !ok {
			t.Errorf("%q: %T, want a usage error", tc.flag, err)
		}
	}
}
