package main

import (
	"errors"
	"slices"

	"github.com/agentctl/agentctl/instance"
	"github.com/spf13/cobra"
)

// NewCmdInstance is `agentctl instance`, the group of the instance commands.
func NewCmdInstance(f *Factory, line cmdLine) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "instance",
		Aliases: []string{"instances", "i"},
		Short:   "Create, inspect and talk to agent instances",
		Long: `An instance is one provisioned agent: a durable record that snapshots its client's
capabilities, and a directory holding the client's native MCP configuration, which
starts 'agentctl mcp serve --instance ID'. Commands that take an instance accept its
id, a unique prefix of the id, or its label (--name).`,
	}
	line.add(cmd,
		sub{[]string{"create"}, func(cmdLine) *cobra.Command { return NewCmdInstanceCreate(f, nil) }},
		sub{[]string{"list", "ls"}, func(cmdLine) *cobra.Command { return NewCmdInstanceList(f, nil) }},
		sub{[]string{"show"}, func(cmdLine) *cobra.Command { return NewCmdInstanceShow(f, nil) }},
		sub{[]string{"delete", "rm"}, func(cmdLine) *cobra.Command { return NewCmdInstanceDelete(f, nil) }},
		sub{[]string{"answer"}, func(cmdLine) *cobra.Command { return NewCmdInstanceAnswer(f, nil) }},
		sub{[]string{"questions"}, func(cmdLine) *cobra.Command { return NewCmdInstanceQuestions(f, nil) }},
		sub{[]string{"events"}, func(cmdLine) *cobra.Command { return NewCmdInstanceEvents(f, nil) }},
		sub{[]string{"wait"}, func(cmdLine) *cobra.Command { return NewCmdInstanceWait(f, nil) }},
		sub{[]string{"mount"}, func(l cmdLine) *cobra.Command { return NewCmdInstanceMount(f, l) }},
		sub{[]string{"restart"}, func(cmdLine) *cobra.Command { return NewCmdInstanceRestart(f, nil) }},
		sub{[]string{"run"}, func(cmdLine) *cobra.Command { return NewCmdInstanceRun(f, nil) }},
		sub{[]string{"env"}, func(cmdLine) *cobra.Command { return NewCmdInstanceEnv(f, nil) }},
		sub{[]string{"logs"}, func(cmdLine) *cobra.Command { return NewCmdInstanceLogs(f, nil) }},
		sub{[]string{"connect"}, func(cmdLine) *cobra.Command { return NewCmdInstanceConnect(f, nil) }},
		sub{[]string{"disconnect"}, func(cmdLine) *cobra.Command { return NewCmdInstanceDisconnect(f, nil) }},
		sub{[]string{"token"}, func(l cmdLine) *cobra.Command { return NewCmdInstanceToken(f, l) }})
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
