package main

import (
	"fmt"
	"strings"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
	"github.com/spf13/cobra"
)

// AgentsShowOptions are the inputs of `agents show`.
type AgentsShowOptions struct {
	IO      *IOStreams
	Catalog func() (*agents.Catalog, error)

	ID     string
	Output string
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

// exampleName shows how ask_user_question_<S> reaches the client's model,
// presented against the endpoint's built-ins ([mcpserver.BuiltinRegistry]).
func exampleName(tn agents.ToolNaming, server string) nameExample {
	canonical := mcpserver.BuiltinName(mcpserver.BaseAskUserQuestion, server)
	reg, err := mcpserver.BuiltinRegistry(server)
	if err != nil {
		return nameExample{ServerName: server, Canonical: canonical, Transport: canonical, ModelSees: canonical, Problems: []string{err.Error()}}
	}
	transport := mcpserver.PresentToolName(reg, tn.Namespacing, server, canonical)
	r := agents.RenderModelName(tn, server, transport)
	return nameExample{ServerName: server, Canonical: canonical, Transport: transport, ModelSees: r.Name, Problems: r.Problems}
}

// NewCmdAgentsShow is `agentctl agents show`; runF replaces [agentsShowRun] in tests.
func NewCmdAgentsShow(f *Factory, runF func(*AgentsShowOptions) error) *cobra.Command {
	opts := &AgentsShowOptions{IO: f.IOStreams, Catalog: f.Catalog}
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one agent definition and how a tool name reaches its model",
		Example: `  agentctl agents show auggie
  agentctl agents show claude-code -o json | jq .capabilities`,
		Args:              exactArgs(1, "an agent id (see `agentctl agents list`)"),
		ValidArgsFunction: completeAgentIDs(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Output); err != nil {
				return err
			}
			opts.ID = args[0]
			if runF != nil {
				return runF(opts)
			}
			return agentsShowRun(opts)
		},
	}
	addOutputFlag(cmd, &opts.Output, opts.IO)
	return markQuick(cmd)
}

func agentsShowRun(opts *AgentsShowOptions) error {
	cat, err := opts.Catalog()
	if err != nil {
		return err
	}
	d, err := cat.Lookup(opts.ID)
	if err != nil {
		return err
	}
	ex := exampleName(d.Capabilities.ToolNames, instance.DefaultServerName)
	if opts.Output == formatJSON {
		return opts.IO.PrintJSON(agentShow{Definition: d, Example: ex})
	}
	tn := d.Capabilities.ToolNames
	fields := [][2]string{
		{"id", d.ID}, {"name", d.Name}, {"command", strings.Join(d.Command, " ")},
		{"source", d.Source}, {"evidence", orDash(d.Evidence)}, {"verified with", orDash(d.SeenWith)},
		{"config format", d.MCP.ConfigFormat},
		{"namespacing", string(tn.Namespacing)}, {"template", tn.Template},
		{"max length", fmt.Sprint(tn.MaxLength)}, {"charset", tn.Charset},
		{"tools list changed", listChangedText(d.Capabilities.ToolsListChanged)},
		{"questions", questionsText(d.Capabilities.Questions)},
	}
	if n := d.Capabilities.Questions.Note; n != "" {
		fields = append(fields, [2]string{"questions note", n})
	}
	if d.NPMPackage != "" {
		fields = append(fields, [2]string{"npm package", d.NPMPackage})
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
	return opts.IO.PrintFields(fields)
}

// listChangedText says what the tools_list_changed capability means for
// the client's first tools/list.
func listChangedText(follows bool) string {
	if follows {
		return "followed (the first tools/list answers after first_list_wait; slower servers are announced)"
	}
	return "not followed (the first tools/list waits for every external server's first attempt)"
}

// questionsText says where ask_user_question asks, by kind of run.
func questionsText(q agents.Questions) string {
	place := func(a agents.AskVia) string {
		if a == agents.AskViaClient {
			return "the client (elicitation, where it can ask)"
		}
		return "the store (instance questions / answer)"
	}
	q = q.WithDefaults()
	return "headless: " + place(q.Headless) + "; interactive: " + place(q.Interactive)
}
