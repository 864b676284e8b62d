package main

// Qwen Code talks OpenAI Chat Completions (proto_openai.go), pointed at the
// fake model by OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL. agentctl
// passes its MCP entry in the system settings file
// (QWEN_CODE_SYSTEM_SETTINGS_PATH); the user's settings (~/.qwen/settings.json)
// turn off telemetry, usage statistics and the update check.
//
// Qwen Code 0.24.4 defers MCP tools by default: the model sees only a
// tool_search tool, whose result lists the deferred tools, and a tool_call
// tool that invokes one by name; the ask tool itself is never declared. The
// second run turns that off (tools.toolSearch.enabled = false), and the ask
// tool is declared as mcp__agentctl__ask_user_question_agentctl.

import (
	"encoding/json"
	"os"
	"path/filepath"
)

func init() {
	for _, toolSearch := range []bool{true, false} {
		c := Client{
			ID:       "qwen-code",
			Package:  "@qwen-code/qwen-code",
			Version:  "0.24.4",
			Bin:      "qwen",
			Protocol: "openai-chat",
			Setup:    qwenCodeSetup(toolSearch),
		}
		if toolSearch {
			c.KnownIssue = "Qwen Code 0.24.4 declares deferred MCP tools only through tool_search (whose result lists them) " +
				"and tool_call {name, arguments} (which invokes one): the ask tool itself is never declared"
		} else {
			c.Variant = "tools.toolSearch.enabled=false"
		}
		registerClient(c)
	}
}

func qwenCodeSetup(toolSearch bool) func(e *RunEnv) error {
	return func(e *RunEnv) error {
		e.Setenv("OPENAI_BASE_URL", e.ModelURL+"/v1")
		e.Setenv("OPENAI_API_KEY", "sk-e2e-fake-key")
		e.Setenv("OPENAI_MODEL", fakeModelID)
		settings := map[string]any{
			"general":   map[string]any{"enableAutoUpdate": false},
			"privacy":   map[string]any{"usageStatisticsEnabled": false},
			"telemetry": map[string]any{"enabled": false},
		}
		if !toolSearch {
			settings["tools"] = map[string]any{"toolSearch": map[string]any{"enabled": false}}
		}
		return writeJSONFile(filepath.Join(e.Home, ".qwen", "settings.json"), settings)
	}
}

// writeJSONFile writes v as indented JSON to path (mode 0600), making its
// directory (mode 0700).
func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}
