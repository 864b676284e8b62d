package main

import (
	"errors"
	"slices"

	"github.com/agentctl/agentctl/instance"
	"github.com/spf13/cobra"
)

// NewCmdInstance is `agentctl instance`, the group of the instance commands.
func NewCmdInstance(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "instance",
		Aliases: []string{"instances", "i"},
		Short:   "Create, inspect and talk to agent instances",
		Long: `An instance is one provisioned agent: a durable record that snapshots its client's
capabilities, and a directory holding the client's native MCP configuration, which
starts 'agentctl mcp serve --instance ID'. Commands that take an instance accept its
id, a unique prefix of the id, or its label (--name).`,
	}
	cmd.AddCommand(NewCmdInstanceCreate(f, nil), NewCmdInstanceList(f, nil), NewCmdInstanceShow(f, nil), NewCmdInstanceDelete(f, nil),
		NewCmdInstanceAnswer(f, nil), NewCmdInstanceQuestions(f, nil), NewCmdInstanceEvents(f, nil), NewCmdInstanceWait(f, nil),
		NewCmdInstanceMount(f), NewCmdInstanceRun(f, nil), NewCmdInstanceEnv(f, nil), NewCmdInstanceLogs(f, nil),
		NewCmdInstanceConnect(f, nil), NewCmdInstanceDisconnect(f, nil), NewCmdInstanceToken(f))
	return cmd
}

// completeInstances completes an instance argument to ids (with their
// labels) and labels (with their ids).
func completeInstances(f *Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		_ = f.Config.load(cmd.Flags())
		var out []string
		err := withStore(cmd.Context(), f.Store, func(st *instance.Store) error {
			ids, err := st.IDs(cmd.Context())
			for id, label := range ids {
				out = append(out, id+"\t"+label)
				if label != "" {
					out = append(out, label+"\t"+id)
				}
			}
			return err
		})
		var ns *noStateError
		if err != nil && !errors.As(err, &ns) {
			return nil, cobra.ShellCompDirectiveError
		}
		slices.Sort(out)
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
