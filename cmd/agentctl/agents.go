package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/agents"
	"github.com/spf13/cobra"
)

// NewCmdAgents is `agentctl agents`, the group of the agent-definition commands.
func NewCmdAgents(f *Factory, line cmdLine) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "List and show agent definitions (the clients agentctl knows)",
		Long: `Agent definitions describe coding-agent clients, above all how each one renames MCP
tools before its model sees them. The catalog is built into agentctl; TOML files in
the agents directory ($XDG_CONFIG_HOME/agentctl/agents/*.toml, or --agents-dir) add
new ids or override catalog ids. A user file is decoded strictly: an unknown key or
a bad value is an error naming the file, the line and the key.`,
	}
	line.add(cmd,
		sub{[]string{"list"}, func(cmdLine) *cobra.Command { return NewCmdAgentsList(f, nil) }},
		sub{[]string{"show"}, func(cmdLine) *cobra.Command { return NewCmdAgentsShow(f, nil) }})
	return cmd
}

// problemsError reports broken user files after the rest was printed:
// every one, or, given ids, those meant to define one of them.
func problemsError(cat *agents.Catalog, ids ...string) error {
	probs := cat.Problems()
	if len(ids) > 0 {
		probs = slices.DeleteFunc(slices.Clone(probs), func(p *agents.FileProblem) bool { return !slices.Contains(ids, p.ID) })
	}
	if len(probs) == 0 {
		return nil
	}
	msgs := make([]string, len(probs))
	for i, p := range probs {
		msgs[i] = p.Error()
	}
	return &configError{fmt.Errorf("%d agent definition file(s) could not be used and were left out:\n  %s", len(probs), strings.Join(msgs, "\n  "))}
}

// completeAgentIDs completes agent ids, with their names, after the
// completions extra ("all\tevery agent" for a flag that takes it).
func completeAgentIDs(f *Factory, extra ...string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		_ = f.Config.load(cmd.Flags())
		cat, err := f.Catalog()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		out := slices.Clone(extra)
		for _, d := range cat.Definitions() {
			out = append(out, d.ID+"\t"+d.Name)
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
