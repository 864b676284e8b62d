package mcpserver

import (
	"fmt"
	"strings"

	"github.com/agentctl/agentctl/mcpserver/mount"
)

// InstructionsFile is the name of the generated instructions in an
// instance's directory.
const InstructionsFile = "instructions.md"

// toolSummaries are one-line descriptions for the generated instructions.
var toolSummaries = map[string]string{
	BaseAskUserQuestion: "ask the person a question and wait for the answer (it may take minutes; if none comes, continue with your best judgement)",
	BaseReportProgress:  "record what you are doing: a message, a status (running, blocked, done, failed) and an optional percent",
	BaseGetInstance:     "describe this instance: its workspace, mounts and tool names",
	BaseConceptList:     "list the concepts (Markdown documents) by id, optionally under an id prefix",
	BaseConceptRead:     "read one concept by id",
	BaseConceptSearch:   "search the concepts; ranked ids, titles and snippets",
	BaseConceptWrite:    "create or replace a concept",
}

// InstructionsInput is what the generated instructions describe.
type InstructionsInput struct {
	InstanceID string
	Agent      string
	ServerName string
	Mounts     []mount.Resolved
	Tools      []NamedTool
}

// RenderInstructions writes an agent-neutral description of the instance's
// tools, one section per mount. Tools are named by their canonical names,
// identical for every client: what a suffix or none client's model sees, and
// the tail of what a prefix client's model sees.
func RenderInstructions(in InstructionsInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Tools of agentctl instance %s\n\n", in.InstanceID)
	fmt.Fprintf(&b, "This instance (%s) reaches agentctl's tools through the MCP server %q. "+
		"The names below are the tools' canonical names, the same for every client; your client may show them with a prefix of its own in front.\n", in.Agent, in.ServerName)
	section := func(title string, filter func(NamedTool) bool) {
		fmt.Fprintf(&b, "\n## %s\n\n", title)
		for _, t := range in.Tools {
			if filter(t) {
				fmt.Fprintf(&b, "- `%s`: %s\n", t.Canonical, toolSummaries[t.Base])
			}
		}
	}
	section("Built-in tools", func(t NamedTool) bool { return t.Mount == "" })
	for _, m := range in.Mounts {
		var title string
		switch m.Kind {
		case mount.KindKB:
			title = fmt.Sprintf("Knowledge base %q", m.Name)
		default:
			title = fmt.Sprintf("MCP server %q", m.Name)
		}
		section(title, func(t NamedTool) bool { return t.Mount == m.Name })
		switch {
		case m.EffectivePrefix != "":
			fmt.Fprintf(&b, "\nIts tools are prefixed `%s__` (%s).", m.EffectivePrefix, m.PrefixOrigin)
		default:
			fmt.Fprintf(&b, "\nIts tools are not prefixed (%s).", m.PrefixOrigin)
		}
		if m.Kind == mount.KindKB {
			fmt.Fprintf(&b, " Concept ids are paths without `.md`, such as `guides/setup`; find them with the list or search tool.")
			if m.ReadOnly {
				b.WriteString(" It is read-only.")
			}
		} else {
			b.WriteString(" Its tools are listed once the server is connected.")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// instructions is what the endpoint says at initialize: the built-ins by
// their canonical names, identical for every client (those [NameTools]
// gives them; none when a server name makes one invalid, where NameTools
// fails).
func instructions(cfg Config) string {
	name := map[string]string{}
	if _, err := BuiltinRegistry(cfg.ServerName); err == nil {
		for _, b := range BuiltinBases {
			name[b] = BuiltinName(b, cfg.ServerName)
		}
	}
	return fmt.Sprintf("agentctl endpoint for instance %s (%s). Ask the person questions with %s, report progress with %s, and describe the instance and its tools with %s.",
		cfg.Instance.ID, cfg.Instance.Agent, name[BaseAskUserQuestion], name[BaseReportProgress], name[BaseGetInstance])
}
