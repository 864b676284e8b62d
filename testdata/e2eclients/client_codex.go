package main

// Codex talks the OpenAI Responses API (proto_openai.go) through a custom
// model provider in the user's configuration ($CODEX_HOME/config.toml, here
// the throwaway HOME's ~/.codex). agentctl adds its MCP server with per-run
// -c overrides, so this file is the user's own configuration, untouched.
//
// Codex 0.171.0 declares an MCP server's tools to the model as one tool of
// type "namespace" named mcp__{server}, holding functions named {tool}; the
// fake model shows such a tool as mcp__agentctl/ask_user_question_agentctl
// and calls it back as a function_call carrying that namespace.

import (
	"fmt"
	"os"
	"path/filepath"
)

func init() {
	registerClient(Client{
		ID:       "codex",
		Package:  "@openai/codex",
		Version:  "0.171.0",
		Bin:      "codex",
		Protocol: "openai-responses",
		Setup:    codexSetup,
	})
}

// codexKeyEnv is the variable the fake provider's API key is read from.
const codexKeyEnv = "E2E_FAKE_OPENAI_KEY"

func codexSetup(e *RunEnv) error {
	e.Setenv(codexKeyEnv, "sk-e2e-fake-key")
	config := fmt.Sprintf(`model = %q
model_provider = "e2e"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.e2e]
name = "E2E fake model"
base_url = %q
wire_api = "responses"
env_key = %q
`, fakeModelID, e.ModelURL+"/v1", codexKeyEnv)
	dir := filepath.Join(e.Home, ".codex")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o600)
}
