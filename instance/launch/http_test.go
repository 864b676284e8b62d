package launch

import (
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/agentctl/agentctl/instance"
)

const testToken = "agt_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

// httpRecord is testRecord reached over HTTP.
func httpRecord() *instance.Record {
	r := *testRecord
	r.Transport = instance.Transport{Kind: instance.TransportHTTP, URL: "http://127.0.0.1:7821/instances/" + r.ID + "/mcp"}
	return &r
}

// TestPlanCodexHTTP: an HTTP instance's Codex override is its own entry
// (the URL and the header, decoded by Codex's TOML as they were written),
// with the run's tool timeout; Redacted hides the token.
func TestPlanCodexHTTP(t *testing.T) {
	rec := httpRecord()
	own, err := instance.ClientEntry("codex", "agentctl", instance.ServerEntry{URL: rec.Transport.URL,
		Headers: map[string]string{"Authorization": instance.BearerHeader(testToken)}, ToolTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(catalogDef(t, "codex"), rec, Options{Mode: Headless, Prompt: "x", Entry: testEntry, OwnEntry: own, ToolTimeout: 11 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	want := `mcp_servers.agentctl={url = "` + rec.Transport.URL + `", http_headers = {Authorization = "Bearer ` + testToken + `"}, tool_timeout_sec = 660}`
	if p.Args[1] != want {
		t.Fatalf("override\n%s\nwant\n%s", p.Args[1], want)
	}
	var doc struct {
		MCPServers map[string]struct {
			URL     string            `toml:"url"`
			Headers map[string]string `toml:"http_headers"`
		} `toml:"mcp_servers"`
	}
	_, val, _ := strings.Cut(p.Args[1], "=")
	if _, err := toml.Decode("[mcp_servers]\nagentctl = "+val, &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.MCPServers["agentctl"]; got.URL != rec.Transport.URL || got.Headers["Authorization"] != "Bearer "+testToken {
		t.Errorf("override decodes as %+v", got)
	}
	red := p.Redacted()
	if line := red.CommandLine(); strings.Contains(line, testToken) || !strings.Contains(line, "Bearer <hidden>") {
		t.Errorf("redacted command line: %s", line)
	}
	if !strings.Contains(p.Args[1], testToken) {
		t.Error("Redacted changed the plan itself")
	}
}

// TestRedactedHidesTokens: a bearer credential or an instance token in any
// argument or environment value is hidden.
func TestRedactedHidesTokens(t *testing.T) {
	p := &Plan{Args: []string{"-H", "Authorization: Bearer abc.def", "--x=" + testToken}, Env: []EnvVar{{"HDR", "bearer xyz"}, {"URL", "http://h/?t=" + testToken}}}
	r := p.Redacted()
	got := r.CommandLine() + " " + r.Env[0].Value + " " + r.Env[1].Value
	for _, secret := range []string{"abc.def", testToken, "xyz"} {
		if strings.Contains(got, secret) {
			t.Errorf("%q not hidden: %s", secret, got)
		}
	}
}

// TestPlanGooseHTTPRefused: Goose's recipe adds the endpoint by command
// line, which cannot carry the token: refused, saying what to do.
func TestPlanGooseHTTPRefused(t *testing.T) {
	_, err := New(catalogDef(t, "goose"), httpRecord(), Options{Mode: Headless, Prompt: "x", Entry: testEntry})
	if err == nil || !strings.Contains(err.Error(), "cannot carry a header") || !strings.Contains(err.Error(), "--transport stdio") {
		t.Fatalf("goose over HTTP: %v", err)
	}
	if _, err := New(catalogDef(t, "goose"), testRecord, Options{Mode: Headless, Prompt: "x", Entry: testEntry}); err != nil {
		t.Fatalf("goose over stdio: %v", err)
	}
}
