package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver/mount"
)

// runCLI runs agentctl in-process with an isolated environment.
func runCLI(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	getenv := func(k string) string { return env[k] }
	code = Run(context.Background(), append([]string{"agentctl"}, args...), strings.NewReader(""), &out, &errOut, getenv)
	return code, out.String(), errOut.String()
}

// TestServeRevalidatesPrefixes: the prefix contract is checked again at
// mcp serve start, in case the record was edited after create.
func TestServeRevalidatesPrefixes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, kb := range []string{"docs", "notes"} {
		if err := os.MkdirAll(filepath.Join(dir, kb), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"HOME": dir, "XDG_CONFIG_HOME": filepath.Join(dir, "cfg"), "AGENTCTL_STATE_DIR": filepath.Join(dir, "state")}
	code, id, stderr := runCLI(t, env, "instance", "create", "--agent", "auggie", "--workspace", dir,
		"--kb", "docs="+filepath.Join(dir, "docs"), "--kb", "notes="+filepath.Join(dir, "notes"))
	if code != 0 {
		t.Fatalf("create: %d %s", code, stderr)
	}
	id = strings.TrimSpace(id)
	edit := func(fn func(*instance.Record)) {
		st, err := instance.Open(context.Background(), env["AGENTCTL_STATE_DIR"])
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := st.UpdateInstance(context.Background(), id, func(r *instance.Record) (map[string][]byte, error) {
			fn(r)
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		edit func(*instance.Record)
		want string
	}{
		{"a name that cannot derive a prefix", func(r *instance.Record) { r.Mounts[0].Name = "3D docs" },
			`knowledge base "3D docs": cannot derive a tool prefix from its name ("3D docs" -> "3d_docs": starts with a digit)`},
		{"two mounts with one prefix", func(r *instance.Record) { r.Mounts[0].Name, r.Mounts[1].Name = "notes", "Notes" },
			`both get the tool prefix "notes"`},
		{"a stored prefix that no longer matches", func(r *instance.Record) { r.Mounts[0].Name = "wiki" },
			`the record says mount "wiki" has prefix "docs" (derived), but it resolves to "wiki" (derived)`},
		{"an invalid explicit prefix", func(r *instance.Record) { r.Mounts[0].ToolPrefix = "a__b" },
			`tool_prefix "a__b" contains "__"`},
		{"an external server named like a knowledge base", func(r *instance.Record) {
			r.Mounts[1] = mount.Resolved{Mount: mount.Mount{Kind: mount.KindServer, Name: "docs", Command: "/bin/true"}, EffectivePrefix: "docs", PrefixOrigin: mount.OriginDerived}
		}, `MCP server "docs": server name "docs" is reserved for knowledge base "docs", served in process; choose a different name`},
		{"an external server named like the server", func(r *instance.Record) {
			r.Mounts[1] = mount.Resolved{Mount: mount.Mount{Kind: mount.KindServer, Name: "agentctl", Command: "/bin/true"}, EffectivePrefix: "agentctl", PrefixOrigin: mount.OriginDerived}
		}, `MCP server "agentctl": server name "agentctl" is reserved for a built-in service; choose a different name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edit(func(r *instance.Record) {
				r.Mounts[0].Name, r.Mounts[0].ToolPrefix = "docs", ""
				r.Mounts[1] = mount.Resolved{Mount: mount.Mount{Kind: mount.KindKB, Name: "notes", Path: r.Mounts[0].Path}, EffectivePrefix: "notes", PrefixOrigin: mount.OriginDerived}
				tc.edit(r)
			})
			code, stdout, stderr := runCLI(t, env, "mcp", "serve", "--instance", id)
			if code != ExitInvalid || stdout != "" || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 4 and %s", code, stdout, stderr, tc.want)
			}
		})
	}
}
