package main

import (
	"strings"
	"testing"
)

// TestInvalidMCPHeaderHidesItsValue: an --mcp-header that cannot be used
// is reported by which part is wrong, with the server's name and the
// header's key, never the value (a header's value is often a token).
func TestInvalidMCPHeaderHidesItsValue(t *testing.T) {
	t.Parallel()
	const secret = "plantedToken"
	for _, tc := range []struct {
		flag     string
		want     []string
		mustMiss []string
	}{
		{"remote Authorization=Bearer " + secret, []string{"no server NAME before a ':'"}, nil},
		{":Authorization=Bearer " + secret, []string{"no server NAME before a ':'"}, nil},
		{"Authorization=Bearer:" + secret, []string{"not a server NAME"}, []string{"Authorization"}},
		{"remote:Authorization Bearer " + secret, []string{`for "remote"`, "no '='"}, nil},
		{"remote:=Bearer " + secret, []string{`for "remote"`, "empty header key"}, nil},
		{"other:Authorization=Bearer " + secret, []string{`for "other"`, `"Authorization"`, "no MCP server \"other\" with a URL"}, nil},
	} {
		f := mountFlags{mcps: []string{"remote=https://h.example/mcp"}, headers: []string{tc.flag}}
		_, err := f.mounts(nil)
		if err == nil {
			t.Errorf("%q: accepted", tc.flag)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, secret) || strings.Contains(msg, "Bearer") {
			t.Errorf("%q: the error shows the value: %s", tc.flag, msg)
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%q: the error %q does not say %q", tc.flag, msg, w)
			}
		}
		for _, w := range tc.mustMiss {
			if strings.Contains(msg, w) {
				t.Errorf("%q: the error %q shows %q", tc.flag, msg, w)
			}
		}
	}
	f := mountFlags{mcps: []string{"remote=https://h.example/mcp"}, headers: []string{"remote:Authorization=Bearer " + secret}}
	ms, err := f.mounts(nil)
	if err != nil || ms[0].Headers["Authorization"] != "Bearer "+secret {
		t.Fatalf("a valid header: %v %+v", err, ms)
	}
}

// TestInvalidMCPHidesItsCommandLine: an --mcp value that cannot be split
// or has no name is reported without repeating the command line, whose
// arguments may hold a token.
func TestInvalidMCPHidesItsCommandLine(t *testing.T) {
	t.Parallel()
	const secret = "plantedToken"
	for _, tc := range []struct{ flag, want string }{
		{`web=server --token ` + secret + ` "unterminated`, `invalid --mcp for "web"`},
		{`server --token ` + secret, `no NAME= before the command`},
		{`web=`, `no command after "web="`},
	} {
		_, err := parseMCPFlag(tc.flag)
		if err == nil {
			t.Errorf("%q: accepted", tc.flag)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, secret) || !strings.Contains(msg, tc.want) {
			t.Errorf("%q: error %q; want it to say %q and not show the token", tc.flag, msg, tc.want)
		}
	}
}
