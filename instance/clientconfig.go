package instance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/agentctl/agentctl/agents"
)

// ServerEntry is what a client needs to start the endpoint (Command,
// Args, Env: stdio) or to reach it (URL, Headers: streamable HTTP, when URL
// is set).
type ServerEntry struct {
	Command string
	Args    []string
	Env     map[string]string
	// URL, when set, makes the entry a remote server's: the client
	// connects to it instead of starting Command.
	URL string
	// Headers are sent with every request to URL: the instance's token
	// as "Authorization: Bearer T". A file holding them is written 0600.
	Headers map[string]string
	// Trust marks the server trusted where the client supports it (Gemini CLI,
	// Qwen Code): their headless runs ignore an untrusted server's tools.
	Trust bool
	// ToolTimeout is how long the client lets one tool call run, written
	// for the clients that have such a setting (Codex, Gemini CLI, Qwen
	// Code, Cline, Goose); 0 writes none (Goose: its 300 s). [Store.CreateInstance]
	// sets it to the question timeout plus [ToolTimeoutMargin], so that
	// ask_user_question is never cut off by the client.
	ToolTimeout time.Duration
}

// ToolTimeoutMargin is what a client's tool-call timeout adds to the
// instance's question timeout: time for the answer to travel back.
const ToolTimeoutMargin = time.Minute

// ToolTimeoutFor is the tool-call timeout written for an instance whose
// questions wait up to question: question plus [ToolTimeoutMargin], or 0
// (none written) when question is 0.
func ToolTimeoutFor(question time.Duration) time.Duration {
	if question <= 0 {
		return 0
	}
	return question + ToolTimeoutMargin
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

// ClientEntry is the server's own entry as the client of format reads it:
// the value under the key server in the client's map of servers (for codex
// the contents of the [mcp_servers.S] table; for goose the extension under
// extensions.S; for continue one item of its mcpServers list). Callers that
// write a whole configuration ([WriteClientConfig]) or merge into a user's
// file ([Connect]) build on it, so both carry the same entry.
func ClientEntry(format, server string, e ServerEntry) (map[string]any, error) {
	if _, ok := clientFiles[format]; !ok {
		return nil, invalidf("unknown MCP config format %q (want one of %s)", format, strings.Join(slices.Sorted(maps.Keys(clientFiles)), ", "))
	}
	if e.URL != "" {
		return remoteEntry(format, server, e), nil
	}
	args := e.Args
	if args == nil {
		args = []string{}
	}
	std := map[string]any{"command": e.Command, "args": args}
	if len(e.Env) > 0 {
		std["env"] = e.Env
	}
	switch format {
	case "claude-code", "vscode":
		std["type"] = "stdio"
	case "copilot-cli":
		// Copilot CLI's mcp-config.json: "local" (or "stdio") starts a
		// process; "tools" says which of its tools may be used, "*" all.
		std["type"] = "local"
		std["tools"] = []string{"*"}
	case "gemini", "qwen-code":
		if e.Trust {
			std["trust"] = true
		}
		if e.ToolTimeout > 0 {
			std["timeout"] = e.ToolTimeout.Milliseconds()
		}
	case "cline":
		if e.ToolTimeout > 0 {
			std["timeout"] = ceilSeconds(e.ToolTimeout)
		}
	case "codex":
		if e.ToolTimeout > 0 {
			std["tool_timeout_sec"] = ceilSeconds(e.ToolTimeout)
		}
	case "grok":
		tr := map[string]any{"type": "stdio", "command": e.Command, "args": args}
		if len(e.Env) > 0 {
			tr["env"] = e.Env
		}
		return map[string]any{"name": server, "transport": tr}, nil
	case "opencode":
		// timeout (ms) is the server's own, read by OpenCode since
		// anomalyco/opencode#8701 (before, only the global
		// experimental.mcp_timeout, which Kilo's schema may not know).
		entry := map[string]any{"type": "local", "command": append([]string{e.Command}, args...), "enabled": true}
		if len(e.Env) > 0 {
			entry["environment"] = e.Env
		}
		if e.ToolTimeout > 0 {
			entry["timeout"] = e.ToolTimeout.Milliseconds()
		}
		return entry, nil
	case "goose":
		timeout := int64(300) // Goose's own default
		if e.ToolTimeout > 0 {
			timeout = ceilSeconds(e.ToolTimeout)
		}
		return map[string]any{"name": server, "type": "stdio", "enabled": true, "cmd": e.Command, "args": args, "timeout": timeout}, nil
	case "continue":
		return map[string]any{"name": server, "command": e.Command, "args": args}, nil
	}
	return std, nil
}

// remoteEntry is [ClientEntry] for a server reached over streamable HTTP,
// in each client's own words for a remote server with headers.
func remoteEntry(format, server string, e ServerEntry) map[string]any {
	headers := e.Headers
	if headers == nil {
		headers = map[string]string{}
	}
	std := map[string]any{"url": e.URL, "headers": headers}
	switch format {
	case "claude-code", "vscode", "auggie", "droid", "mcp-servers-json":
		std["type"] = "http"
	case "copilot-cli":
		std["type"] = "http"
		std["tools"] = []string{"*"}
	case "cursor", "kiro":
		// A url makes the entry remote; no type.
	case "gemini", "qwen-code":
		// httpUrl is streamable HTTP ("url" would be the older SSE).
		std = map[string]any{"httpUrl": e.URL, "headers": headers}
		if e.Trust {
			std["trust"] = true
		}
		if e.ToolTimeout > 0 {
			std["timeout"] = e.ToolTimeout.Milliseconds()
		}
	case "cline":
		std["type"] = "streamableHttp"
		if e.ToolTimeout > 0 {
			std["timeout"] = ceilSeconds(e.ToolTimeout)
		}
	case "codex":
		// Codex reads literal headers from http_headers ("headers" is
		// ignored); bearer_token_env_var and env_http_headers would need
		// the user to export the token before every start.
		std = map[string]any{"url": e.URL, "http_headers": headers}
		if e.ToolTimeout > 0 {
			std["tool_timeout_sec"] = ceilSeconds(e.ToolTimeout)
		}
	case "grok":
		return map[string]any{"name": server, "transport": map[string]any{"type": "http", "url": e.URL, "headers": headers}}
	case "opencode":
		r := map[string]any{"type": "remote", "url": e.URL, "headers": headers, "enabled": true}
		if e.ToolTimeout > 0 {
			r["timeout"] = e.ToolTimeout.Milliseconds()
		}
		return r
	case "goose":
		timeout := int64(300)
		if e.ToolTimeout > 0 {
			timeout = ceilSeconds(e.ToolTimeout)
		}
		return map[string]any{"name": server, "type": "streamable_http", "enabled": true, "uri": e.URL, "headers": headers, "timeout": timeout}
	case "continue":
		return map[string]any{"name": server, "type": "streamable-http", "url": e.URL, "requestOptions": map[string]any{"headers": headers}}
	}
	return std
}

// ceilSeconds is d in whole seconds, rounded up, so that a timeout written
// in seconds is never shorter than d.
func ceilSeconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}

