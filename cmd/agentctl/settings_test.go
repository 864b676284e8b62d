package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/spf13/pflag"
)

func TestDecodeConfigFile(t *testing.T) {
	values, mounts, err := decodeConfigFile(`
server_name = "tools"
state_dir   = "state"

[mcp]
tool_prefix_mode = "off"

[[kbs]]
name = "docs"
path = "docs"

[[mcp_servers]]
name    = "web"
command = "web-server"
`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"server_name": "tools", "state_dir": "state", "mcp.tool_prefix_mode": "off"}
	if !reflect.DeepEqual(values, want) {
		t.Errorf("values %v, want %v", values, want)
	}
	wantMounts := []mount.Mount{{Kind: mount.KindKB, Name: "docs", Path: "docs"}, {Kind: mount.KindServer, Name: "web", Command: "web-server"}}
	if !reflect.DeepEqual(mounts, wantMounts) {
		t.Errorf("mounts %+v, want %+v", mounts, wantMounts)
	}

	for _, tc := range []struct{ file, want string }{
		{`server-name = "typo"`, `unknown key "server-name" (known keys: agents_dir, base_url, first_list_wait, host, kb_refresh_interval, kbs, log_level, mcp.tool_prefix_mode, mcp_servers, notify, question_timeout, server_name, state_dir, store)`},
		{"[mcp]\ntool_prefix = \"off\"", `unknown key "mcp.tool_prefix"`},
		// Each array's own keys: a [[kbs]] table takes no command, a
		// [[mcp_servers]] one no path.
		{"[[kbs]]\nname = \"a\"\npaht = \"x\"", `[[kbs]] #1: unknown key "paht" (a [[kbs]] table's keys: name, path, tool_prefix, read_only, max_bytes)`},
		{"[[mcp_servers]]\nname = \"a\"\ncommand = \"x\"\n[[mcp_servers]]\nname = \"b\"\ncomand = \"y\"", `[[mcp_servers]] #2: unknown key "comand" (a [[mcp_servers]] table's keys: name, tool_prefix, command, args, env, url, headers, timeout, call_timeout)`},
		{"[other]\nx = 1", `unknown key "other"`},
		{`server_name = 5`, `server_name`},
		{`server_name = `, `line 1`},
	} {
		_, _, err := decodeConfigFile(tc.file)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.file, err, tc.want)
		}
	}
}

func TestSettingsTable(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range settings {
		for _, name := range []string{"key " + s.Key, "flag " + s.Flag, "env " + s.Env} {
			if !strings.HasSuffix(name, " ") && seen[name] {
				t.Errorf("%s appears twice", name)
			}
			seen[name] = true
		}
		if s.Env != "" && !strings.HasPrefix(s.Env, "AGENTCTL_") {
			t.Errorf("%s: environment variable %s", s.Key, s.Env)
		}
		if s.Help == "" {
			t.Errorf("%s has no help", s.Key)
		}
	}
	if got := settingFor(keyStateDir).usage(); got != "state directory: this host's instance directories, and the store unless --store says otherwise (env AGENTCTL_STATE_DIR; default $XDG_STATE_HOME/agentctl, else ~/.local/state/agentctl)" {
		t.Errorf("usage %q", got)
	}
}

// TestConfigPrecedence: each setting's value is its flag's, else its
// AGENTCTL_* variable's, else the config file's, else its default, for a
// top-level key and a key in a table alike; a relative path is the file's
// only when the file gives it.
func TestConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(file, []byte("server_name = \"file\"\nstate_dir = \"state\"\nbase_url = \"https://file.example\"\n[mcp]\ntool_prefix_mode = \"off\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile := map[string]string{keyServerName: "file", keyToolPrefixMode: "off", keyQuestionTimeout: "10m0s", keyBaseURL: "https://file.example"}
	for _, tc := range []struct {
		name     string
		env      []string
		args     []string
		want     map[string]string
		stateDir string
	}{
		{"defaults", nil, nil, map[string]string{keyServerName: "agentctl", keyToolPrefixMode: "mount-name", keyQuestionTimeout: "10m0s"}, "/home/.local/state/agentctl"},
		{"file", []string{"AGENTCTL_CONFIG=" + file}, nil, fromFile, filepath.Join(dir, "state")},
		{"--config", nil, []string{"--config", file}, fromFile, filepath.Join(dir, "state")},
		{"env over file", []string{"AGENTCTL_CONFIG=" + file, "AGENTCTL_SERVER_NAME=env", "AGENTCTL_TOOL_PREFIX_MODE=mount-name", "AGENTCTL_STATE_DIR=envstate", "AGENTCTL_BASE_URL=https://env.example"}, nil,
			map[string]string{keyServerName: "env", keyToolPrefixMode: "mount-name", keyBaseURL: "https://env.example"}, "envstate"},
		{"empty env is unset", []string{"AGENTCTL_CONFIG=" + file, "AGENTCTL_SERVER_NAME="}, nil, fromFile, filepath.Join(dir, "state")},
		{"flag over env", []string{"AGENTCTL_CONFIG=" + file, "AGENTCTL_SERVER_NAME=env", "AGENTCTL_QUESTION_TIMEOUT=1m", "AGENTCTL_BASE_URL=https://env.example"},
			[]string{"--server-name", "flag", "--tool-prefix-mode", "mount-name", "--question-timeout", "2m", "--state-dir", "flagstate", "--base-url", "https://flag.example"},
			map[string]string{keyServerName: "flag", keyToolPrefixMode: "mount-name", keyQuestionTimeout: "2m", keyBaseURL: "https://flag.example"}, "flagstate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{"HOME": "/home"}
			for _, kv := range tc.env {
				k, v, _ := strings.Cut(kv, "=")
				vars[k] = v
			}
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			for _, s := range settings {
				if s.Flag != "" {
					addSettingFlag(fs, s.Key)
				}
			}
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			c := newConfig(func(k string) string { return vars[k] })
			if err := c.load(fs); err != nil {
				t.Fatal(err)
			}
			for key, want := range tc.want {
				if got := c.String(key); got != want {
					t.Errorf("%s = %q, want %q", key, got, want)
				}
			}
			if got := c.StateDir(); got != tc.stateDir {
				t.Errorf("state dir %q, want %q", got, tc.stateDir)
			}
		})
	}
}

// decodeConfigFile is [decodeConfig]'s settings and mounts.
func decodeConfigFile(data string) (map[string]any, []mount.Mount, error) {
	cf, err := decodeConfig(data)
	if err != nil {
		return nil, nil, err
	}
	return cf.values, cf.mounts, nil
}
