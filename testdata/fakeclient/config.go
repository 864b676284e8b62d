package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// server is one configured MCP server, and what the session did with it.
type server struct {
	Name    string            `json:"name"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
	// Timeout is the tool-call timeout as configured: codex tool_timeout_sec
	// in seconds, gemini/qwen/opencode timeout in milliseconds; nil if unset.
	Timeout *float64 `json:"timeout"`
	Trust   bool     `json:"trust"`
	Tools   []string `json:"tools"`
	Called  string   `json:"called"`
	Result  string   `json:"result"`
	Error   string   `json:"error,omitempty"`

	// ignored says why the client hides this server's tools from the model.
	ignored string
	// filter is Copilot's "tools" list; nil allows all.
	filter []string
}

// jsonServer is the union of the JSON server entries the clients read.
type jsonServer struct {
	Type      string            `json:"type"`
	Command   json.RawMessage   `json:"command"` // a string, or opencode's list
	Args      []string          `json:"args"`
	Env       map[string]string `json:"env"`
	Trust     bool              `json:"trust"`
	Timeout   *float64          `json:"timeout"`
	Tools     []string          `json:"tools"`
	Disabled  bool              `json:"disabled"`
	Enabled   *bool             `json:"enabled"`
	Transport *struct {
		Type    string            `json:"type"`
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
	} `json:"transport"`
	Environment map[string]string `json:"environment"`
}

// readJSON reads a configuration file into v. A missing file is (false,
// nil) when optional.
func readJSON(inv *invocation, path string, optional bool, v any) (bool, error) {
	data, err := os.ReadFile(path)
	if optional && errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(inv.cwd, path)
	}
	inv.configs = append(inv.configs, path)
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("%s: %v", path, err)
	}
	if os.Getenv("FAKECLIENT_REWRITE") != "" {
		// As Qwen Code and Cline do: write the file back, reformatted, with
		// the mode a new file gets.
		if err := os.Remove(path); err != nil {
			return false, err
		}
		if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
			return false, err
		}
		if err := os.Chmod(path, 0o644); err != nil {
			return false, err
		}
	}
	return true, nil
}

// stdServer turns a command/args/env entry into a server.
func stdServer(path, name string, e jsonServer) (*server, error) {
	var cmd string
	if err := json.Unmarshal(e.Command, &cmd); err != nil || cmd == "" {
		return nil, fmt.Errorf("%s: server %q: command must be a non-empty string", path, name)
	}
	return &server{Name: name, Command: cmd, Args: e.Args, Env: e.Env, Timeout: e.Timeout, Trust: e.Trust}, nil
}

// mcpServersFile reads {"mcpServers": {...}} from path, or from the inline
// JSON that path is when it starts with "{".
func mcpServersFile(inv *invocation, path string, optional bool) (map[string]jsonServer, error) {
	var f struct {
		MCPServers map[string]jsonServer `json:"mcpServers"`
	}
	if strings.HasPrefix(strings.TrimSpace(path), "{") {
		if err := json.Unmarshal([]byte(path), &f); err != nil {
			return nil, fmt.Errorf("inline MCP configuration: %v", err)
		}
		return f.MCPServers, nil
	}
	_, err := readJSON(inv, path, optional, &f)
	return f.MCPServers, err
}

// stdServers converts entries read from path, skipping disabled ones.
func stdServers(path string, entries map[string]jsonServer) ([]*server, error) {
	var out []*server
	for name, e := range entries {
		if e.Disabled || (e.Enabled != nil && !*e.Enabled) {
			continue
		}
		s, err := stdServer(path, name, e)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func loadAuggie(inv *invocation) ([]*server, error) {
	var all []*server
	for _, p := range inv.flags["--mcp-config"] {
		m, err := mcpServersFile(inv, p, false)
		if err != nil {
			return nil, err
		}
		s, err := stdServers(p, m)
		if err != nil {
			return nil, err
		}
		all = append(all, s...)
	}
	return all, nil
}

func loadClaude(inv *invocation) ([]*server, error) {
	merged := map[string]jsonServer{}
	if !inv.has("--strict-mcp-config") {
		m, err := mcpServersFile(inv, ".mcp.json", true)
		if err != nil {
			return nil, err
		}
		for k, v := range m {
			merged[k] = v
		}
	}
	for _, p := range inv.flags["--mcp-config"] {
		m, err := mcpServersFile(inv, p, false)
		if err != nil {
			return nil, err
		}
		for k, v := range m {
			merged[k] = v
		}
	}
	return stdServers("--mcp-config", merged)
}

// settingsLoader reads Gemini-style settings: the file named by env over
// dir/settings.json in the working directory, the first winning per server.
func settingsLoader(env, dir string) func(*invocation) ([]*server, error) {
	return func(inv *invocation) ([]*server, error) {
		merged := map[string]jsonServer{}
		for _, p := range []string{filepath.Join(dir, "settings.json"), os.Getenv(env)} {
			if p == "" {
				continue
			}
			m, err := mcpServersFile(inv, p, true)
			if err != nil {
				return nil, err
			}
			for k, v := range m {
				merged[k] = v
			}
		}
		out, err := stdServers("settings", merged)
		for _, s := range out {
			if inv.headless && !s.Trust {
				s.ignored = `server not trusted: a headless run ignores its tools (set "trust": true)`
			}
		}
		return out, err
	}
}

// loadOpencode reads OpenCode's configuration, or Kilo's: Kilo is a fork
// that reads KILO_CONFIG (its binary has no OPENCODE_CONFIG).
func loadOpencode(inv *invocation) ([]*server, error) {
	variable := "OPENCODE_CONFIG"
	if inv.client == "kilo" {
		variable = "KILO_CONFIG"
	}
	path := os.Getenv(variable)
	if path == "" {
		path = "opencode.json"
	}
	var f struct {
		MCP map[string]jsonServer `json:"mcp"`
	}
	if _, err := readJSON(inv, path, true, &f); err != nil {
		return nil, err
	}
	var out []*server
	for name, e := range f.MCP {
		if e.Enabled != nil && !*e.Enabled {
			continue
		}
		var cmd []string
		if err := json.Unmarshal(e.Command, &cmd); err != nil || len(cmd) == 0 || e.Type != "local" {
			return nil, fmt.Errorf(`%s: mcp %q: want "type": "local" and "command": [program, args...]`, path, name)
		}
		out = append(out, &server{Name: name, Command: cmd[0], Args: cmd[1:], Env: e.Environment, Timeout: e.Timeout})
	}
	return out, nil
}

func loadCopilot(inv *invocation) ([]*server, error) {
	var out []*server
	for _, p := range inv.flags["--additional-mcp-config"] {
		p = strings.TrimPrefix(p, "@")
		m, err := mcpServersFile(inv, p, false)
		if err != nil {
			return nil, err
		}
		s, err := stdServers(p, m)
		if err != nil {
			return nil, err
		}
		for _, sv := range s {
			e := m[sv.Name]
			switch {
			case e.Type != "local" && e.Type != "stdio":
				sv.ignored = fmt.Sprintf(`"type" is %q, want "local" or "stdio"`, e.Type)
			case e.Tools == nil:
				sv.ignored = `no "tools" list: no tool of this server is enabled (add "tools": ["*"])`
			}
			sv.filter = e.Tools
		}
		out = append(out, s...)
	}
	return out, nil
}

func loadGrok(inv *invocation) ([]*server, error) {
	const path = ".grok/settings.json"
	m, err := mcpServersFile(inv, path, true)
	if err != nil {
		return nil, err
	}
	var out []*server
	for name, e := range m {
		t := e.Transport
		if t == nil || t.Type != "stdio" || t.Command == "" {
			return nil, fmt.Errorf(`%s: server %q: want "transport": {"type": "stdio", "command": ...}`, path, name)
		}
		out = append(out, &server{Name: name, Command: t.Command, Args: t.Args, Env: t.Env})
	}
	return out, nil
}

// jsonLoader reads {"mcpServers": ...} from path in the working directory.
func jsonLoader(path string) func(*invocation) ([]*server, error) {
	return func(inv *invocation) ([]*server, error) {
		m, err := mcpServersFile(inv, path, true)
		if err != nil {
			return nil, err
		}
		return stdServers(path, m)
	}
}
