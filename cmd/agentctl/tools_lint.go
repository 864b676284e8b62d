package main

import (
	"context"
	"fmt"
	"os/exec"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/mcpserver"
	"github.com/spf13/cobra"
)

// ToolsLintOptions are the inputs of `tools lint`.
type ToolsLintOptions struct {
	IO      *IOStreams
	Catalog func() (*agents.Catalog, error)
	Store   storeOpener

	Target ToolsTarget
	Strict bool
	Output string
}

// lintFinding is one finding as `tools lint -o json` prints it.
type lintFinding struct {
	Agent    string `json:"agent"`
	Instance string `json:"instance,omitempty"`
	mcpserver.Finding
}

// NewCmdToolsLint is `agentctl tools lint`; runF replaces [toolsLintRun] in
// tests.
func NewCmdToolsLint(f *Factory, runF func(context.Context, *ToolsLintOptions) error) *cobra.Command {
	opts := &ToolsLintOptions{IO: f.IOStreams, Catalog: f.Catalog, Store: f.Store}
	var mounts mountFlags
	cmd := &cobra.Command{
		Use:   "lint (--instance INSTANCE | --agent ID|all [mount flags])",
		Short: "Check the tool names each client's model will see, for CI",
		Long: fmt.Sprintf(`Check the names that 'agentctl tools list' shows, with the same inputs, and print
each problem on one line:

  AGENT/SOURCE: TOOL: PROBLEM (FIX)

AGENT is "all" for a problem that every agent described has. It exits 0 when
there is no error, and %d when there is one (or a warning, with --strict); see
'agentctl help exit-codes'. Errors:

  too-long          the model-visible name is over the client's max_length (by how
                    much, and which part to shorten: prefix, server name, tool)
  charset           it has characters outside the client's charset
  collision         two tools the client would show under one name (after its
                    sanitising and its cut of the server name)
  takes-in-process  an external tool takes a built-in's or knowledge base's name
                    (canonical, sent or model-visible): it is withheld
  hidden            a name the client is known to drop (Cursor: server + tool
                    over 60 characters)
  invalid-name      an external tool's name breaks the MCP rules
  server-down       an external server could not be listed (with --connect)
  stale-capability  the instance's stored capability is not its agent's any more
Warnings:
  unseen-name       an instance's instructions.md or skill names a tool under a
                    name its model does not see (docs__concept_read on Auggie,
                    whose model sees docs__concept_read_agentctl; a built-in's
                    bare ask_user_question): the lines, and what to write
  ambiguous-bare    an instance's instructions.md or skill names a bare name that
                    is the unprefixed form of several tools (concept_read with
                    two knowledge bases)
  unverified-release  the client installed here (its npm package's version, read
                    without starting it) is newer than the release its recipe,
                    naming and question policy were verified with (agents show:
                    "verified with"); run 'make e2e-clients' against it

Over --agent all, it checks a set of mounts (a new MCP server, say) against every
client before it ships. -o json prints an array of findings: agent, instance,
code, severity, source, tool, problem, fix (a contract: fields are added, never
renamed).`, ExitProblems),
		Example: `  agentctl tools lint --instance fix-login
  agentctl tools lint --agent all --mcp browser='npx -y @playwright/mcp' --connect
  agentctl tools lint --agent cursor --kb docs=./docs -o json | jq -r '.[].problem'`,
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
			return toolsLintRun(cmd.Context(), opts)
		},
	}
	registerToolsTarget(f, cmd, &opts.Target, &mounts)
	cmd.Flags().BoolVar(&opts.Strict, "strict", false, "fail on warnings too")
	addOutputFlag(cmd, &opts.Output, opts.IO)
	return cmd
}