// ServersKey is where the client of format keeps its servers in its
// configuration file: "mcpServers" for most, "servers" for VS Code, "mcp"
// for OpenCode, "mcp_servers" for Codex, "extensions" for Goose.
func ServersKey(format string) string {
	switch format {
	case "vscode":
		return "servers"
	case "opencode":
		return "mcp"
	case "codex":
		return "mcp_servers"
	case "goose":
		return "extensions"
	}
	return "mcpServers"
}

// WriteClientConfig writes the client's native MCP configuration into dir so
// that the client starts entry under the key server. It returns the path
// written, relative to dir.
func WriteClientConfig(dir, format, server string, e ServerEntry) (string, error) {
	entry, err := ClientEntry(format, server, e)
	if err != nil {
		return "", err
	}
	var data []byte
	switch format {
	case "opencode":
		data, err = marshalJSON(map[string]any{"$schema": "https://opencode.ai/config.json", "mcp": map[string]any{server: entry}})
	case "codex":
		var b bytes.Buffer
		err = toml.NewEncoder(&b).Encode(map[string]any{"mcp_servers": map[string]any{server: entry}})
		data = b.Bytes()
	case "goose":
		if e.URL != "" {
			data = []byte(gooseRemote(server, entry))
			break
		}
		data = []byte(fmt.Sprintf("extensions:\n  %s:\n    name: %s\n    type: stdio\n    enabled: true\n    cmd: %s\n    args: %s\n    timeout: %d\n",
			yamlString(server), yamlString(server), yamlString(e.Command), yamlList(entry["args"].([]string)), entry["timeout"]))
	case "continue":
		if e.URL != "" {
			data = []byte(continueRemoteBlock(server, e.URL, e.Headers))
			break
		}
		data = []byte(continueBlock(server, e.Command, entry["args"].([]string)))
	default:
		data, err = marshalJSON(map[string]any{ServersKey(format): map[string]any{server: entry}})
	}
	if err != nil {
		return "", err
	}
	rel := clientFiles[format]
	path := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, data, configMode(e)); err != nil {
		return "", err
	}
	return rel, nil
}

