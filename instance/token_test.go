package instance_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/instance"
)

// TestNewToken: the prefix, 32 bytes of base64url, never the same twice.
func TestNewToken(t *testing.T) {
	re := regexp.MustCompile(`^agt_[A-Za-z0-9_-]{43}$`)
	seen := map[string]bool{}
	for range 100 {
		tok, err := instance.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		if !re.MatchString(tok) {
			t.Fatalf("token %q is not agt_ and 43 base64url characters", tok)
		}
		if seen[tok] {
			t.Fatalf("token %q made twice", tok)
		}
		seen[tok] = true
	}
}

// filesHolding lists the files under dir whose bytes contain s.
func filesHolding(t *testing.T, dir, s string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(data), s) {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTokenStoredAsHashOnly: the store (database, WAL, record JSON) never
// holds a token; an HTTP instance's token is in its client configuration
// only, mode 0600.
func TestTokenStoredAsHashOnly(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	stdio := create(t, st, "claude-code", nil)
	web := create(t, st, "claude-code", func(o *instance.CreateOptions) { o.Transport = instance.Transport{Kind: instance.TransportHTTP} })
	for _, rec := range []*instance.Record{stdio, web} {
		tok := rec.NewToken()
		if tok == "" {
			t.Fatalf("%s: no token on the created record", rec.ID)
		}
		raw, _ := json.Marshal(rec)
		if strings.Contains(string(raw), tok) || strings.Contains(string(raw), `"token"`) {
			t.Errorf("%s: the record's JSON holds the token: %s", rec.ID, raw)
		}
		got, err := st.Get(ctx, rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.NewToken() != "" {
			t.Errorf("%s: a record read back carries a token", rec.ID)
		}
	}
	if got := filesHolding(t, st.Dir(), stdio.NewToken()); len(got) != 0 {
		t.Errorf("stdio instance's token found in %v", got)
	}
	want := filepath.Join("instances", web.ID, ".mcp.json")
	if got := filesHolding(t, st.Dir(), web.NewToken()); len(got) != 1 || got[0] != want {
		t.Errorf("HTTP instance's token found in %v, want only in %s", got, want)
	}
	if fi, err := os.Stat(web.MCPConfigPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v (%v), want 0600", web.MCPConfigPath, fi.Mode().Perm(), err)
	}
	if web.Transport.URL != "http://127.0.0.1:7821/instances/"+web.ID+"/mcp" {
		t.Errorf("transport %+v", web.Transport)
	}
	data, _ := os.ReadFile(web.MCPConfigPath)
	if !strings.Contains(string(data), `"Authorization": "Bearer `+web.NewToken()+`"`) {
		t.Errorf("the configuration has no bearer header:\n%s", data)
	}
}

// TestCheckToken: the instance's own token only; not another instance's,
// not on an unknown instance.
func TestCheckToken(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	a := create(t, st, "auggie", nil)
	b := create(t, st, "auggie", nil)
	for _, c := range []struct {
		id, token string
		want      bool
	}{
		{a.ID, a.NewToken(), true},
		{b.ID, b.NewToken(), true},
		{a.ID, b.NewToken(), false},
		{b.ID, a.NewToken(), false},
		{a.ID, "", false},
		{a.ID, a.NewToken() + "x", false},
		{a.ID, strings.ToUpper(a.NewToken()), false},
		{"01jq0000000000000000000000", a.NewToken(), false},
	} {
		ok, err := st.CheckToken(ctx, c.id, c.token)
		if err != nil || ok != c.want {
			t.Errorf("CheckToken(%s, token of %s...) = %v, %v; want %v", c.id, c.token[:min(len(c.token), 8)], ok, err, c.want)
		}
	}
}

// TestRotateToken: the new token works and the old does not; the HTTP
// instance's configuration holds the new one, still 0600.
func TestRotateToken(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	rec := create(t, st, "codex", func(o *instance.CreateOptions) {
		o.Transport = instance.Transport{Kind: instance.TransportHTTP, URL: "https://agents.example/{id}/mcp"}
	})
	old := rec.NewToken()
	rot, err := st.RotateToken(ctx, rec.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rot.Token == old || !strings.HasPrefix(rot.Token, instance.TokenPrefix) {
		t.Fatalf("new token %q", rot.Token)
	}
	if ok, _ := st.CheckToken(ctx, rec.ID, old); ok {
		t.Error("the old token still works")
	}
	if ok, _ := st.CheckToken(ctx, rec.ID, rot.Token); !ok {
		t.Error("the new token does not work")
	}
	if len(rot.Rewritten) != 1 || rot.Rewritten[0] != rec.MCPConfigPath {
		t.Errorf("rewritten %v, want [%s]", rot.Rewritten, rec.MCPConfigPath)
	}
	data, _ := os.ReadFile(rec.MCPConfigPath)
	if strings.Contains(string(data), old) || !strings.Contains(string(data), `Authorization = "Bearer `+rot.Token+`"`) {
		t.Errorf("configuration after rotate:\n%s", data)
	}
	if !strings.Contains(string(data), `url = "https://agents.example/`+rec.ID+`/mcp"`) {
		t.Errorf("the URL's {id} was not expanded:\n%s", data)
	}
	if fi, _ := os.Stat(rec.MCPConfigPath); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after rotate %v", fi.Mode().Perm())
	}
	if got := filesHolding(t, st.Dir(), rot.Token); len(got) != 1 {
		t.Errorf("new token found in %v, want only the configuration", got)
	}
}

// TestTokenlessInstance: an instance from before tokens (no row) is
// refused every token until a rotate gives it one.
func TestTokenlessInstance(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	rec := create(t, st, "cursor", nil)
	if err := st.ExecForTest(`DELETE FROM instance_tokens`); err != nil {
		t.Fatal(err)
	}
	if ok, err := st.CheckToken(ctx, rec.ID, rec.NewToken()); ok || err != nil {
		t.Fatalf("tokenless instance: %v, %v", ok, err)
	}
	rot, err := st.RotateToken(ctx, rec.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := st.CheckToken(ctx, rec.ID, rot.Token); !ok || err != nil {
		t.Errorf("after rotate: %v, %v", ok, err)
	}
	if len(rot.Rewritten) != 0 {
		t.Errorf("a stdio instance's files rewritten: %v", rot.Rewritten)
	}
}

// TestCreateTransportRefused: an unknown transport, a URL without http,
// or a URL for stdio are refused, saying what to do.
func TestCreateTransportRefused(t *testing.T) {
	st := openStore(t)
	def, _ := catalog(t).Lookup("auggie")
	for _, c := range []struct {
		tr   instance.Transport
		want string
	}{
		{instance.Transport{Kind: "grpc"}, `unknown transport "grpc"`},
		{instance.Transport{Kind: "http", URL: "ftp://x/y"}, "not an http:// or https:// URL"},
		{instance.Transport{Kind: "stdio", URL: "http://x/y"}, "add --transport http"},
	} {
		_, err := st.CreateInstance(context.Background(), instance.CreateOptions{Definition: def, Workspace: t.TempDir(), Executable: "/x", Transport: c.tr})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.tr, err, c.want)
		}
	}
}

// TestConnectHTTP: connect copies the remote entry (URL and header) into
// the client's file, writes it 0600, recognises it as this instance's, and
// a rotate names it as still holding the old token.
func TestConnectHTTP(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	ws, home := t.TempDir(), t.TempDir()
	rec := create(t, st, "cursor", func(o *instance.CreateOptions) {
		o.Workspace = ws
		o.Transport = instance.Transport{Kind: instance.TransportHTTP}
	})
	path := filepath.Join(ws, ".cursor", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"other": {"command": "x"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	o := instance.ConnectOptions{Scope: instance.ScopeWorkspace, Getenv: connectEnv(home)}
	if _, err := instance.Connect(rec, o); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), `"url": "`+rec.Transport.URL+`"`) || !strings.Contains(string(data), "Bearer "+rec.NewToken()) {
		t.Errorf("connected file:\n%s", data)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("connected file mode %v, want 0600", fi.Mode().Perm())
	}
	if _, ok := instance.Connected(rec, o); !ok {
		t.Error("the connected HTTP entry is not recognised as the instance's")
	}
	if res, err := instance.Connect(rec, o); err != nil || res.Action != "unchanged" {
		t.Errorf("connect again: %+v, %v", res, err)
	}
	rot, err := st.RotateToken(ctx, rec.ID, connectEnv(home))
	if err != nil {
		t.Fatal(err)
	}
	if len(rot.Stale) != 1 || rot.Stale[0] != path {
		t.Errorf("stale %v, want [%s]", rot.Stale, path)
	}
	if res, err := instance.Connect(rec, o); err != nil || res.Action != "replaced" {
		t.Errorf("connect after rotate: %+v, %v", res, err)
	}
	data, _ = os.ReadFile(path)
	if !strings.Contains(string(data), "Bearer "+rot.Token) {
		t.Errorf("connect after rotate did not bring the new token:\n%s", data)
	}
}
