package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/mcpserver"
	"github.com/agentctl/agentctl/mcpserver/mount"
)

func TestNewCmdInstanceCreate(t *testing.T) {
	// The options a create with only --agent gets: the settings' defaults.
	defaults := func(mod func(*InstanceCreateOptions)) InstanceCreateOptions {
		o := InstanceCreateOptions{Agent: "auggie", Workspace: ".", ServerName: "agentctl",
			QuestionTimeout: mcpserver.DefaultQuestionTimeout, PrefixMode: mount.PrefixModeMountName, Transport: "stdio", Output: formatTable}
		if mod != nil {
			mod(&o)
		}
		return o
	}
	tests := []struct {
		args    []string
		env     []string
		want    InstanceCreateOptions
		wantErr string
	}{
		{args: []string{"--agent", "auggie"}, want: defaults(nil)},
		{
			args: []string{"--agent", "codex", "--name", "fix-login", "--workspace", "/src/app", "--server-name", "tools",
				"--question-timeout", "30s", "--no-trust", "--tool-prefix-mode", "off", "-o", "json"},
			want: defaults(func(o *InstanceCreateOptions) {
				o.Agent, o.Name, o.Workspace, o.ServerName = "codex", "fix-login", "/src/app", "tools"
				o.QuestionTimeout, o.NoTrust, o.PrefixMode, o.Output = 30*time.Second, true, mount.PrefixModeOff, formatJSON
			}),
		},
		{
			args: []string{"--agent", "auggie", "--kb", "docs=/srv/docs,prefix=d,ro", "--kb", "notes=/srv/notes,max=4096",
				"--mcp", "web=npx -y 'web server' --port 3", "--mcp", "remote=https://h.example/mcp", "--mcp-header", "remote:Authorization=Bearer t"},
			want: defaults(func(o *InstanceCreateOptions) {
				o.Mounts = []mount.Mount{
					{Kind: mount.KindKB, Name: "docs", Path: "/srv/docs", ToolPrefix: "d", ReadOnly: true},
					{Kind: mount.KindKB, Name: "notes", Path: "/srv/notes", MaxBytes: 4096},
					{Kind: mount.KindServer, Name: "web", Command: "npx", Args: []string{"-y", "web server", "--port", "3"}},
					{Kind: mount.KindServer, Name: "remote", URL: "https://h.example/mcp", Headers: map[string]string{"Authorization": "Bearer t"}},
				}
			}),
		},
		{args: []string{"--agent", "auggie"}, env: []string{"AGENTCTL_SERVER_NAME=env", "AGENTCTL_QUESTION_TIMEOUT=1m"},
			want: defaults(func(o *InstanceCreateOptions) { o.ServerName, o.QuestionTimeout = "env", time.Minute })},
		{args: []string{"--agent", "codex", "--transport", "http", "--url", "https://h.example/{id}/mcp"},
			want: defaults(func(o *InstanceCreateOptions) {
				o.Agent, o.Transport, o.URL = "codex", "http", "https://h.example/{id}/mcp"
			})},
		{args: nil, wantErr: "--agent is required"},
		{args: []string{"--agent", "auggie", "--workspace", ""}, wantErr: "--workspace is empty"},
		{args: []string{"--agent", "auggie", "--transport", "grpc"}, wantErr: `invalid --transport "grpc": use stdio`},
		{args: []string{"--agent", "auggie", "--kb", "docs"}, wantErr: `invalid --kb "docs"`},
		{args: []string{"--agent", "auggie", "--mcp", "web="}, wantErr: `invalid --mcp for "web": no command after "web="`},
		{args: []string{"--agent", "auggie", "--question-timeout", "soon"}, wantErr: `invalid --question-timeout "soon"`},
	}
	for _, tt := range tests {
		f := newUnloadedTestFactory(t, tt.env...)
		var got *InstanceCreateOptions
		cmd := NewCmdInstanceCreate(f.Factory, func(_ context.Context, o *InstanceCreateOptions) error {
			got = o
			return nil
		})
		err := runCommand(f, cmd, tt.args...)
		if !checkUsageError(t, tt.args, err, tt.wantErr) {
			continue
		}
		if got.IO != f.IOStreams || got.Catalog == nil || got.Store == nil || got.Executable == nil {
			t.Errorf("%q: the options lack the factory's streams, catalog, store or executable", tt.args)
		}
		got.IO, got.Catalog, got.Store, got.Executable = nil, nil, nil, nil
		if len(got.Mounts) == 0 {
			got.Mounts = nil
		}
		if len(got.Templates) == 0 {
			got.Templates = nil
		}
		if !reflect.DeepEqual(*got, tt.want) {
			t.Errorf("%q: options\n%+v\nwant\n%+v", tt.args, *got, tt.want)
		}
	}
}

// TestInstanceCreateLogLevel: a log level mcp serve would refuse is refused
// at create, with the same message and exit code, from each source.
func TestInstanceCreateLogLevel(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      string // AGENTCTL_LOG_LEVEL
		file     string // config.toml
		wantErr  string
		wantCode int
	}{
		{name: "environment", env: "loud", wantErr: `invalid AGENTCTL_LOG_LEVEL="loud" in the environment: use debug, info, warn or error`, wantCode: ExitInvalid},
		{name: "config file", file: "log_level = \"loud\"\n", wantErr: `config.toml: invalid log_level = "loud": use debug, info, warn or error`, wantCode: ExitInvalid},
		{name: "valid", env: "debug"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "config.toml")
			if err := os.WriteFile(cfg, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			var errs [2]error
			for i, args := range [][]string{{"--agent", "auggie"}, {"--instance", "x"}} {
				f := newUnloadedTestFactory(t, "AGENTCTL_LOG_LEVEL="+tc.env, "AGENTCTL_CONFIG="+cfg)
				if i == 0 {
					errs[i] = runCommand(f, NewCmdInstanceCreate(f.Factory, func(context.Context, *InstanceCreateOptions) error { return nil }), args...)
				} else {
					errs[i] = runCommand(f, NewCmdMCPServe(f.Factory, func(context.Context, *MCPServeOptions) error { return nil }), args...)
				}
			}
			create, serve := errs[0], errs[1]
			if tc.wantErr == "" {
				if create != nil || serve != nil {
					t.Fatalf("create: %v; serve: %v; want no error", create, serve)
				}
				return
			}
			if create == nil || !strings.Contains(create.Error(), tc.wantErr) {
				t.Fatalf("create: %v, want an error containing %q", create, tc.wantErr)
			}
			if serve == nil || create.Error() != serve.Error() {
				t.Errorf("create says %q, serve says %v; want the same message", create, serve)
			}
			if got := exitCode(context.Background(), create); got != tc.wantCode {
				t.Errorf("create exit code %d, want %d", got, tc.wantCode)
			}
			if got := exitCode(context.Background(), serve); got != tc.wantCode {
				t.Errorf("serve exit code %d, want %d", got, tc.wantCode)
			}
		})
	}
}
