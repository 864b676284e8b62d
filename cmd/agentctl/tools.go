package main

import (
	"context"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/cmd/internal/provision"
	"github.com/agentctl/agentctl/cmd/internal/serving"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// NewCmdTools is `agentctl tools`: the names each client's model will see.
func NewCmdTools(f *Factory, line cmdLine) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tools <command>",
		Short: "Preview and check the tool names each client's model will see",
		Long: `See, before anything runs, the exact tool names a client's model will see for an
instance (--instance) or for one that 'instance create' would make (--agent with
the same mount flags; nothing is written), and check them in CI.`,
	}
	line.add(cmd,
		sub{[]string{"list"}, func(cmdLine) *cobra.Command { return NewCmdToolsList(f, nil) }},
		sub{[]string{"lint"}, func(cmdLine) *cobra.Command { return NewCmdToolsLint(f, nil) }})
	return cmd
}

// agentAll is the --agent value that means every agent definition in force.
const agentAll = serving.AllAgents

// ToolsTarget is what `tools list` and `tools lint` describe: an instance
// (Instance), or a hypothetical one from the create flags, for one agent,
// every agent ([agentAll]) or, with an instance, its own capability.
type ToolsTarget struct {
	Instance string
	Agent    string
	// The create flags, for a hypothetical instance.
	ServerName string
	PrefixMode mount.PrefixMode
	Mounts     []mount.Mount
	// Connect lists the external servers' tools: each is started or
	// dialled, as `mcp serve` would, and stopped again.
	Connect bool
}

// toolsAgents is the agents described, for a filter of [problemsError]:
// none (every one) for --agent all.
func toolsAgents(t *ToolsTarget, reports []toolsReport) []string {
	if t.Agent == agentAll {
		return nil
	}
	ids := make([]string, 0, len(reports))
	for _, r := range reports {
		ids = append(ids, r.Agent)
	}
	return ids
}

// registerToolsTarget adds the flags that choose a [ToolsTarget]: --instance,
// --agent, --connect and the create flags.
func registerToolsTarget(f *Factory, cmd *cobra.Command, t *ToolsTarget, mounts *mountFlags) {
	fl := cmd.Flags()
	fl.StringVar(&t.Instance, "instance", "", "an instance: id, id prefix or label")
	fl.StringVar(&t.Agent, "agent", "", `an agent id, or "all" for every agent side by side (with --instance: instead of the instance's own)`)
	fl.BoolVar(&t.Connect, "connect", false, "start or dial the external MCP servers to list their tools, then stop them (default true with --instance)")
	addSettingFlag(fl, keyServerName)
	mounts.register(fl)
	addSettingFlag(fl, keyToolPrefixMode)
	_ = cmd.RegisterFlagCompletionFunc("instance", completeInstances(f))
	_ = cmd.RegisterFlagCompletionFunc("agent", completeAgentIDs(f, agentAll+"\tevery agent, side by side"))
	_ = cmd.RegisterFlagCompletionFunc("tool-prefix-mode", cobra.FixedCompletions([]string{"mount-name", "off"}, cobra.ShellCompDirectiveNoFileComp))
}

// resolveToolsTarget fills t from the settings once the flags are parsed.
func resolveToolsTarget(f *Factory, fl *pflag.FlagSet, t *ToolsTarget, mounts *mountFlags) error {
	if t.Instance == "" && t.Agent == "" {
		return usageErrorf("say what to describe: --instance ID, or --agent ID (or --agent all) with the mount flags of 'instance create'")
	}
	if !fl.Changed("connect") {
		t.Connect = t.Instance != ""
	}
	if t.Instance != "" {
		for _, name := range []string{"kb", "mcp", "mcp-json", "mcp-header", "server-name", "tool-prefix-mode"} {
			if fl.Changed(name) {
				return usageErrorf("--%s describes a hypothetical instance; with --instance the instance's own configuration is used (drop --%s, or --instance for --agent)", name, name)
			}
		}
		return nil
	}
	c := f.Config
	t.ServerName = c.String(keyServerName)
	if err := instance.ValidateServerName(t.ServerName); err != nil {
		return err
	}
	var err error
	if t.PrefixMode, err = c.PrefixMode(); err != nil {
		return err
	}
	fileMounts, err := c.FileMounts()
	if err != nil {
		return err
	}
	if t.Mounts, err = mounts.mounts(fileMounts); err != nil {
		return err
	}
	// What create would refuse is refused here too, the same way: a CI
	// job that lints before it creates must not pass the one and fail the
	// other.
	if t.Mounts, err = provision.CheckFolders(t.Mounts); err != nil {
		return err
	}
	t.Mounts, err = provision.CheckCommands(t.Mounts, "", provision.FromCreateDir)
	return err
}

// toolsReport is one agent's description, as `tools list -o json` prints it.
type toolsReport = serving.ToolsReport

// describeToolsTarget describes t ([serving.DescribeTools]), resolving its
// instance first; stopped waits for the servers started to list tools.
func describeToolsTarget(ctx context.Context, catalog func() (*agents.Catalog, error), open storeOpener, t *ToolsTarget) (reports []toolsReport, stopped func(), err error) {
	target := serving.ToolsTarget{Agent: t.Agent, ServerName: t.ServerName, PrefixMode: t.PrefixMode, Mounts: t.Mounts, Connect: t.Connect, Version: version}
	if t.Instance != "" {
		err := withInstance(ctx, open, t.Instance, func(_ *instance.Store, r *instance.Record) error {
			target.Record = r
			return nil
		})
		if err != nil {
			return nil, func() {}, err
		}
	}
	return serving.DescribeTools(ctx, catalog, &target)
}
