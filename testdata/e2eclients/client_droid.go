package main

// Factory Droid against the fake Anthropic Messages API, as a BYOK custom
// model in ~/.factory/settings.json, made the session default so that
// `droid exec` needs no --model.
//
// The package pinned is the linux-x64 binary itself: @factory/cli@0.225.1
// (the only version of the wrapper on npm) installs a shim that looks for
// @factory/cli-linux-x64@0.225.1, which npm does not have; the platform
// package's only 0.225 release is 0.225.2.

import (
	"encoding/json"
	"os"
	"path/filepath"
)

func init() {
	registerClient(Client{
		ID:       "droid",
		Package:  "@factory/cli-linux-x64",
		Version:  "0.225.2",
		Bin:      "bin/droid",
		Protocol: "anthropic",
		Setup:    droidSetup,
	})
}

// droidModelID is how droid names the first custom model with display name
// E2E-Fake: custom:<display name>-<index>.
const droidModelID = "custom:E2E-Fake-0"

func droidSetup(e *RunEnv) error {
	settings := map[string]any{
		"customModels": []any{map[string]any{
			"model":           anthropicModelID,
			"displayName":     "E2E-Fake",
			"baseUrl":         e.ModelURL,
			"apiKey":          "sk-e2e-fake-key",
			"provider":        "anthropic",
			"maxOutputTokens": 8192,
		}},
		"sessionDefaultSettings": map[string]any{"model": droidModelID},
		// No session uploads to Factory's cloud. (Its organization settings
		// and feature flags it still asks for, and does without offline.)
		"cloudSessionSync": false,
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Join(e.Home, ".factory")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "settings.json"), b, 0o600)
}
