package main

import (
	"context"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/agentctl/agentctl/mcpserver"
)

func TestNewCmdMCPServe(t *testing.T) {
	dflt := mcpserver.DefaultFirstListWait
	tests := []struct {
		args    []string
		env     []string
		want    MCPServeOptions
		wantErr string
	}{
		{args: []string{"--instance", "fix-login"}, want: MCPServeOptions{Instance: "fix-login", LogLevel: slog.LevelInfo, FastLane: true, FirstListWait: dflt, KBRefreshInterval: 2 * time.Second}},
		{args: []string{"--instance", "01jq3", "--fast-lane=false"}, want: MCPServeOptions{Instance: "01jq3", LogLevel: slog.LevelInfo, FirstListWait: dflt, KBRefreshInterval: 2 * time.Second}},
		{args: []string{"--instance=x", "--log-level", "debug"}, want: MCPServeOptions{Instance: "x", LogLevel: slog.LevelDebug, FastLane: true, FirstListWait: dflt, KBRefreshInterval: 2 * time.Second}},
		{args: []string{"--instance", "x", "--log-level", "warn", "--fast-lane"}, want: MCPServeOptions{Instance: "x", LogLevel: slog.LevelWarn, FastLane: true, FirstListWait: dflt, KBRefreshInterval: 2 * time.Second}},
		// The flag wins over the environment, which wins over the default.
		{args: []string{"--instance", "x"}, env: []string{"AGENTCTL_LOG_LEVEL=error"}, want: MCPServeOptions{Instance: "x", LogLevel: slog.LevelError, FastLane: true, FirstListWait: dflt, KBRefreshInterval: 2 * time.Second}},
		{args: []string{"--instance", "x", "--log-level", "debug"}, env: []string{"AGENTCTL_LOG_LEVEL=error"}, want: MCPServeOptions{Instance: "x", LogLevel: slog.LevelDebug, FastLane: true, FirstListWait: dflt, KBRefreshInterval: 2 * time.Second}},
		// first_list_wait: flag > environment > default; 0 answers at once.
		{args: []string{"--instance", "x", "--first-list-wait", "1s"}, env: []string{"AGENTCTL_FIRST_LIST_WAIT=2s"}, want: MCPServeOptions{Instance: "x", LogLevel: slog.LevelInfo, FastLane: true, FirstListWait: time.Second, KBRefreshInterval: 2 * time.Second}},
		{args: []string{"--instance", "x"}, env: []string{"AGENTCTL_FIRST_LIST_WAIT=0"}, want: MCPServeOptions{Instance: "x", LogLevel: slog.LevelInfo, FastLane: true, KBRefreshInterval: 2 * time.Second}},
		{args: []string{"--instance", "x", "--first-list-wait", "-1s"}, wantErr: `invalid --first-list-wait "-1s": use a duration such as 300ms or 1s, or 0 to answer at once`},
		{args: []string{"--instance", "x", "--first-list-wait", "soon"}, wantErr: `invalid --first-list-wait "soon"`},
		{args: []string{"--instance", "x"}, env: []string{"AGENTCTL_KB_REFRESH_INTERVAL=30s"}, want: MCPServeOptions{Instance: "x", LogLevel: slog.LevelInfo, FastLane: true, KBRefreshInterval: 30 * time.Second, FirstListWait: dflt}},
		{args: []string{"--instance", "x", "--http", "127.0.0.1:7822"}, want: MCPServeOptions{Instance: "x", LogLevel: slog.LevelInfo, FastLane: true, KBRefreshInterval: 2 * time.Second, FirstListWait: dflt, HTTP: "127.0.0.1:7822"}},
		{args: nil, wantErr: "--instance is required"},
		{args: []string{"--instance", "x", "--log-level", "loud"}, wantErr: `invalid --log-level "loud"`},
		{args: []string{"--instance", "x", "--fast-lane=maybe"}, wantErr: `invalid argument "maybe" for "--fast-lane"`},
		{args: []string{"--instance", "x", "extra"}, wantErr: "takes no arguments"},
	}
	for _, tt := range tests {
		f := newUnloadedTestFactory(t, tt.env...)
		var got *MCPServeOptions
		cmd := NewCmdMCPServe(f.Factory, func(_ context.Context, o *MCPServeOptions) error {
			got = o
			return nil
		})
		err := runCommand(f, cmd, tt.args...)
		if !checkUsageError(t, tt.args, err, tt.wantErr) {
			continue
		}
		if got.IO != f.IOStreams || got.Store == nil {
			t.Errorf("%q: the options lack the factory's streams or store", tt.args)
		}
		if got.HTTP != "" && (got.Serve.Listen != got.HTTP || got.Serve.Only != got.Instance || got.Serve.LogLevel != got.LogLevel) {
			t.Errorf("%q: --http serves %+v", tt.args, *got.Serve)
		}
		got.IO, got.Store, got.Serve = nil, nil, nil
		if !reflect.DeepEqual(*got, tt.want) {
			t.Errorf("%q %q: options %+v, want %+v", tt.env, tt.args, *got, tt.want)
		}
	}
}