func toolsLintRun(ctx context.Context, opts *ToolsLintOptions) error {
	reports, stopped, err := describeToolsTarget(ctx, opts.Catalog, opts.Store, &opts.Target)
	defer stopped()
	if err != nil {
		return err
	}
	found := lintFindings(reports)
	found = append(found, releaseFindings(opts.Catalog, reports, exec.LookPath)...)
	errs, warns := 0, 0
	for _, f := range found {
		if f.Severity == mcpserver.SeverityError {
			errs++
		} else {
			warns++
		}
	}
	if opts.Output == formatJSON {
		err = opts.IO.PrintJSON(found)
	} else {
		for _, f := range found {
			if _, err = fmt.Fprintln(opts.IO.Out, lintLine(toolsReport{Agent: f.Agent}, f.Finding)); err != nil {
				break
			}
		}
	}
	if err != nil {
		return err
	}
	// A definition file that could not be used is a client whose names
	// were not checked: CI hears of it when it checks that client (or all).
	var probs error
	if cat, err := opts.Catalog(); err == nil {
		probs = problemsError(cat, toolsAgents(&opts.Target, reports)...)
	}
	if errs > 0 || (opts.Strict && warns > 0) {
		err := fmt.Errorf("%s, %s in the tool names of %s", count(errs, "error"), count(warns, "warning"), count(len(reports), "agent"))
		if probs != nil {
			err = fmt.Errorf("%w; and %w", err, probs)
		}
		return &exitError{code: ExitProblems, err: err}
	}
	if warns > 0 {
		opts.IO.Narrate("%s (not failing without --strict)", count(warns, "warning"))
	}
	return probs
}

// lintFindings flattens the reports' findings, each tool's after the
// report's own, in report order. A finding that every one of several
// reports has (a bare name several tools share does not depend on the
// client) is given once, for agent "all", where the first report has it.
func lintFindings(reports []toolsReport) []lintFinding {
	var all []lintFinding
	seen := map[mcpserver.Finding]int{}
	for _, r := range reports {
		fs := r.Findings
		for _, t := range r.Tools {
			fs = append(fs[:len(fs):len(fs)], t.Findings...)
		}
		for _, f := range fs {
			all = append(all, lintFinding{r.Agent, r.Instance, f})
			seen[f]++
		}
	}
	out := []lintFinding{}
	done := map[mcpserver.Finding]bool{}
	for _, f := range all {
		if len(reports) > 1 && seen[f.Finding] == len(reports) {
			if !done[f.Finding] {
				done[f.Finding] = true
				f.Agent = agentAll
				out = append(out, f)
			}
			continue
		}
		out = append(out, f)
	}
	return out
}

// lintLine is a finding as one line: "AGENT/SOURCE: TOOL: PROBLEM (FIX)".
func lintLine(r toolsReport, f mcpserver.Finding) string {
	return fmt.Sprintf("%s/%s: %s: %s", r.Agent, f.Source, orDash(f.Tool), f.Text())
}

// count is "1 error", "2 errors".
func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// findingUnverifiedRelease: the installed client is newer than the release
// its definition was verified with.
const findingUnverifiedRelease = "unverified-release"

// releaseFindings warns, once per agent of reports, when the client that
// lookPath finds is a newer release than its definition was verified with
// ([agents.InstalledRelease]: read from its npm manifest, never started).
func releaseFindings(catalog func() (*agents.Catalog, error), reports []toolsReport, lookPath func(string) (string, error)) []lintFinding {
	cat, err := catalog()
	if err != nil {
		return nil
	}
	var out []lintFinding
	seen := map[string]bool{}
	for _, r := range reports {
		if seen[r.Agent] {
			continue
		}
		seen[r.Agent] = true
		def, err := cat.Lookup(r.Agent)
		if err != nil || def.SeenWith == "" {
			continue
		}
		v, ok := agents.InstalledRelease(def, lookPath)
		if !ok || !agents.NewerRelease(v, def.SeenWith) {
			continue
		}
		out = append(out, lintFinding{Agent: r.Agent, Finding: mcpserver.Finding{
			Code: findingUnverifiedRelease, Severity: mcpserver.SeverityWarning, Source: "client " + def.ProgramOrDefault(),
			Problem: fmt.Sprintf("the installed %s %s is newer than %s, the release its recipe, tool naming and question policy were verified with", def.NPMPackage, v, def.SeenWith),
			Fix:     "run `make e2e-clients` with it and update seen_with, or install " + def.NPMPackage + "@" + def.SeenWith,
		}})
	}
	return out
}
