// Package mount is the one model of what an instance mounts into its
// endpoint's namespace: knowledge bases (served in-process) and external MCP
// servers (proxied), and the pure prefix contract that names their tools.
//
// A [Mount] is what a user configures: a [[kbs]] or [[mcp_servers]] table
// of the config file, a --kb, --mcp or --mcp-json flag, and the "mounts" of
// an instance record all decode into it. [Resolve] applies the prefix
// contract to a whole set of mounts and gives each its effective prefix and
// where that prefix came from ([Resolved]):
//
//	resolved, err := mount.Resolve("agentctl", mount.PrefixModeMountName, []mount.Mount{
//		{Kind: mount.KindKB, Name: "Team Notes", Path: "/srv/notes"},
//		{Kind: mount.KindServer, Name: "browser", Command: "npx", Args: []string{"@playwright/mcp"}},
//	})
//	// resolved[0].ToolName("concept_read") == "team_notes__concept_read"
//
// The package does no I/O: whether a knowledge base's folder exists or a
// server's command can be started is checked by those who open them.
package mount
