package main

// Kilo Code CLI is a fork of OpenCode (see client_opencode.go) and is pointed
// at the fake model the same way, in its own user configuration
// ($XDG_CONFIG_HOME/kilo/kilo.json) and with its own variable names
// (KILO_*, where OpenCode has OPENCODE_*). Kilo reads the file named by
// KILO_CONFIG, not OPENCODE_CONFIG (no OPENCODE_CONFIG in the 7.7.7 binary):
// with OPENCODE_CONFIG the model is sent Kilo's own tools and none of
// agentctl's. 7.7.7 is pinned because 7.8.1 does not install (a platform
// package is missing from the registry).

func init() {
	registerClient(Client{
		ID:       "kilo",
		Package:  "@kilocode/cli",
		Version:  "7.7.7",
		Bin:      "kilo",
		Protocol: "openai-chat",
		Setup: func(e *RunEnv) error {
			e.Setenv("KILO_DISABLE_MODELS_FETCH", "1")
			e.Setenv("KILO_DISABLE_AUTOUPDATE", "1")
			e.Setenv("KILO_DISABLE_LSP_DOWNLOAD", "1")
			return writeOpenCodeUserConfig(e, "kilo", "kilo.json")
		},
	})
}
