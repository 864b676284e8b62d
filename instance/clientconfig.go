package instance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"
)

// ServerEntry is what a client needs to start the endpoint.
type ServerEntry struct {
	Command string
	Args    []string
	Env     map[string]string
	// Trust marks the server trusted where the client supports it (Gemini CLI,
	// Qwen Code): their headless runs ignore an untrusted server's tools.
	Trust bool
}

// clientFiles maps a config format to the file it is written to, relative to
// the instance directory, in the client's native layout.
var clientFiles = map[string]string{
	"auggie":           "mcp.json",
	"claude-code":      ".mcp.json",
	"cline":            "cline_mcp_settings.json",
	"codex":            "codex-home/config.toml",
	"continue":         ".continue/config.yaml",
	"copilot-cli":      "mcp-config.json",
	"cursor":           ".cursor/mcp.json",
	"droid":            ".factory/mcp.json",
	"gemini":           ".gemini/settings.json",
	"grok":             ".grok/settings.json",
	"goose":            "goose/config.yaml",
	"kiro":             ".kiro/settings/mcp.json",
	"mcp-servers-json": "mcp.json",
	"opencode":         "opencode.json",
	"qwen-code":        ".qwen/settings.json",
	"vscode":           ".vscode/mcp.json",
}

// WriteClientConfig writes the client's native MCP configuration into dir so
// that the client starts entry under the key server. It returns the path
// written, relative to dir.
func WriteClientConfig(dir, format, server string, e ServerEntry) (string, error) {
	rel, ok := clientFiles[format]
	if !ok {
		return "", invalidf("unknown MCP config format %q", format)
	}
	if e.Args == nil {
		e.Args = []string{}
	}
	var data []byte
	var err error
	std := map[string]any{"command": e.Command, "args": e.Args}
	if len(e.Env) > 0 {
		std["env"] = e.Env
	}
	switch format {
	case "auggie", "cursor", "kiro", "mcp-servers-json", "droid", "cline", "copilot-cli":
		data, err = marshalJSON(map[string]any{"mcpServers": map[string]any{server: std}})
	case "claude-code":
		std["type"] = "stdio"
		data, err = marshalJSON(map[string]any{"mcpServers": map[string]any{server: std}})
	case "gemini", "qwen-code":
		if e.Trust {
			std["trust"] = true
		}
		data, err = marshalJSON(map[string]any{"mcpServers": map[string]any{server: std}})
	case "grok":
		entry := map[string]any{"name": server, "transport": map[string]any{"type": "stdio", "command": e.Command, "args": e.Args}}
		if len(e.Env) > 0 {
			entry["transport"].(map[string]any)["env"] = e.Env
		}
		data, err = marshalJSON(map[string]any{"mcpServers": map[string]any{server: entry}})
	case "vscode":
		std["type"] = "stdio"
		data, err = marshalJSON(map[string]any{"servers": map[string]any{server: std}})
	case "opencode":
		entry := map[string]any{"type": "local", "command": append([]string{e.Command}, e.Args...), "enabled": true}
		if len(e.Env) > 0 {
			entry["environment"] = e.Env
		}
		data, err = marshalJSON(map[string]any{"$schema": "https://opencode.ai/config.json", "mcp": map[string]any{server: entry}})
	case "codex":
		var b bytes.Buffer
		err = toml.NewEncoder(&b).Encode(map[string]any{"mcp_servers": map[string]any{server: std}})
		data = b.Bytes()
	case "goose":
		data = []byte(fmt.Sprintf("extensions:\n  %s:\n    name: %s\n    type: stdio\n    enabled: true\n    cmd: %s\n    args: %s\n    timeout: 300\n",
			yamlString(server), yamlString(server), yamlString(e.Command), yamlList(e.Args)))
	case "continue":
		data = []byte(fmt.Sprintf("name: agentctl\nversion: 0.0.1\nschema: v1\nmcpServers:\n  - name: %s\n    command: %s\n    args: %s\n",
			yamlString(server), yamlString(e.Command), yamlList(e.Args)))
	}
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", err
	}
	return rel, nil
}

func marshalJSON(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	return append(b, '\n'), err
}

// yamlString quotes s as a YAML double-quoted scalar (a JSON string is one).
func yamlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func yamlList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = yamlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
