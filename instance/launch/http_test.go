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
// (the URL, decoded by Codex's TOML as it was written) with the run's tool
// timeout, and the token goes to Codex through an environment variable
// (bearer_token_env_var), never on the command line, where any local user
// could read it; Redacted hides it.
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
	want := `mcp_servers.agentctl={url = "` + rec.Transport.URL + `", bearer_token_env_var = "AGENTCTL_TOKEN", tool_timeout_sec = 660}`
	if p.Args[1] != want {
		t.Fatalf("override\n%s\nwant\n%s", p.Args[1], want)
	}
	var doc struct {
		MCPServers map[string]struct {
			URL      string `toml:"url"`
			TokenVar string `toml:"bearer_token_env_var"`
		} `toml:"mcp_servers"`
	}
	_, val, _ := strings.Cut(p.Args[1], "=")
	if _, err := toml.Decode("[mcp_servers]\nagentctl = "+val, &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.MCPServers["agentctl"]; got.URL != rec.Transport.URL || got.TokenVar != TokenEnv {
		t.Errorf("override decodes as %+v", got)
	}
	if strings.Contains(strings.Join(p.Args, " "), testToken) {
		t.Fatalf("the token is on the command line: %q", p.Args)
	}
	if last := p.Env[len(p.Env)-1]; last != (EnvVar{TokenEnv, testToken}) {
		t.Fatalf("env %q: want %s with the token", p.Env, TokenEnv)
	}
	if red := p.Redacted(); red.Env[len(red.Env)-1].Value != Hidden {
		t.Errorf("redacted env %q", red.Env)
	}
	// Decoded from the instance's own file (TOML), the headers are a
	// map[string]any: the token moves all the same.
	fromFile := map[string]any{"url": rec.Transport.URL, "http_headers": map[string]any{"Authorization": "Bearer " + testToken, "X-Other": "kept"}}
	m, tok := bearerToEnv(fromFile)
	if tok != testToken || m["bearer_token_env_var"] != TokenEnv || m["http_headers"].(map[string]any)["X-Other"] != "kept" || m["http_headers"].(map[string]any)["Authorization"] != nil {
		t.Errorf("bearerToEnv(file entry) = %v, %q", m, tok)
	}
	if fromFile["http_headers"].(map[string]any)["Authorization"] == nil {
		t.Error("bearerToEnv changed its argument")
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
