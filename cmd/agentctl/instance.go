package main

import (
	"errors"
	"slices"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver/mount"
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

// completeOfInstance completes what belongs to the instance args[0] names
// (its mounts, its servers, its open questions): values lists them, each
// as a completion ("value\tdescription"). Nothing when the instance is not
// found.
func completeOfInstance(f *Factory, cmd *cobra.Command, ref string, values func(*instance.Store, *instance.Record) ([]string, error)) ([]string, cobra.ShellCompDirective) {
	_ = f.Config.load(cmd.Flags())
	var out []string
	err := withInstance(cmd.Context(), f.Store, ref, func(st *instance.Store, r *instance.Record) error {
		var err error
		out, err = values(st, r)
		return err
	})
	if err != nil && !errors.Is(err, instance.ErrNotFound) {
		return nil, cobra.ShellCompDirectiveError
	}
	slices.Sort(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeMounts completes `INSTANCE NAME` to an instance, then to its
// mounts' names.
func completeMounts(f *Factory) cobra.CompletionFunc {
	instances := completeInstances(f)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) != 1 {
			return instances(cmd, args, toComplete)
		}
		return completeOfInstance(f, cmd, args[0], func(_ *instance.Store, r *instance.Record) ([]string, error) {
			return mountNames(r, ""), nil
		})
	}
}

// completeServers completes a --server flag to the external servers of the
// instance the first argument names.
func completeServers(f *Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return completeOfInstance(f, cmd, args[0], func(_ *instance.Store, r *instance.Record) ([]string, error) {
			return mountNames(r, mount.KindServer), nil
		})
	}
}

// mountNames is the record's mounts of kind (all with ""), as completions
// described by their kind.
func mountNames(r *instance.Record, kind mount.Kind) []string {
	var out []string
	for _, m := range r.Mounts {
		if kind != "" && m.Kind != kind {
			continue
		}
		what := "external MCP server"
		if m.Kind == mount.KindKB {
			what = "knowledge base " + m.Path
		}
		out = append(out, m.Name+"\t"+what)
	}
	return out
}

// completeOpenQuestions completes `INSTANCE [QUESTION-ID] TEXT` to an
// instance, then to its open questions' ids (described by the question);
// the answer's text is the user's.
func completeOpenQuestions(f *Factory) cobra.CompletionFunc {
	instances := completeInstances(f)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) != 1 {
			return instances(cmd, args, toComplete)
		}
		return completeOfInstance(f, cmd, args[0], func(st *instance.Store, r *instance.Record) ([]string, error) {
			qs, err := st.Questions(cmd.Context(), r.ID, false)
			out := make([]string, len(qs))
			for i, q := range qs {
				out[i] = q.ID + "\t" + questionGist(q.Text)
			}
			return out, err
		})
	}
}
