package main

import "github.com/spf13/cobra"

// NewCmdMCP is `agentctl mcp`, the group of the endpoint's commands.
func NewCmdMCP(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "The MCP endpoint of an instance",
	}
	cmd.AddCommand(NewCmdMCPServe(f, nil))
	return cmd
}
