package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/mcpserver/mount"
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
	want := map[string]string{"server_name": "tools", "state_dir": "state", "mcp.tool_prefix_mode": "off"}
	if !reflect.DeepEqual(values, want) {
		t.Errorf("values %v, want %v", values, want)
	}
	wantMounts := []mount.Mount{{Kind: mount.KindKB, Name: "docs", Path: "docs"}, {Kind: mount.KindServer, Name: "web", Command: "web-server"}}
	if !reflect.DeepEqual(mounts, wantMounts) {
		t.Errorf("mounts %+v, want %+v", mounts, wantMounts)
	}

	for _, tc := range []struct{ file, want string }{
		{`server-name = "typo"`, `unknown key "server-name" (known keys: agents_dir, first_list_wait, kb_refresh_interval, kbs, log_level, mcp.tool_prefix_mode, mcp_servers, question_timeout, server_name, state_dir)`},
		{"[mcp]\ntool_prefix = \"off\"", `unknown key "mcp.tool_prefix"`},
		{"[[kbs]]\nname = \"a\"\npaht = \"x\"", `unknown key "kbs.paht"`},
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
	if got := settingFor(keyStateDir).usage(); got != "state directory (env AGENTCTL_STATE_DIR; default $XDG_STATE_HOME/agentctl, else ~/.local/state/agentctl)" {
		t.Errorf("usage %q", got)
	}
}
