// Package mcpserver is agentctl's in-process MCP endpoint: the tool registry
// (the single source of truth for what is served), the naming contract
// (presentation and routing of tool names), the built-in tools, and the
// receiving middleware that applies an instance's naming capability before
// the SDK looks a tool up, validates, logs or dispatches.
//
// The shortest use:
//
//	ep, err := mcpserver.New(mcpserver.Config{ServerName: "agentctl", Naming: naming, Store: st, Instance: info})
//	err = ep.Run(ctx, &mcp.StdioTransport{})
//
// The naming functions [PresentToolName] and [RouteToolCall] are pure.
package mcpserver
