package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestToolsListShowsAFailedServersStderr: `tools list` shows the last lines
// of a failed server's stderr: on a terminal under its row, made harmless
// (an escape sequence shows, and does nothing); piped, on stderr, so that
// stdout stays one row per line; with -o json, all of them in the
// server's stderr_tail. Its secrets are in none.
func TestToolsListShowsAFailedServersStderr(t *testing.T) {
	t.Parallel()
	const secret = "plantedStderrToken"
	spec := fmt.Sprintf(`web={"command":%q,"args":["-stderr-env","API_TOKEN","-stderr-quoted","\"\\x1b[31mred\\xff\\u202e!\\n\"","-stderr","fatal: no key","-exit-at-start"],"env":{"API_TOKEN":%q}}`,
		serverBin(t), secret)
	args := []string{"--agent", "claude-code", "--connect", "--mcp-json", spec}
	noSecret := func(f *testFactory) {
		t.Helper()
		if all := f.out.String() + f.errOut.String(); strings.Contains(all, secret) {
			t.Fatalf("the secret is shown:\n%s", all)
		}
	}

	t.Run("terminal", func(t *testing.T) {
		t.Parallel()
		f := newUnloadedTestFactory(t, "NO_COLOR=1")
		f.IOStreams.SetStdoutTTY(true)
		f.IOStreams.SetTerminalWidth(200)
		if err := runToolsList(t, f, args...); err != nil {
			t.Fatal(err)
		}
		out := f.out.String()
		// go-sdk may say "connection closed: " before the failed call.
		if !regexp.MustCompile(`server down: (connection closed: )?calling "initialize": `).MatchString(out) {
			t.Errorf("the table does not say the server is down, failing initialize:\n%s", out)
		}
		for _, want := range []string{"its stderr ended:", "  API_TOKEN=<redacted>", `  \x1b[31mred` + "\uFFFD" + `\u202e!`, "  fatal: no key"} {
			if !strings.Contains(out, want) {
				t.Errorf("the table lacks %q:\n%s", want, out)
			}
		}
		if strings.ContainsAny(out, "\x1b\u202e") {
			t.Errorf("the table holds a raw escape or bidi control:\n%q", out)
		}
		for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if w := ansi.StringWidth(l); w > 200 {
				t.Errorf("a line of %d columns on a terminal of 200: %q", w, l)
			}
		}
		noSecret(f)
	})
	t.Run("piped", func(t *testing.T) {
		t.Parallel()
		f := newUnloadedTestFactory(t)
		if err := runToolsList(t, f, args...); err != nil {
			t.Fatal(err)
		}
		// The server is gone before or after agentctl writes initialize:
		// EOF, or a broken pipe (go-sdk may say "connection closed: "
		// first).
		lines := strings.Split(strings.TrimSuffix(f.out.String(), "\n"), "\n")
		row := regexp.MustCompile(`^-\t-\t-\tmcp web\t-\t-\tserver down: (connection closed: )?calling "initialize": `)
		if !row.MatchString(lines[len(lines)-1]) || len(lines) != 4 {
			t.Errorf("stdout:\n%s\nwant the built-ins' rows, then one matching %s", f.out, row)
		}
		want := "mcp web: the last lines of its stderr:\n  API_TOKEN=<redacted>\n  \\x1b[31mred\uFFFD\\u202e!\n  fatal: no key\n"
		if !strings.Contains(f.errOut.String(), want) {
			t.Errorf("stderr:\n%s\nwant\n%s", f.errOut, want)
		}
		noSecret(f)
	})
	t.Run("json", func(t *testing.T) {
		t.Parallel()
		f := newUnloadedTestFactory(t)
		if err := runToolsList(t, f, append(args, "-o", "json")...); err != nil {
			t.Fatal(err)
		}
		var reports []struct {
			Servers []struct {
				State      string   `json:"state"`
				StderrTail []string `json:"stderr_tail"`
			} `json:"servers"`
		}
		if err := json.Unmarshal(f.out.Bytes(), &reports); err != nil || len(reports) != 1 || len(reports[0].Servers) != 1 {
			t.Fatalf("%v:\n%s", err, f.out)
		}
		st := reports[0].Servers[0]
		if want := []string{"API_TOKEN=<redacted>", "\x1b[31mred\uFFFD\u202e!", "fatal: no key"}; st.State != "down" || !slices.Equal(st.StderrTail, want) {
			t.Errorf("server %+v, want down with stderr_tail %q", st, want)
		}
		noSecret(f)
	})
}
