package proxy

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/mcpserver/mount"
)

func secretServer() *Server {
	m := mount.Resolved{Mount: mount.Mount{Kind: mount.KindServer, Name: "remote",
		URL: "http://plantedUser:plantedPassword@127.0.0.1:9/mcp?key=plantedKey&k2=plantedKey2", Headers: map[string]string{"Authorization": "Bearer plantedToken"}}}
	return NewPool([]mount.Resolved{m}, &reconciles{}, Options{}).Servers()[0]
}

// TestScrubTakesEveryFormOfTheSecretsOut: the forms in which net/http,
// go-sdk and a careless server quote a URL and a header.
func TestScrubTakesEveryFormOfTheSecretsOut(t *testing.T) {
	t.Parallel()
	s := secretServer()
	for _, text := range []string{
		`Post "http://plantedUser:***@127.0.0.1:9/mcp?key=plantedKey&k2=plantedKey2": dial tcp 127.0.0.1:9: connect: connection refused`,
		`dial http://plantedUser:plantedPassword@127.0.0.1:9/mcp?key=plantedKey&k2=plantedKey2 failed`,
		`401: you sent Bearer plantedToken with key=plantedKey and plantedPassword`,
		`just the token: plantedToken, just a value: plantedKey2`,
	} {
		got := s.scrub(errors.New(text)).Error()
		if strings.Contains(got, "planted") {
			t.Errorf("scrub(%q) = %q", text, got)
		}
	}
	if got := s.scrub(errors.New(`Post "http://plantedUser:***@127.0.0.1:9/mcp?key=plantedKey&k2=plantedKey2": EOF`)).Error(); got != `Post "http://redacted@127.0.0.1:9/mcp?redacted": EOF` {
		t.Errorf("the URL should stay readable, redacted: %q", got)
	}
	if s.scrub(nil) != nil {
		t.Error("scrub(nil) is not nil")
	}
}

// TestScrubTakesAPathKeyOut: a hosted server's key in the URL's path
// (/api/mcp/s/KEY/mcp) reached the model in get_instance's errors.
func TestScrubTakesAPathKeyOut(t *testing.T) {
	t.Parallel()
	m := mount.Resolved{Mount: mount.Mount{Kind: mount.KindServer, Name: "zap", URL: "http://127.0.0.1:9/api/mcp/s/sk-ak-plantedKey123/mcp"}}
	s := NewPool([]mount.Resolved{m}, &reconciles{}, Options{}).Servers()[0]
	got := s.scrub(errors.New(`Post "http://127.0.0.1:9/api/mcp/s/sk-ak-plantedKey123/mcp": dial tcp 127.0.0.1:9: connect: connection refused; the key sk-ak-plantedKey123 again`)).Error()
	if got != `Post "http://127.0.0.1:9/api/mcp/s/redacted/mcp": dial tcp 127.0.0.1:9: connect: connection refused; the key redacted again` {
		t.Errorf("scrub: %q", got)
	}
}

// TestRedactLoggerScrubsMessagesAndAttributes: what go-sdk logs of a
// server's session (messages quoting the URL, error attributes) is
// scrubbed, whatever the attribute's kind.
func TestRedactLoggerScrubsMessagesAndAttributes(t *testing.T) {
	t.Parallel()
	s := secretServer()
	var buf bytes.Buffer
	l := s.redactLogger(slog.New(slog.NewTextHandler(&buf, nil))).With("url", s.mount.URL)
	raw := `Post "http://plantedUser:***@127.0.0.1:9/mcp?key=plantedKey&k2=plantedKey2": EOF`
	l.Warn("calling tools/call: "+raw, "error", errors.New(raw), slog.Group("g", "s", raw))
	if out := buf.String(); strings.Contains(out, "planted") || !strings.Contains(out, "redacted") {
		t.Fatalf("log: %s", out)
	}
}

// TestStdioServerTextsAreUnchanged: a stdio server has no URL to redact;
// its errors stay what they are (its environment is never logged).
func TestStdioServerTextsAreUnchanged(t *testing.T) {
	t.Parallel()
	s := NewPool([]mount.Resolved{server("local", "x")}, &reconciles{}, Options{}).Servers()[0]
	err := errors.New("exit status 1")
	if s.scrub(err) != err {
		t.Fatal("a stdio server's error was rewritten")
	}
}

// TestReportOutputIsLimited: a server that writes a log line to its stdout
// per request made a warning of each, on the endpoint's stderr and in the
// servers' log (59 MB in 4 s for `yes`); past reportBurst a window, the
// rest are counted and said in the next report.
func TestReportOutputIsLimited(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	s := NewPool([]mount.Resolved{server("local", "x")}, &reconciles{}, Options{Stderr: &log}).Servers()[0]
	for range 100 {
		s.reportOutput("line 1 of its output was a line that is not JSON")
	}
	if n := strings.Count(log.String(), "\n"); n != reportBurst {
		t.Fatalf("%d reports of 100 problems, want %d:\n%s", n, reportBurst, log.String())
	}
	if st := s.Status(); !strings.Contains(st.Error, "not JSON") {
		t.Errorf("the status keeps the latest problem: %+v", st)
	}

	var l reportLimit
	t0 := time.Unix(0, 0)
	for i := range reportBurst + 5 {
		if ok, _ := l.take(t0.Add(time.Duration(i) * time.Millisecond)); ok != (i < reportBurst) {
			t.Fatalf("problem %d reported %v", i, ok)
		}
	}
	if ok, skipped := l.take(t0.Add(reportWindow)); !ok || skipped != 5 {
		t.Fatalf("the next window's first report: %v, %d skipped; want true, 5", ok, skipped)
	}
}
