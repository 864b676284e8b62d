package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/spf13/cobra"
)

// InstanceShowOptions are the inputs of `instance show`.
type InstanceShowOptions struct {
	IO    *IOStreams
	Store storeOpener

	Instance string
	Output   string
}

// NewCmdInstanceShow is `agentctl instance show`; runF replaces
// [instanceShowRun] in tests.
func NewCmdInstanceShow(f *Factory, runF func(context.Context, *InstanceShowOptions) error) *cobra.Command {
	opts := &InstanceShowOptions{IO: f.IOStreams, Store: f.Store}
	cmd := &cobra.Command{
		Use:   "show INSTANCE",
		Short: "Show an instance record",
		Long:  "Show an instance record, with its latest status, its open questions and its last run. The JSON (-o json) is a contract: fields are added, never renamed; it has the fields of 'instance list -o json': \"status\" (once the instance has reported one), \"open_questions\" and \"last_run\" (once it has run). --jq filters it.",
		Example: `  agentctl instance show fix-login -o json
  agentctl instance show fix-login --jq .capabilities.tool_names
  agentctl instance show fix-login --jq '[.status, .open_questions, .last_run.exit_code]'`,
		Args:              exactArgs(1, "an instance id, id prefix or label"),
		ValidArgsFunction: completeInstances(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Output); err != nil {
				return err
			}
			opts.Instance = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return instanceShowRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output, opts.IO)
	return markQuick(cmd)
}

func instanceShowRun(ctx context.Context, opts *InstanceShowOptions) error {
	return withInstance(ctx, opts.Store, opts.Instance, func(st *instance.Store, r *instance.Record) error {
		l, err := st.Listing(ctx, r)
		if err != nil {
			return err
		}
		if opts.Output == formatJSON {
			l.Record = r.Redacted()
			return opts.IO.PrintJSON(l)
		}
		tn := r.Capabilities.ToolNames
		ex := exampleName(tn, r.ServerName)
		fields := [][2]string{
			{"id", r.ID}, {"name", orDash(r.Name)}, {"agent", r.Agent},
			{"created", r.CreatedAt.Format(time.RFC3339)}, {"host", orDash(r.Host)}, {"server name", r.ServerName},
			{"namespacing", string(tn.Namespacing)}, {"template", tn.Template},
			{"tools list changed", listChangedText(r.Capabilities.ToolsListChanged)},
			{"workspace", r.Workspace}, {"transport", strings.TrimSpace(r.Transport.Kind + " " + r.Transport.URL)},
			{"question timeout", time.Duration(r.QuestionTimeout).String()},
			{"directory", r.Dir}, {"mcp config", r.MCPConfigPath},
			{"status", orDash(l.Status)}, {"open questions", fmt.Sprint(l.OpenQuestions)},
			{"last run", describeRun(r.LastRun)},
			{"example", fmt.Sprintf("%s is sent as %s; the model sees %s", ex.Canonical, ex.Transport, ex.ModelSees)},
		}
		fields = append(fields, [2]string{"tool prefix mode", r.ToolPrefixMode})
		for _, m := range r.Redacted().Mounts {
			fields = append(fields, [2]string{"mount", describeMount(m)})
		}
		for _, f := range r.Files {
			fields = append(fields, [2]string{"file", filepath.Join(r.Dir, f)})
		}
		return opts.IO.PrintFields(fields)
	})
}

// describeMount is a mount's one-line description.
func describeMount(m mount.Resolved) string {
	var src string
	switch {
	case m.Kind == mount.KindKB:
		src = m.Path
	case m.URL != "":
		src = m.URL
	default:
		src = strings.Join(append([]string{m.Command}, m.Args...), " ")
	}
	desc := fmt.Sprintf("%s %s  %s  prefix %s (%s)", m.Kind, m.Name, src, orDash(m.EffectivePrefix), m.PrefixOrigin)
	if m.ReadOnly {
		desc += "  read-only"
	}
	return desc
}

// describeRun is a run's one-line description.
func describeRun(run *instance.Run) string {
	if run == nil {
		return "-"
	}
	desc := fmt.Sprintf("%s %s, started %s", run.Program, run.Mode, run.StartedAt.Format(time.RFC3339))
	switch {
	case run.StartError != "":
		desc += ", could not start: " + run.StartError
	case run.EndedAt == nil:
		desc += ", running"
	case run.ExitCode != nil:
		desc += fmt.Sprintf(", ended %s with exit code %d", run.EndedAt.Format(time.RFC3339), *run.ExitCode)
	default:
		desc += ", ended " + run.EndedAt.Format(time.RFC3339)
	}
	return desc
}
