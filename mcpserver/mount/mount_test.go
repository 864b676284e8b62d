package mount

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

func TestValidate(t *testing.T) {
	kb := func(f func(*Mount)) Mount {
		m := Mount{Kind: KindKB, Name: "docs", Path: "/kb"}
		f(&m)
		return m
	}
	srv := func(f func(*Mount)) Mount {
		m := Mount{Kind: KindServer, Name: "web", Command: "web-mcp"}
		f(&m)
		return m
	}
	for name, tc := range map[string]struct {
		m    Mount
		want string // "" for valid
	}{
		"kb":                    {kb(func(*Mount) {}), ""},
		"stdio server":          {srv(func(*Mount) {}), ""},
		"http server":           {srv(func(m *Mount) { m.Command, m.URL, m.Headers = "", "https://h/mcp", map[string]string{"A": "b"} }), ""},
		"kb without path":       {kb(func(m *Mount) { m.Path = "" }), `knowledge base "docs": no path`},
		"kb with a command":     {kb(func(m *Mount) { m.Command = "x" }), "are for MCP servers"},
		"kb negative max":       {kb(func(m *Mount) { m.MaxBytes = -1 }), "max_bytes must be"},
		"kb max over 1 GiB":     {kb(func(m *Mount) { m.MaxBytes = MaxBytesLimit + 1 }), "at most 1 GiB"},
		"server with neither":   {srv(func(m *Mount) { m.Command = "" }), `MCP server "web": give a command (stdio) or a url`},
		"server with both":      {srv(func(m *Mount) { m.URL = "https://h" }), "not both"},
		"server ftp url":        {srv(func(m *Mount) { m.Command, m.URL = "", "ftp://u:pw@h/?key=SECRET" }), `url "ftp://redacted@h/?redacted" is not an http(s) URL`},
		"server url, no host":   {srv(func(m *Mount) { m.Command, m.URL = "", "https://" }), `url "https://" names no host`},
		"server url, only port": {srv(func(m *Mount) { m.Command, m.URL = "", "http://:8080/mcp?t=SECRET" }), `url "http://:8080/mcp?redacted" names no host`},
		"server args, no cmd":   {srv(func(m *Mount) { m.Command, m.URL, m.Args = "", "https://h", []string{"a"} }), "args and env need a command"},
		"server headers, stdio": {srv(func(m *Mount) { m.Headers = map[string]string{"A": "b"} }), "headers need a url"},
		"server with a path":    {srv(func(m *Mount) { m.Path = "/kb" }), "are for knowledge bases"},
		"server neg timeout":    {srv(func(m *Mount) { m.Timeout = Duration(-time.Second) }), "timeout must be"},
		"server call timeout":   {srv(func(m *Mount) { m.CallTimeout = Duration(time.Hour) }), ""},
		"server neg call time":  {srv(func(m *Mount) { m.CallTimeout = Duration(-time.Second) }), "call_timeout must be a positive duration"},
		"kb with call timeout":  {kb(func(m *Mount) { m.CallTimeout = Duration(time.Second) }), "call_timeout are for MCP servers"},
		"unknown kind":          {Mount{Kind: "disk", Name: "d"}, `unknown kind "disk"`},
		"empty name":            {kb(func(m *Mount) { m.Name = " " }), "empty name"},
		"control in name":       {kb(func(m *Mount) { m.Name = "a\tb" }), "control characters"},
		"long name":             {kb(func(m *Mount) { m.Name = strings.Repeat("a", 65) }), "longer than 64"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.m.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate() = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TOML (the config file), JSON (--mcp-json, the record) decode into one Mount.
func TestMountDecodesFromTOMLAndJSON(t *testing.T) {
	var file struct {
		Servers []Mount `toml:"mcp_servers"`
	}
	md, err := toml.Decode(`[[mcp_servers]]
name = "web"
command = "web-mcp"
args = ["--port", "0"]
timeout = "2m"
call_timeout = "30m"
`, &file)
	if err != nil || len(md.Undecoded()) > 0 {
		t.Fatalf("toml: %v, undecoded %v", err, md.Undecoded())
	}
	var fromJSON Mount
	if err := json.Unmarshal([]byte(`{"name":"web","command":"web-mcp","args":["--port","0"],"timeout":"2m","call_timeout":"30m"}`), &fromJSON); err != nil {
		t.Fatal(err)
	}
	got := file.Servers[0]
	if got.Timeout != Duration(2*time.Minute) || fromJSON.Timeout != got.Timeout ||
		got.CallTimeout != Duration(30*time.Minute) || fromJSON.CallTimeout != got.CallTimeout || fromJSON.Command != got.Command || len(fromJSON.Args) != 2 {
		t.Fatalf("toml %+v, json %+v", got, fromJSON)
	}
	if _, err := toml.Decode(`timeout = "soon"`, &struct{ Timeout Duration }{}); err == nil || !strings.Contains(err.Error(), "such as 10s") {
		t.Fatalf("bad duration: %v", err)
	}
}

// The record's JSON for a resolved mount: the mount's fields plus the
// effective prefix and its origin; a duration as a Go duration string.
func TestResolvedJSON(t *testing.T) {
	r := Resolved{Mount: Mount{Kind: KindServer, Name: "web", URL: "https://h/mcp", Timeout: Duration(10 * time.Second), CallTimeout: Duration(time.Minute)},
		EffectivePrefix: "web", PrefixOrigin: OriginDerived}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"mcp","name":"web","tool_prefix":"","read_only":false,"url":"https://h/mcp","timeout":"10s","call_timeout":"1m0s","effective_prefix":"web","prefix_origin":"derived"}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var back Resolved
	if err := json.Unmarshal(b, &back); err != nil || back.Timeout != r.Timeout || back.CallTimeout != r.CallTimeout || back.EffectivePrefix != "web" || back.PrefixOrigin != OriginDerived {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}

func TestRedacted(t *testing.T) {
	m := Mount{Kind: KindServer, Name: "api", URL: "https://user:pw@h/mcp?key=SECRET",
		Headers: map[string]string{"Authorization": "Bearer SECRET"}}
	r := m.Redacted()
	b, _ := json.Marshal(r)
	if strings.Contains(string(b), "SECRET") || strings.Contains(string(b), "pw") {
		t.Fatalf("a secret survived: %s", b)
	}
	if r.Headers["Authorization"] != "<redacted>" || r.URL != "https://redacted@h/mcp?redacted" {
		t.Fatalf("redacted: %+v", r)
	}
	if m.Headers["Authorization"] != "Bearer SECRET" {
		t.Fatal("Redacted changed the original")
	}
}

// A key in a URL's path (hosted servers put one there) and a secret on a
// stdio server's command line are hidden too: instance show and
// get_instance printed --api-key=K, postgres://u:PW@h and
// /api/mcp/s/KEY/mcp as they were.
func TestRedactedPathAndArgs(t *testing.T) {
	const key = "sk-ak-PATHSECRET123"
	if got := RedactURL("https://mcp.example.com/api/mcp/s/" + key + "/mcp"); got != "https://mcp.example.com/api/mcp/s/redacted/mcp" {
		t.Errorf("path key: %s", got)
	}
	for _, plain := range []string{"https://h/mcp", "https://h/v1/servers/github/mcp", "https://h/api/mcp/some-long-plain-name"} {
		if got := RedactURL(plain); got != plain {
			t.Errorf("%s became %s", plain, got)
		}
	}
	m := Mount{Kind: KindServer, Name: "db", Command: "srv",
		Args: []string{"--api-key=sk-live-ABCDEF", "--token", "tok-XYZ123", "postgres://u:pgpw-XYZ@h/db", "--verbose", "plain"}}
	r := m.Redacted()
	want := []string{"--api-key=<redacted>", "--token", "<redacted>", "postgres://redacted@h/db", "--verbose", "plain"}
	if !slices.Equal(r.Args, want) {
		t.Errorf("args %q, want %q", r.Args, want)
	}
	m.Args = []string{"-y", "mcp-remote", "https://remote.example/sse", "--header", "Authorization: Bearer S2ECRET", "-H", "X-Custom: S3CRET", "Authorization:S4CRET", "GITHUB_TOKEN=S5CRET", "srv", "a:b", "PATH=/bin"}
	want = []string{"-y", "mcp-remote", "https://remote.example/sse", "--header", "Authorization: <redacted>", "-H", "X-Custom: <redacted>", "Authorization: <redacted>", "GITHUB_TOKEN=<redacted>", "srv", "a:b", "PATH=/bin"}
	if r := m.Redacted(); !slices.Equal(r.Args, want) {
		t.Errorf("args %q, want %q", r.Args, want)
	}
	if m.Args[4] != "Authorization: Bearer S2ECRET" {
		t.Fatal("Redacted changed the original")
	}
}

// A mount without call_timeout gets the default; one with it, its own.
func TestCallTimeoutOrDefault(t *testing.T) {
	if got := (Mount{}).CallTimeoutOrDefault(); got != DefaultCallTimeout {
		t.Fatalf("unset: %s, want %s", got, DefaultCallTimeout)
	}
	if got := (Mount{CallTimeout: Duration(200 * time.Millisecond)}).CallTimeoutOrDefault(); got != 200*time.Millisecond {
		t.Fatalf("set: %s, want 200ms", got)
	}
}

func TestIsRelativeCommand(t *testing.T) {
	for cmd, want := range map[string]bool{
		"./ev.sh":      true,
		"bin/server":   true,
		"../x/server":  true,
		"/usr/bin/npx": false,
		"npx":          false,
		"ev.sh":        false, // a bare name: a PATH lookup, as in a shell
		"":             false,
	} {
		if got := IsRelativeCommand(cmd); got != want {
			t.Errorf("IsRelativeCommand(%q) = %v, want %v", cmd, got, want)
		}
	}
}
