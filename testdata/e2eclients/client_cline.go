package main

// Cline CLI talks OpenAI Chat Completions (proto_openai.go) through its
// "openai-compatible" provider, configured in the user's provider settings
// (~/.cline/data/settings/providers.json, what `cline auth openai-compatible
// -k KEY -m MODEL -b URL` writes). agentctl passes its MCP entry in the file
// CLINE_MCP_SETTINGS_PATH names.

import "path/filepath"

func init() {
	registerClient(Client{
		ID:       "cline",
		Package:  "cline",
		Version:  "3.0.65",
		Bin:      "cline",
		Protocol: "openai-chat",
		Setup:    clineSetup,
		KnownIssue: "`cline -y` (3.0.65) ends a run only when the model calls its terminal tool submit_and_exit; " +
			"after a plain text answer it appends \"[SYSTEM] This run is not complete until you call one of these " +
			"terminal completion tools: submit_and_exit\" and asks the model again",
	})
}

func clineSetup(e *RunEnv) error {
	const provider = "openai-compatible"
	providers := map[string]any{
		"version":          1,
		"lastUsedProvider": provider,
		"modes":            map[string]any{},
		"providers": map[string]any{
			provider: map[string]any{
				"settings": map[string]any{
					"provider": provider,
					"apiKey":   "sk-e2e-fake-key",
					"model":    fakeModelID,
					"baseUrl":  e.ModelURL + "/v1",
				},
				"updatedAt":   "2026-01-01T00:00:00.000Z",
				"tokenSource": "manual",
			},
		},
	}
	return writeJSONFile(filepath.Join(e.Home, ".cline", "data", "settings", "providers.json"), providers)
}