// configMode is the mode of a configuration file holding e: 0600 when it
// holds headers (the instance's token), else 0644.
func configMode(e ServerEntry) os.FileMode {
	if len(e.Headers) > 0 {
		return 0o600
	}
	return 0o644
}

// gooseRemote is Goose's config.yaml with the one streamable HTTP
// extension of entry (from [remoteEntry]).
func gooseRemote(server string, entry map[string]any) string {
	return fmt.Sprintf("extensions:\n  %s:\n    name: %s\n    type: streamable_http\n    enabled: true\n    uri: %s\n    headers:%s\n    timeout: %d\n",
		yamlString(server), yamlString(server), yamlString(entry["uri"].(string)), yamlMap(entry["headers"].(map[string]string), "      "), entry["timeout"])
}

// continueRemoteBlock is [continueBlock] for a streamable HTTP server, its
// headers under requestOptions.
func continueRemoteBlock(server, url string, headers map[string]string) string {
	return fmt.Sprintf("name: agentctl\nversion: 0.0.1\nschema: v1\nmcpServers:\n  - name: %s\n    type: streamable-http\n    url: %s\n    requestOptions:\n      headers:%s\n",
		yamlString(server), yamlString(url), yamlMap(headers, "        "))
}

// yamlMap writes m as a YAML block mapping, one key a line indented by
// indent (sorted), or " {}" when empty.
func yamlMap(m map[string]string, indent string) string {
	if len(m) == 0 {
		return " {}"
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString("\n" + indent + yamlString(k) + ": " + yamlString(m[k]))
	}
	return b.String()
}

// continueBlock is a Continue configuration (config.yaml, or a block file
// under .continue/mcpServers/) holding the one server.
func continueBlock(server, command string, args []string) string {
	return fmt.Sprintf("name: agentctl\nversion: 0.0.1\nschema: v1\nmcpServers:\n  - name: %s\n    command: %s\n    args: %s\n",
		yamlString(server), yamlString(command), yamlList(args))
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

// ToolTimeoutWarning is what `instance create` says when the definition's
// client cannot be told to wait as long as a question may (its
// [agents.MCPConfig.ToolTimeoutMax] is below [ToolTimeoutFor] question), or
// "" when it can. [Store.CreateInstance] then writes the client's maximum.
func ToolTimeoutWarning(def *agents.Definition, question time.Duration) string {
	return timeoutWarning(def.ID, "", time.Duration(def.MCP.ToolTimeoutMax), question,
		"lower --question-timeout to %[1]s or less")
}

// RunToolTimeoutWarning is what `instance run` says when the client its
// recipe starts cannot be told how long a tool call may take, and lets one
// take less than a question may wait ([agents.Run.ToolTimeout]), or "".
func RunToolTimeoutWarning(def *agents.Definition, question time.Duration) string {
	return timeoutWarning(def.ID, ", as `instance run` starts it (it cannot be told otherwise),", time.Duration(def.Run.ToolTimeout), question,
		"create the instance with --question-timeout %[1]s or less, or start %[2]s yourself with the server from the instance's configuration, which sets a longer timeout")
}

// timeoutWarning says that agent id's client (with how it is started, if
// that matters) lets a tool call run at most limit, less than a question of
// this timeout may wait, and what to do (fix, given the longest question
// timeout that fits and id); "" when it fits.
func timeoutWarning(id, how string, limit, question time.Duration, fix string) string {
	client := id + how
	need := ToolTimeoutFor(question)
	if limit <= 0 || need <= limit {
		return ""
	}
	if limit <= ToolTimeoutMargin {
		return fmt.Sprintf("warning: %s lets a tool call run at most %s, less than the %s an answer needs to travel: ask_user_question cannot wait for an answer with this client",
			client, limit, ToolTimeoutMargin)
	}
	fits := limit - ToolTimeoutMargin
	return fmt.Sprintf("warning: %s lets a tool call run at most %s, but ask_user_question may wait %s (question timeout %s plus %s for the answer to travel): "+
		"an answer after %s would be cut off; %s", client, limit, need, question, ToolTimeoutMargin, fits, fmt.Sprintf(fix, fits, id))
}

// ClientToolTimeout is the tool-call timeout written for def's client:
// [ToolTimeoutFor] question, at most the client's
// [agents.MCPConfig.ToolTimeoutMax] (a Node client given a longer one would
// fire it at once).
func ClientToolTimeout(def *agents.Definition, question time.Duration) time.Duration {
	t := ToolTimeoutFor(question)
	if limit := time.Duration(def.MCP.ToolTimeoutMax); limit > 0 && t > limit {
		t = limit
	}
	return t
}
