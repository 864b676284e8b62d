package main

import "github.com/spf13/cobra"

// NewCmdMCP is `agentctl mcp`, the group of the endpoint's commands.
func NewCmdMCP(f *Factory, line cmdLine) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "The MCP endpoint of an instance",
	}
	line.add(cmd, sub{[]string{"serve"}, func(cmdLine) *cobra.Command { return NewCmdMCPServe(f, nil) }})
	return cmd
}
