package main

// Continue CLI (cn) talks OpenAI Chat Completions (proto_openai.go) through a
// model with provider "openai" and apiBase in the user's configuration
// (~/.continue/config.yaml). CONTINUE_CLI_ENABLE_TELEMETRY=0 turns its
// telemetry off.

import (
	"fmt"
	"os"
	"path/filepath"
)

func init() {
	registerClient(Client{
		ID:       "continue",
		Package:  "@continuedev/cli",
		Version:  "1.5.47",
		Bin:      "cn",
		Protocol: "openai-chat",
		Setup:    continueSetup,
		KnownIssue: "`cn --config FILE` uses FILE alone, and the file agentctl writes holds only its mcpServers entry, " +
			"so the user's models are not loaded: cn 1.5.47 exits 1 with \"No model specified in headless mode " +
			"(and failed to load default model)\"",
	})
}

func continueSetup(e *RunEnv) error {
	e.Setenv("CONTINUE_CLI_ENABLE_TELEMETRY", "0")
	config := fmt.Sprintf(`name: e2e
version: 0.0.1
schema: v1
models:
  - name: E2E fake model
    provider: openai
    model: %s
    apiBase: %s
    apiKey: sk-e2e-fake-key
    roles: [chat, edit, apply]
    capabilities: [tool_use]
`, fakeModelID, e.ModelURL+"/v1")
	dir := filepath.Join(e.Home, ".continue")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(config), 0o600)
}
