package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/instance/launch"
	"github.com/spf13/cobra"
)

// InstanceEnvOptions are the inputs of `instance env`.
type InstanceEnvOptions struct {
	IO         *IOStreams
	Store      storeOpener
	Definition func(id string) (*agents.Definition, error)
	Executable func() (string, error)

	Instance string
	Output   string
}

// NewCmdInstanceEnv is `agentctl instance env`; runF replaces
// [instanceEnvRun] in tests.
func NewCmdInstanceEnv(f *Factory, runF func(context.Context, *InstanceEnvOptions) error) *cobra.Command {
	opts := &InstanceEnvOptions{IO: f.IOStreams, Store: f.Store, Definition: f.Definition, Executable: f.Executable}
	cmd := &cobra.Command{
		Use:   "env INSTANCE",
		Short: "Print the environment and command line that start the instance's client",
		Long: `Env prints, as shell exports, the environment variables 'agentctl instance run' sets
for the instance's client (AGENTCTL_INSTANCE and those its recipe uses to find the MCP
configuration), followed by comments showing the command lines of a headless and an
interactive run, for people who start the client themselves. Secrets are hidden: a
variable whose value is secret (an HTTP instance's AGENTCTL_TOKEN) is printed as a
comment, for you to set, so that eval never sets it to the mark.

  eval "$(agentctl instance env ID)"

-o json prints both plans: {"headless": {...}, "interactive": {...}}.`,
		Example: `  eval "$(agentctl instance env fix-login)" && cd "$(agentctl instance show fix-login -o json | jq -r .workspace)"
  agentctl instance env "$id" -o json | jq -r .headless.args[]`,
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
			return instanceEnvRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output, opts.IO)
	return cmd
}

// promptMark stands for the prompt in the command line `instance env`
// prints; it is replaced by "$PROMPT".
const promptMark = "\x00PROMPT\x00"

func instanceEnvRun(ctx context.Context, opts *InstanceEnvOptions) error {
	return withInstance(ctx, opts.Store, opts.Instance, func(st *instance.Store, r *instance.Record) error {
		plans := map[string]*launch.Plan{}
		var firstErr error
		for _, m := range []launch.Mode{launch.Headless, launch.Interactive} {
			p, err := planRun(st, r, opts.Definition, opts.Executable, launch.Options{Mode: m, Prompt: promptMark, Preview: true})
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			plans[string(m)] = p.Redacted()
		}
		if len(plans) == 0 {
			return firstErr
		}
		var said []string
		for _, m := range []launch.Mode{launch.Headless, launch.Interactive} {
			if p := plans[string(m)]; p != nil {
				for _, w := range p.Warnings {
					if !slices.Contains(said, w) {
						said = append(said, w)
						opts.IO.Narrate("%s", w)
					}
				}
			}
		}
		if opts.Output == formatJSON {
			for _, p := range plans {
				for i, a := range p.Args {
					p.Args[i] = strings.ReplaceAll(a, promptMark, "$PROMPT")
				}
			}
			return opts.IO.PrintJSON(plans)
		}
		var b strings.Builder
		base := plans[string(launch.Headless)]
		if base == nil {
			base = plans[string(launch.Interactive)]
		}
		// A hidden value is not exported: eval would set the variable to
		// the mark, and the client would send it (a token that fails).
		for _, e := range base.Env {
			switch {
			case e.Value != launch.Hidden:
				fmt.Fprintf(&b, "export %s=%s\n", e.Name, launch.ShellQuote(e.Value))
			case e.Name == launch.TokenEnv:
				fmt.Fprintf(&b, "# export %s=...  the instance's token, hidden here: set it yourself to the one instance create printed, or get a new one with `agentctl instance token rotate %s`\n", e.Name, r.ID)
			default:
				fmt.Fprintf(&b, "# export %s=...  a secret, hidden here: set it yourself\n", e.Name)
			}
		}
		// The comments quote paths, which may hold a line break: each of
		// their lines is a comment, or eval would run what follows it.
		comment := strings.NewReplacer("\r\n", "\n#   ", "\n", "\n#   ", "\r", "\n#   ")
		fmt.Fprintf(&b, "# then, in %s:\n", comment.Replace(launch.ShellQuote(base.Dir)))
		for _, m := range []launch.Mode{launch.Headless, launch.Interactive} {
			if p := plans[string(m)]; p != nil {
				line := strings.ReplaceAll(p.CommandLine(), launch.ShellQuote(promptMark), `"$PROMPT"`)
				fmt.Fprintf(&b, "#   %-12s %s\n", string(m)+":", comment.Replace(line))
			}
		}
		_, err := fmt.Fprint(opts.IO.Out, b.String())
		return err
	})
}
