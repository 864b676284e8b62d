package main

import (
	"github.com/agentctl/agentctl/agents"
	"github.com/spf13/cobra"
)

// AgentsListOptions are the inputs of `agents list`.
type AgentsListOptions struct {
	IO      *IOStreams
	Catalog func() (*agents.Catalog, error)

	Output string
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
		Example: `  agentctl agents list
  agentctl agents list -o json | jq -r '.[] | select(.namespacing == "suffix") | .id'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(opts.Output); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return agentsListRun(opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
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
	if opts.Output == formatJSON {
		err = opts.IO.PrintJSON(rows)
	} else {
		table := make([][]string, len(rows))
		for i, r := range rows {
			table[i] = []string{r.ID, r.Name, r.Namespacing, r.Template, r.Source}
		}
		err = opts.IO.PrintTable([]string{"ID", "NAME", "NAMESPACING", "TEMPLATE", "SOURCE"}, table)
	}
	if err != nil {
		return err
	}
	return problemsError(cat)
}
