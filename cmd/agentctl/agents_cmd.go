package main

import (
	"fmt"
	"strings"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
	"github.com/spf13/cobra"
)

func (a *App) newAgentsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "List and show agent definitions (the clients agentctl knows)",
		Long: `Agent definitions describe coding-agent clients, above all how each one renames MCP
tools before its model sees them. The catalog is built into agentctl; TOML files in
the agents directory ($XDG_CONFIG_HOME/agentctl/agents/*.toml, or --agents-dir) add
new ids or override catalog ids. A user file is decoded strictly: an unknown key or
a bad value is an error naming the file, the line and the key.`,
	}
	cmd.AddCommand(a.newAgentsListCmd(), a.newAgentsShowCmd())
	return cmd
}

type agentRow struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Namespacing string `json:"namespacing"`
	Template    string `json:"template"`
	Source      string `json:"source"`
}

func (a *App) newAgentsListCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the agent definitions in force",
		Example: `  agentctl agents list
  agentctl agents list -o json | jq -r '.[] | select(.namespacing == "suffix") | .id'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(output); err != nil {
				return err
			}
			cat, err := a.Catalog()
			if err != nil {
				return err
			}
			defs := cat.Definitions()
			rows := make([]agentRow, len(defs))
			for i, d := range defs {
				tn := d.Capabilities.ToolNames
				rows[i] = agentRow{d.ID, d.Name, string(tn.Namespacing), tn.Template, d.Source}
			}
			if output == formatJSON {
				err = a.IO.PrintJSON(rows)
			} else {
				table := make([][]string, len(rows))
				for i, r := range rows {
					table[i] = []string{r.ID, r.Name, r.Namespacing, r.Template, r.Source}
				}
				err = a.IO.PrintTable([]string{"ID", "NAME", "NAMESPACING", "TEMPLATE", "SOURCE"}, table)
			}
			if err != nil {
				return err
			}
			return problemsError(cat)
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

// problemsError reports broken user files after the rest was printed.
func problemsError(cat *agents.Catalog) error {
	probs := cat.Problems()
	if len(probs) == 0 {
		return nil
	}
	msgs := make([]string, len(probs))
	for i, p := range probs {
		msgs[i] = p.Error()
	}
	return &configError{fmt.Errorf("%d agent definition file(s) could not be used and were left out:\n  %s", len(probs), strings.Join(msgs, "\n  "))}
}

// agentShow is `agents show -o json`: the definition plus an illustration.
type agentShow struct {
	*agents.Definition
	Example nameExample `json:"example"`
}

type nameExample struct {
	ServerName string   `json:"server_name"`
	Canonical  string   `json:"canonical"`
	Transport  string   `json:"transport"`
	ModelSees  string   `json:"model_sees"`
	Problems   []string `json:"problems,omitempty"`
}

// exampleName shows how ask_user_question_<S> reaches the client's model.
func exampleName(tn agents.ToolNaming, server string) nameExample {
	canonical := mcpserver.BuiltinName(mcpserver.BaseAskUserQuestion, server)
	transport := mcpserver.PresentToolName(mcpserver.BuiltinNameSet(server), tn.Namespacing, server, canonical)
	r := agents.RenderModelName(tn, server, transport)
	return nameExample{ServerName: server, Canonical: canonical, Transport: transport, ModelSees: r.Name, Problems: r.Problems}
}

func (a *App) newAgentsShowCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one agent definition and how a tool name reaches its model",
		Example: `  agentctl agents show auggie
  agentctl agents show claude-code -o json | jq .capabilities`,
		Args:              exactArgs(1, "an agent id (see `agentctl agents list`)"),
		ValidArgsFunction: a.completeAgentIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(output); err != nil {
				return err
			}
			cat, err := a.Catalog()
			if err != nil {
				return err
			}
			d, err := cat.Lookup(args[0])
			if err != nil {
				return err
			}
			ex := exampleName(d.Capabilities.ToolNames, instance.DefaultServerName)
			if output == formatJSON {
				return a.IO.PrintJSON(agentShow{Definition: d, Example: ex})
			}
			tn := d.Capabilities.ToolNames
			fields := [][2]string{
				{"id", d.ID}, {"name", d.Name}, {"command", strings.Join(d.Command, " ")},
				{"source", d.Source}, {"evidence", orDash(d.Evidence)}, {"seen with", orDash(d.SeenWith)},
				{"config format", d.MCP.ConfigFormat},
				{"namespacing", string(tn.Namespacing)}, {"template", tn.Template},
				{"max length", fmt.Sprint(tn.MaxLength)}, {"charset", tn.Charset},
			}
			if tn.ServerMaxLength > 0 {
				fields = append(fields, [2]string{"server max length", fmt.Sprint(tn.ServerMaxLength)})
			}
			if d.MCP.Trust {
				fields = append(fields, [2]string{"trust", "true"})
			}
			fields = append(fields,
				[2]string{"example", fmt.Sprintf("%s is sent as %s; the model sees %s", ex.Canonical, ex.Transport, ex.ModelSees)})
			for _, p := range ex.Problems {
				fields = append(fields, [2]string{"problem", p})
			}
			return a.IO.PrintFields(fields)
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (a *App) completeAgentIDs(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	_ = a.loadConfig(cmd)
	cat, err := a.Catalog()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var out []string
	for _, d := range cat.Definitions() {
		out = append(out, d.ID+"\t"+d.Name)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
