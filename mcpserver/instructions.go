package mcpserver

import (
	"fmt"
	"strings"

	"github.com/agentctl/agentctl/agents"
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
	// Naming is the client's capability (the record's snapshot): how its
	// model sees the names.
	Naming agents.ToolNaming
	Mounts []mount.Resolved
	Tools  []NamedTool
}

// RenderInstructions writes the description of the instance's tools that
// its model reads, one section per mount. Each tool is named as the model
// calls it ([PromptName]): a built-in by its canonical name (the seed
// decision: what a suffix or none client shows, the tail of what a prefix
// client shows, the function's name in a namespace); a mount's tool as this
// client shows it (docs__concept_read_agentctl on Auggie, which appends
// _<S> to what it is sent). One sentence says how the client shows the
// names, and an external server's section how its tools will be named.
func RenderInstructions(in InstructionsInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Tools of agentctl instance %s\n\n", in.InstanceID)
	fmt.Fprintf(&b, "This instance (%s) reaches agentctl's tools through the MCP server %q. %s\n",
		in.Agent, in.ServerName, namingNote(in.Agent, in.ServerName, in.Naming, in.Tools, "the names below", markdownCode))
	section := func(title string, filter func(NamedTool) bool) {
		fmt.Fprintf(&b, "\n## %s\n", title)
		list := "\n"
		for _, t := range in.Tools {
			if filter(t) {
				fmt.Fprintf(&b, "%s- `%s`: %s\n", list, t.promptName(), toolSummaries[t.Base])
				list = ""
			}
		}
	}
	section("Built-in tools", func(t NamedTool) bool { return t.Mount == "" })
	for _, m := range in.Mounts {
		section(fmt.Sprintf("%s %q", kindTitle(m.Kind), m.Name), func(t NamedTool) bool { return t.Mount == m.Name })
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
		} else if p := MountToolPattern(in.ServerName, in.Naming, m); p != "" {
			fmt.Fprintf(&b, " They are listed once the server is connected, as `%s`.", p)
		} else {
			b.WriteString(" They are listed once the server is connected.")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// kindTitle is a mount kind as a section title: "Knowledge base", "MCP server".
func kindTitle(k mount.Kind) string {
	if k == mount.KindKB {
		return "Knowledge base"
	}
	return "MCP server"
}

// mountLabel is a mount as a sentence names it: knowledge base "docs".
func mountLabel(m mount.Resolved) string {
	if m.Kind == mount.KindKB {
		return fmt.Sprintf("knowledge base %q", m.Name)
	}
	return fmt.Sprintf("MCP server %q", m.Name)
}

func markdownCode(s string) string { return "`" + s + "`" }
func plainText(s string) string    { return s }

// instructions is what the endpoint says at initialize: the built-ins by
// the names texts give them (those [NameTools] gives them; none when a
// server name makes one invalid, where NameTools fails), how each mount's
// tools are named for this client, and how the client shows the names.
func instructions(cfg Config, mounts []mount.Resolved) string {
	name := map[string]string{}
	tools, err := NameTools(cfg.ServerName, cfg.Naming, nil)
	if err == nil {
		for _, t := range tools {
			name[t.Base] = t.promptName()
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "agentctl endpoint for instance %s (%s). Ask the person questions with %s, report progress with %s, and describe the instance and its tools with %s.",
		cfg.Instance.ID, cfg.Instance.Agent, name[BaseAskUserQuestion], name[BaseReportProgress], name[BaseGetInstance])
	if err != nil {
		return b.String()
	}
	var named []string
	for _, m := range mounts {
		p := MountToolPattern(cfg.ServerName, cfg.Naming, m)
		switch {
		case p == "":
		case len(named) == 0:
			named = append(named, fmt.Sprintf("The tools of %s are named %s", mountLabel(m), p))
		default:
			named = append(named, fmt.Sprintf("of %s, %s", mountLabel(m), p))
		}
	}
	if len(named) > 0 {
		fmt.Fprintf(&b, " %s.", strings.Join(named, "; "))
	}
	b.WriteString(" " + namingNote(cfg.Instance.Agent, cfg.ServerName, cfg.Naming, tools, "these names", plainText))
	return b.String()
}

// probeTool stands for a tool's name where agentctl renders a name only to
// see what the client makes of it.
const probeTool = "TOOL"

// toolWord replaces [probeTool] in a pattern shown to the model.
const toolWord = "{tool}"

// callName is the part of a model-visible name that the model calls the
// tool by: all of it, or, for a client that sends a namespace and a
// function ([agents.ToolNaming.PartSeparator]: Codex), the function's.
func callName(naming agents.ToolNaming, visible string) string {
	if sep := naming.PartSeparator; sep != "" {
		if i := strings.LastIndex(visible, sep); i >= 0 {
			return visible[i+len(sep):]
		}
	}
	return visible
}

// clientPrefix is what the client puts in front of every name it is sent,
// as the model calls it (mcp__agentctl__ for Claude Code, "" for a none
// client or a namespace's function); ok is false when the client does
// something else (Auggie appends _<S>).
func clientPrefix(server string, naming agents.ToolNaming) (front string, ok bool) {
	return strings.CutSuffix(callName(naming, agents.RenderModelName(naming, server, probeTool).Name), probeTool)
}

// PromptName is the name the texts a model reads give a tool whose
// model-visible name for this client is visible: the name the model calls
// it by, without the prefix the client puts in front of every name
// (mcp__agentctl__ on Claude Code: its model resolves the tail) and without
// the namespace a function is in (Codex). With a valid server name that is
// the canonical name for every built-in on every client (the seed
// decision: Auggie is sent them without the _<S> it appends) and for every
// mount's tool but on a suffix client, whose model sees
// docs__concept_read_agentctl; where a client's sanitising changes a name,
// it is the name as changed.
func PromptName(server string, naming agents.ToolNaming, visible string) string {
	front, ok := clientPrefix(server, naming)
	return promptName(naming, front, ok, visible)
}

// promptName is [NamedTool.Prompt], or the canonical name where it was
// not computed.
func (t NamedTool) promptName() string {
	if t.Prompt == "" {
		return t.Canonical
	}
	return t.Prompt
}

func promptName(naming agents.ToolNaming, front string, hasFront bool, visible string) string {
	called := callName(naming, visible)
	if tail, ok := strings.CutPrefix(called, front); ok && hasFront {
		return tail
	}
	return called
}

// MountToolPattern is how the texts a model reads name a mount's tools for
// this client, with {tool} for the tool's own name: docs__{tool}_agentctl
// on Auggie, docs__{tool} on Claude Code (behind its mcp__agentctl__);
// empty when the client's sanitising leaves no place for the tool's name.
func MountToolPattern(server string, naming agents.ToolNaming, m mount.Resolved) string {
	canonical := m.ToolName(probeTool)
	p := PromptName(server, naming, agents.RenderModelName(naming, server, canonical).Name)
	i := strings.LastIndex(p, probeTool)
	if i < 0 {
		return ""
	}
	return p[:i] + toolWord + p[i+len(probeTool):]
}

// namingNote says how the client shows its model the names (names, such
// as "the names below", are what the text gives): as they are, with a
// prefix in front (an example from tools, the get_instance built-in), or as
// functions of a namespace. code quotes a name.
func namingNote(agent, server string, naming agents.ToolNaming, tools []NamedTool, names string, code func(string) string) string {
	visible := agents.RenderModelName(naming, server, probeTool).Name
	if sep := naming.PartSeparator; sep != "" {
		if i := strings.LastIndex(visible, sep); i >= 0 && visible[i+len(sep):] == probeTool {
			return fmt.Sprintf("Your client (%s) gives you these tools as functions in the namespace %s; %s are their names in it.", agent, code(visible[:i]), names)
		}
	}
	if front, ok := clientPrefix(server, naming); ok && front != "" {
		note := fmt.Sprintf("Your client (%s) shows you each of %s with %s in front", agent, names, code(front))
		for _, t := range tools {
			if t.Base == BaseGetInstance && t.Mount == "" && t.ModelVisible == front+t.Prompt {
				return fmt.Sprintf("%s, such as %s.", note, code(t.ModelVisible))
			}
		}
		return note + "."
	}
	return fmt.Sprintf("%s are the ones your client (%s) shows you.", strings.ToUpper(names[:1])+names[1:], agent)
}
