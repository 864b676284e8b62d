package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/mcpserver"
	"github.com/spf13/cobra"
)

// ToolsListOptions are the inputs of `tools list`.
type ToolsListOptions struct {
	IO      *IOStreams
	Catalog func() (*agents.Catalog, error)
	Store   storeOpener

	Target ToolsTarget
	Output string
	Quiet  bool
}

// NewCmdToolsList is `agentctl tools list`; runF replaces [toolsListRun] in
// tests.
func NewCmdToolsList(f *Factory, runF func(context.Context, *ToolsListOptions) error) *cobra.Command {
	opts := &ToolsListOptions{IO: f.IOStreams, Catalog: f.Catalog, Store: f.Store}
	var mounts mountFlags
	cmd := &cobra.Command{
		Use:   "list (--instance INSTANCE | --agent ID|all [mount flags])",
		Short: "Show every tool's canonical, sent and model-visible name, per client",
		Long: `List the tools of an instance, or of the instance 'instance create' would make with
the same flags (nothing is written), with the names each one has: canonical (the
registry's, used in logs and prompts), sent (on the wire, in tools/list) and the
name the client's model sees (the agent's template and rules), its source, where its
prefix came from, its model-visible length against the client's limit, and its
problems (see 'agentctl tools lint').

With --connect (the default with --instance) external MCP servers are started or
dialled as 'mcp serve' would, listed and stopped again; a server that fails is a row
that says why, with the last lines of its stderr (secrets redacted, control
characters shown escaped): under the row on a terminal, on stderr when piped.
Without it their tools are not known and only the server is shown.

On a terminal the output is a table when every column fits its width, and
otherwise a block per tool, so that no name is ever cut: the canonical name, then
each of the others on a line of its own (-o wide: the table, however wide). Piped,
tab-separated values without a header, in the table's columns: [AGENT,] CANONICAL,
SENT, MODEL SEES, SOURCE, PREFIX, LENGTH, PROBLEMS. -q prints the name each served
tool reaches the model under, one a line (with several agents, each agent's in
turn; a withheld tool is not served). With -o json, an array with one object per
agent (--jq filters it). The JSON is a contract (fields are added, never renamed):

  agent, instance          the agent the names are for, and the instance if any
  server_name, naming      the server name S and the client's naming capability
  tools[]                  canonical, transport, model_visible, source, mount, base,
                           prefix_origin, kind (builtin|kb|mcp), length,
                           max_length, status (served|withheld), findings[] (as
                           'tools lint -o json'; [] when none), problems[] (their
                           text; left out when none)
  servers[]                name, state (up|down|unlisted), error, tools[] (own names),
                           stderr_tail[] (down: its last stderr lines, at most 20)
  findings[]               problems of no single tool (a server down, a bare name
                           several tools share, a stale capability)`,
		Example: `  agentctl tools list --instance fix-login
  agentctl tools list --agent auggie --kb docs=./docs -o json
  agentctl tools list --agent all --mcp browser='npx -y @playwright/mcp' --connect
  agentctl tools list --agent claude-code --kb docs=./docs -q`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkQuiet(opts.Quiet, opts.Output); err != nil {
				return err
			}
			if err := resolveToolsTarget(f, cmd.Flags(), &opts.Target, &mounts); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return toolsListRun(cmd.Context(), opts)
		},
	}
	registerToolsTarget(f, cmd, &opts.Target, &mounts)
	addOutputFlag(cmd, &opts.Output, opts.IO, formatWide)
	addQuietFlag(cmd, &opts.Quiet, "model-visible names of the served tools")
	return cmd
}

func toolsListRun(ctx context.Context, opts *ToolsListOptions) error {
	if err := toolsListPrint(ctx, opts); err != nil {
		return err
	}
	return toolsProblems(opts.Catalog, &opts.Target)
}

func toolsListPrint(ctx context.Context, opts *ToolsListOptions) error {
	reports, stopped, err := describeToolsTarget(ctx, opts.Catalog, opts.Store, &opts.Target)
	defer stopped()
	if err != nil {
		return err
	}
	switch {
	case opts.Quiet:
		var b strings.Builder
		for _, r := range reports {
			for _, t := range r.Tools {
				if t.Status != mcpserver.StatusWithheld {
					b.WriteString(t.ModelVisible + "\n")
				}
			}
		}
		if _, err := io.WriteString(opts.IO.Out, b.String()); err != nil {
			return err
		}
		return toolsListFindings(opts.IO, reports, false)
	case opts.Output == formatJSON:
		return opts.IO.PrintJSON(reports)
	}
	tty := opts.IO.IsStdoutTTY()
	headers, rows := toolsTable(reports, tty)
	switch {
	case !tty:
		err = opts.IO.PrintTSV(rows)
	case opts.Output == formatWide || tableFits(headers, rows, opts.IO.TerminalWidth()):
		cols := make([]tableColumn, len(headers))
		for i, h := range headers {
			cols[i] = tableColumn{header: h}
		}
		err = opts.IO.DrawTable(cols, rows, true)
	default:
		err = opts.IO.DrawBlocks(toolsBlocks(reports))
	}
	if err != nil {
		return err
	}
	return toolsListFindings(opts.IO, reports, tty)
}

// toolsProblems is, for --agent all, the definition files that could not
// be used, whose clients the listing left out.
func toolsProblems(catalog func() (*agents.Catalog, error), t *ToolsTarget) error {
	if t.Agent != agentAll {
		return nil // one agent: its own broken file failed the listing
	}
	cat, err := catalog()
	if err != nil {
		return err
	}
	return problemsError(cat)
}

