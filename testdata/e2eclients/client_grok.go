package main

// Grok CLI talks OpenAI Chat Completions (proto_openai.go), not streaming in
// headless mode, pointed at the fake model by GROK_BASE_URL, GROK_API_KEY and
// GROK_MODEL. It reads MCP servers only from the workspace's
// .grok/settings.json, which the harness fills with `agentctl instance
// connect` as the agent definition tells a user to.

func init() {
	registerClient(Client{
		ID:       "grok",
		Package:  "@vibe-kit/grok-cli",
		Version:  "0.0.34",
		Bin:      "grok",
		Protocol: "openai-chat",
		Setup: func(e *RunEnv) error {
			e.Setenv("GROK_BASE_URL", e.ModelURL+"/v1")
			e.Setenv("GROK_API_KEY", "xai-e2e-fake-key")
			e.Setenv("GROK_MODEL", fakeModelID)
			return nil
		},
		KnownIssue: "Grok CLI 0.0.34 starts its MCP servers in the background and `grok -p` takes its tool list once, " +
			"before they are up, so its model never sees an MCP tool; with a stdio server configured `grok -p` does " +
			"not exit after printing its answer (nothing closes the server's stdio); and its \"http\" transport posts " +
			"JSON-RPC to URL/rpc (404 from agentctl serve), while its \"streamable_http\" transport only throws",
	})
}
