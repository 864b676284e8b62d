package main

import (
	"io"
	"strings"

	"github.com/agentctl/agentctl/agents"
	"github.com/spf13/cobra"
)

// AgentsListOptions are the inputs of `agents list`.
type AgentsListOptions struct {
	IO      *IOStreams
	Catalog func() (*agents.Catalog, error)

	Output string
	Quiet  bool
}

// agentRow is one definition as `agents list -o json` prints it.
type agentRow struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Namespacing string `json:"namespacing"`
	Template    string `json:"template"`
	Source      string `json:"source"`
}

// NewCmdAgentsList is `agentctl agents list`; runF replaces [agentsListRun] in tests.
func NewCmdAgentsList(f *Factory, runF func(*AgentsListOptions) error) *cobra.Command {
	opts := &AgentsListOptions{IO: f.IOStreams, Catalog: f.Catalog}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the agent definitions in force",
		Long: `List the agent definitions in force: the catalog's, and yours (see 'agentctl agents
show'). On a terminal the table always shows each agent's ID and the TEMPLATE of
the name its model sees, and NAME, SOURCE and NAMESPACING as the width allows
(-o wide: every column). Piped, tab-separated values without a header: ID, NAME,
NAMESPACING, TEMPLATE, SOURCE. -q prints the ids alone, one a line.`,
		Example: `  agentctl agents list
  agentctl agents list -q
  agentctl agents list --jq '.[] | select(.namespacing == "suffix") | .id'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkQuiet(opts.Quiet, opts.Output); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return agentsListRun(opts)
		},
	}
	addOutputFlag(cmd, &opts.Output, opts.IO, formatWide)
	addQuietFlag(cmd, &opts.Quiet, "agent ids")
	return markQuick(cmd)
}

func agentsListRun(opts *AgentsListOptions) error {
	cat, err := opts.Catalog()
	if err != nil {
		return err
	}
	defs := cat.Definitions()
	rows := make([]agentRow, len(defs))
	for i, d := range defs {
		tn := d.Capabilities.ToolNames
		rows[i] = agentRow{d.ID, d.Name, string(tn.Namespacing), tn.Template, d.Source}
	}
	switch {
	case opts.Quiet:
		var b strings.Builder
		for _, r := range rows {
			b.WriteString(r.ID + "\n")
		}
		_, err = io.WriteString(opts.IO.Out, b.String())
	case opts.Output == formatJSON:
		err = opts.IO.PrintJSON(rows)
	case !opts.IO.IsStdoutTTY():
		table := make([][]string, len(rows))
		for i, r := range rows {
			table[i] = []string{r.ID, r.Name, r.Namespacing, r.Template, r.Source}
		}
		err = opts.IO.PrintTSV(table)
	default:
		table := make([][]string, len(rows))
		for i, r := range rows {
			table[i] = []string{r.ID, r.Name, r.Namespacing, r.Template, r.Source}
		}
		err = opts.IO.DrawTable([]tableColumn{
			{header: "ID"}, {header: "NAME", hide: 1}, {header: "NAMESPACING", hide: 3}, {header: "TEMPLATE"}, {header: "SOURCE", hide: 2, wrap: true},
		}, table, opts.Output == formatWide)
	}
	if err != nil {
		return err
	}
	return problemsError(cat)
}