// toolsListFindings says on stderr what stdout could not hold: unless the
// stdout shows it (shown: a table or blocks on a terminal), a failed
// server's last stderr lines; and every error finding that is not a
// server down (a row says that).
func toolsListFindings(ios *IOStreams, reports []toolsReport, shown bool) error {
	if !shown {
		// A row of tab-separated values cannot hold lines: a failed
		// server's stderr goes to stderr.
		for _, r := range reports {
			for _, s := range r.Servers {
				if s.State == mcpserver.ListingDown && len(s.StderrTail) > 0 {
					ios.Narrate("mcp %s: the last lines of its stderr:\n%s", s.Mount, stderrLines(s.StderrTail))
				}
			}
		}
	}
	for _, r := range reports {
		for _, f := range r.Findings {
			if f.Code != mcpserver.FindingServerDown && f.Severity == mcpserver.SeverityError {
				ios.Narrate("%s: %s", f.Severity, lintLine(r, f))
			}
		}
	}
	return nil
}

// toolsBlocks is the reports as blocks, for a terminal too narrow for the
// table: a block per tool, titled with its canonical name (and its agent's
// id, with several agents), a line per other name and fact (problems only
// when it has some); a block per server that could not be listed, with the
// last lines of its stderr.
func toolsBlocks(reports []toolsReport) []fieldBlock {
	many := len(reports) > 1
	var blocks []fieldBlock
	title := func(agent, name string) string {
		if many {
			return agent + ": " + name
		}
		return name
	}
	for _, r := range reports {
		for _, t := range r.Tools {
			var problems []string
			for _, f := range t.Findings {
				problems = append(problems, f.Problem)
			}
			text := strings.Join(problems, "; ")
			if t.Status == mcpserver.StatusWithheld {
				text = "withheld: " + text
			}
			source := t.Source
			if t.PrefixOrigin != "" {
				source += ", prefix " + string(t.PrefixOrigin)
			}
			fields := []blockField{
				{name: "sent", value: t.Transport},
				{name: "model sees", value: t.ModelVisible},
				{name: "source", value: source, wrap: true},
				{name: "length", value: fmt.Sprintf("%d of %d", t.Length, t.MaxLength)},
			}
			if text != "" {
				fields = append(fields, blockField{name: "problems", value: text, wrap: true})
			}
			blocks = append(blocks, fieldBlock{title: title(r.Agent, t.Canonical), fields: fields})
		}
		for _, s := range r.Servers {
			var text string
			switch s.State {
			case mcpserver.ListingDown:
				text = "server down: " + TerminalText(s.Error)
				if len(s.StderrTail) > 0 {
					text += "\nits stderr ended:\n" + stderrLines(s.StderrTail)
				}
			case mcpserver.ListingUnlisted:
				text = "tools not listed (use --connect)"
			default:
				continue
			}
			blocks = append(blocks, fieldBlock{title: title(r.Agent, "mcp "+s.Mount), fields: []blockField{
				{name: "problems", value: text, wrap: true},
			}})
		}
	}
	return blocks
}

// shownStderrLines is how many of a failed server's last stderr lines the
// table shows (-o json has them all).
const shownStderrLines = 5

// stderrLines is the last of a failed server's stderr lines, each
// indented and made harmless for a terminal ([TerminalText]).
func stderrLines(tail []string) string {
	tail = tail[max(0, len(tail)-shownStderrLines):]
	lines := make([]string, len(tail))
	for i, l := range tail {
		lines[i] = "  " + TerminalText(l)
	}
	return strings.Join(lines, "\n")
}

// toolsTable is the reports as table rows: one per tool, one per server
// that could not be listed, which, on a terminal (tty), has the last lines
// of the server's stderr under it. The agent column is there when several
// agents are described.
func toolsTable(reports []toolsReport, tty bool) ([]string, [][]string) {
	many := len(reports) > 1
	headers := []string{"CANONICAL", "SENT", "MODEL SEES", "SOURCE", "PREFIX", "LENGTH", "PROBLEMS"}
	if many {
		headers = append([]string{"AGENT"}, headers...)
	}
	var rows [][]string
	add := func(agent string, cells ...string) {
		if many {
			cells = append([]string{agent}, cells...)
		}
		rows = append(rows, cells)
	}
	for _, r := range reports {
		for _, t := range r.Tools {
			var problems []string
			for _, f := range t.Findings {
				problems = append(problems, f.Problem)
			}
			cell := strings.Join(problems, "; ")
			if t.Status == mcpserver.StatusWithheld {
				cell = "withheld: " + cell
			}
			add(r.Agent, t.Canonical, t.Transport, t.ModelVisible, t.Source, orDash(string(t.PrefixOrigin)),
				fmt.Sprintf("%d/%d", t.Length, t.MaxLength), orDash(cell))
		}
		for _, s := range r.Servers {
			switch s.State {
			case mcpserver.ListingDown:
				cell := "server down: " + TerminalText(s.Error)
				if tty && len(s.StderrTail) > 0 {
					cell += "\nits stderr ended:\n" + stderrLines(s.StderrTail)
				}
				add(r.Agent, "-", "-", "-", "mcp "+s.Mount, "-", "-", cell)
			case mcpserver.ListingUnlisted:
				add(r.Agent, "-", "-", "-", "mcp "+s.Mount, "-", "-", "tools not listed (use --connect)")
			}
		}
	}
	return headers, rows
}
