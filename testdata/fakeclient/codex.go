package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"
)

// loadCodex reads $CODEX_HOME/config.toml and applies the -c overrides, as
// `codex exec` does.
func loadCodex(inv *invocation) ([]*server, error) {
	if inv.headless && !inv.has("--skip-git-repo-check") && !inGitTree(inv.cwd) {
		return nil, errors.New("not inside a trusted directory and --skip-git-repo-check was not specified")
	}
	home := os.Getenv("CODEX_HOME")
	if home == "" {
		home = filepath.Join(os.Getenv("HOME"), ".codex")
	}
	inv.codexHome = home
	cfg := map[string]any{}
	path := filepath.Join(home, "config.toml")
	if _, err := toml.DecodeFile(path, &cfg); err == nil {
		inv.configs = append(inv.configs, path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	for _, o := range inv.flags["-c"] {
		if err := override(cfg, o); err != nil {
			return nil, err
		}
	}
	servers, _ := cfg["mcp_servers"].(map[string]any)
	var out []*server
	for name, v := range servers {
		t, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("mcp_servers.%s: want a table, got %T", name, v)
		}
		if e, ok := t["enabled"].(bool); ok && !e {
			continue
		}
		s := &server{Name: name}
		var err error
		if s.Command, ok = t["command"].(string); !ok || s.Command == "" {
			return nil, fmt.Errorf("mcp_servers.%s: command must be a non-empty string", name)
		}
		if s.Args, err = stringList(t["args"]); err != nil {
			return nil, fmt.Errorf("mcp_servers.%s.args: %v", name, err)
		}
		if env, ok := t["env"].(map[string]any); ok {
			s.Env = map[string]string{}
			for k, v := range env {
				s.Env[k] = fmt.Sprint(v)
			}
		}
		switch n := t["tool_timeout_sec"].(type) {
		case int64:
			f := float64(n)
			s.Timeout = &f
		case float64:
			s.Timeout = &n
		case nil:
		default:
			return nil, fmt.Errorf("mcp_servers.%s.tool_timeout_sec: want a number, got %T", name, n)
		}
		out = append(out, s)
	}
	return out, nil
}

// override applies one -c key=value to cfg: key is a dotted path, value is
// TOML, or a plain string when it does not parse as TOML.
func override(cfg map[string]any, kv string) error {
	key, raw, ok := strings.Cut(kv, "=")
	if !ok || key == "" {
		return fmt.Errorf("-c %q: want key=value", kv)
	}
	var v any = raw
	var doc map[string]any
	if _, err := toml.Decode("v = "+raw, &doc); err == nil {
		v = doc["v"]
	}
	parts := strings.Split(strings.TrimSpace(key), ".")
	t := cfg
	for _, p := range parts[:len(parts)-1] {
		next, ok := t[p].(map[string]any)
		if !ok {
			if _, exists := t[p]; exists {
				return fmt.Errorf("-c %s: %s is not a table", key, p)
			}
			next = map[string]any{}
			t[p] = next
		}
		t = next
	}
	t[parts[len(parts)-1]] = v
	return nil
}

// stringList reads a TOML array of strings (nil stays nil).
func stringList(v any) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want an array of strings, got %T", v)
	}
	out := make([]string, len(list))
	for i, x := range list {
		if out[i], ok = x.(string); !ok {
			return nil, fmt.Errorf("item %d: want a string, got %T", i, x)
		}
	}
	return out, nil
}
