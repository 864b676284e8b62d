package main

// Gemini CLI talks the Gemini API (proto_gemini.go). GOOGLE_GEMINI_BASE_URL
// points its @google/genai SDK at the fake API; with that variable alone it
// picks the "gateway" auth type, which headless runs refuse ("Invalid auth
// method selected."), so the user settings select the API-key type, and
// GEMINI_API_KEY is any non-empty string.
//
// agentctl hands Gemini its MCP server in the system settings file
// (GEMINI_CLI_SYSTEM_SETTINGS_PATH). Gemini 0.61.0 skips that file, with a
// "Security Warning: Skipping system settings file" on stderr, unless the file
// and every directory above it are owned by root and not writable by group or
// others (under /tmp it never is: /tmp is world-writable). So the run works only
// as root, with the agentctl state directory outside /tmp.

import (
	"encoding/json"
	"os"
	"path/filepath"
)

func init() {
	registerClient(Client{
		ID:       "gemini",
		Package:  "@google/gemini-cli",
		Version:  "0.61.0",
		Bin:      "gemini",
		Protocol: "gemini",
		Setup:    setupGemini,
		KnownIssue: "Gemini 0.61.0 skips the GEMINI_CLI_SYSTEM_SETTINGS_PATH file (agentctl's MCP entry) unless it and " +
			"every directory above it are owned by root and not group/other-writable: only root, outside /tmp",
	})
}

func setupGemini(e *RunEnv) error {
	settings := map[string]any{
		"security": map[string]any{
			"auth":        map[string]any{"selectedType": "gemini-api-key"},
			"folderTrust": map[string]any{"enabled": false},
		},
		"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"ide":       map[string]any{"enabled": false},
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Join(e.Home, ".gemini")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), append(b, '\n'), 0o600); err != nil {
		return err
	}
	e.Setenv("GEMINI_API_KEY", "e2e-fake-key")
	e.Setenv("GOOGLE_GEMINI_BASE_URL", e.ModelURL)
	return nil
}
