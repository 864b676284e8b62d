package main

// Claude Code against the fake Anthropic Messages API. Claude Code defers MCP
// tools behind its ToolSearch tool by default (its model loads them with a
// tool_reference), also with a custom ANTHROPIC_BASE_URL; ENABLE_TOOL_SEARCH
// forces that on (true) or off (false), so the three runs cover both ways the
// ask tool can reach the model.

func init() {
	for _, toolSearch := range []string{"", "true", "false"} {
		c := Client{
			ID:       "claude-code",
			Package:  "@anthropic-ai/claude-code",
			Version:  "2.1.332",
			Bin:      "claude",
			Protocol: "anthropic",
			Setup:    claudeCodeSetup(toolSearch),
			KnownIssue: "Claude Code announces MCP elicitation; an agentctl that hands the question to the client " +
				"rather than to `instance questions` in a headless run gets \"cancelled\" back from a -p Claude Code",
		}
		if toolSearch != "" {
			c.Variant = "ENABLE_TOOL_SEARCH=" + toolSearch
		}
		registerClient(c)
	}
}

func claudeCodeSetup(toolSearch string) func(e *RunEnv) error {
	return func(e *RunEnv) error {
		e.Setenv("ANTHROPIC_BASE_URL", e.ModelURL)
		e.Setenv("ANTHROPIC_API_KEY", "sk-ant-e2e-fake-key")
		// No telemetry, error reports, update checks or other calls home.
		e.Setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
		e.Setenv("DISABLE_AUTOUPDATER", "1")
		e.Setenv("DISABLE_TELEMETRY", "1")
		e.Setenv("DISABLE_ERROR_REPORTING", "1")
		if toolSearch != "" {
			e.Setenv("ENABLE_TOOL_SEARCH", toolSearch)
		}
		return nil
	}
}
