package main

import (
	"context"
	"fmt"
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

On a terminal the output is a table fitted to its width; piped, tab-separated
values without a header, in the table's columns; with -o json, an array with one
object per agent. The JSON is a contract (fields are added, never renamed):

  agent, instance          the agent the names are for, and the instance if any
  server_name, naming      the server name S and the client's naming capability
  tools[]                  canonical, transport, model_visible, source, mount, base,
                           prefix_origin, kind (builtin|kb|mcp), length,
                           max_length, status (served|withheld), problems[] (text),
                           findings[] (as 'tools lint -o json')
  servers[]                name, state (up|down|unlisted), error, tools[] (own names),
                           stderr_tail[] (down: its last stderr lines, at most 20)
  findings[]               problems of no single tool (a server down, a bare name
                           several tools share, a stale capability)`,
		Example: `  agentctl tools list --instance fix-login
  agentctl tools list --agent auggie --kb docs=./docs -o json
  agentctl tools list --agent all --mcp browser='npx -y @playwright/mcp' --connect`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(opts.Output); err != nil {
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
	addOutputFlag(cmd, &opts.Output)
	return cmd
}

func toolsListRun(ctx context.Context, opts *ToolsListOptions) error {
	reports, stopped, err := describeToolsTarget(ctx, opts.Catalog, opts.Store, &opts.Target)
	defer stopped()
	if err != nil {
		return err
	}
	if opts.Output == formatJSON {
		return opts.IO.PrintJSON(reports)
	}
	tty := opts.IO.IsStdoutTTY()
	headers, rows := toolsTable(reports, tty)
	if err := opts.IO.PrintTable(headers, rows); err != nil {
		return err
	}
	if !tty {
		// A row of tab-separated values cannot hold lines: a failed
		// server's stderr goes to stderr.
		for _, r := range reports {
			for _, s := range r.Servers {
				if s.State == mcpserver.ListingDown && len(s.StderrTail) > 0 {
					opts.IO.Narrate("mcp %s: the last lines of its stderr:\n%s", s.Mount, stderrLines(s.StderrTail))
				}
			}
		}
	}
	for _, r := range reports {
		for _, f := range r.Findings {
			if f.Code != mcpserver.FindingServerDown && f.Severity == mcpserver.SeverityError {
				opts.IO.Narrate("%s: %s", f.Severity, lintLine(r, f))
			}
		}
	}
	return nil
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
