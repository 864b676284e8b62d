package main

// GitHub Copilot CLI reaches the fake model as a BYOK provider: with
// COPILOT_PROVIDER_BASE_URL set it talks OpenAI Chat Completions (the default
// COPILOT_PROVIDER_TYPE "openai" and COPILOT_PROVIDER_WIRE_API "completions";
// proto_openai.go) instead of GitHub's model routing, and needs no GitHub
// login. COPILOT_OFFLINE=true skips every other network access (GitHub
// authentication, telemetry, web tools, the GitHub MCP server, auto-update).
// On its first start in a HOME it unpacks its JavaScript into
// $XDG_CACHE_HOME/copilot/pkg (about 235 MB, a second or two).

func init() {
	registerClient(Client{
		ID:       "copilot-cli",
		Package:  "@github/copilot",
		Version:  "1.0.102",
		Bin:      "copilot",
		Protocol: "openai-chat",
		Setup: func(e *RunEnv) error {
			e.Setenv("COPILOT_OFFLINE", "true")
			e.Setenv("COPILOT_AUTO_UPDATE", "false")
			e.Setenv("COPILOT_PROVIDER_BASE_URL", e.ModelURL+"/v1")
			e.Setenv("COPILOT_PROVIDER_TYPE", "openai")
			e.Setenv("COPILOT_PROVIDER_API_KEY", "e2e-fake-key")
			e.Setenv("COPILOT_MODEL", fakeModelID)
			return nil
		},
	})
}
