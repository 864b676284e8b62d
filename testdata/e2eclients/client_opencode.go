package main

// OpenCode talks OpenAI Chat Completions (proto_openai.go) through a custom
// provider in the user's configuration ($XDG_CONFIG_HOME/opencode/opencode.json)
// whose SDK, @ai-sdk/openai-compatible, is bundled in the binary, so nothing
// is installed at run time. agentctl passes its MCP entry in the file named by
// OPENCODE_CONFIG, which OpenCode merges over the user's configuration: the
// run also checks that the two are merged.
//
// OPENCODE_DISABLE_MODELS_FETCH keeps OpenCode from fetching models.dev (it
// uses the snapshot built into the binary); the other variables turn off the
// update check and language-server downloads.

import (
	"encoding/json"
	"os"
	"path/filepath"
)

func init() {
	registerClient(Client{
		ID:       "opencode",
		Package:  "opencode-ai",
		Version:  "1.18.33",
		Bin:      "opencode",
		Protocol: "openai-chat",
		Setup: func(e *RunEnv) error {
			e.Setenv("OPENCODE_DISABLE_MODELS_FETCH", "1")
			e.Setenv("OPENCODE_DISABLE_AUTOUPDATE", "1")
			e.Setenv("OPENCODE_DISABLE_LSP_DOWNLOAD", "1")
			return writeOpenCodeUserConfig(e, "opencode", "opencode.json")
		},
	})
}

// openCodeProvider is the provider id the fake model is configured under in
// OpenCode's (and Kilo's) configuration; the model is "fake/<fakeModelID>".
const openCodeProvider = "fake"

// writeOpenCodeUserConfig writes an OpenCode-format user configuration
// ($XDG_CONFIG_HOME/DIR/FILE) whose default model is the fake model, reached
// through the bundled OpenAI-compatible provider SDK.
func writeOpenCodeUserConfig(e *RunEnv, dir, file string) error {
	model := openCodeProvider + "/" + fakeModelID
	config := map[string]any{
		"autoupdate":  false,
		"share":       "disabled",
		"model":       model,
		"small_model": model,
		"provider": map[string]any{
			openCodeProvider: map[string]any{
				"npm":  "@ai-sdk/openai-compatible",
				"name": "E2E fake model",
				"options": map[string]any{
					"baseURL": e.ModelURL + "/v1",
					"apiKey":  "e2e-fake-key",
				},
				"models": map[string]any{
					fakeModelID: map[string]any{
						"name":      "E2E fake model",
						"tool_call": true,
						"limit":     map[string]any{"context": 128000, "output": 4096},
					},
				},
			},
		},
	}
	b, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		return err
	}
	configDir := filepath.Join(e.ConfigDir, dir)
	if err := os.MkdirAll(configDir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(configDir, file), append(b, '\n'), 0o600)
}
