package main

import (
	"context"
	"fmt"

	"github.com/agentctl/agentctl/instance"
	"github.com/spf13/cobra"
)

// NewCmdInstanceToken is `agentctl instance token`, the group of the
// token commands.
func NewCmdInstanceToken(f *Factory, line cmdLine) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage the instance's bearer token",
		Long: `Every instance has a bearer token, made at create and stored only as a hash. An HTTP
instance's client sends it to 'agentctl serve' (Authorization: Bearer TOKEN), from the
configuration file create wrote. It cannot be shown again, only replaced.`,
	}
	line.add(cmd, sub{[]string{"rotate"}, func(cmdLine) *cobra.Command { return NewCmdInstanceTokenRotate(f, nil) }})
	return cmd
}

// InstanceTokenRotateOptions are the inputs of `instance token rotate`.
type InstanceTokenRotateOptions struct {
	IO       *IOStreams
	Store    storeOpener
	Getenv   func(string) string
	Instance string
	Output   string
}

// NewCmdInstanceTokenRotate is `agentctl instance token rotate`; runF
// replaces [instanceTokenRotateRun] in tests.
func NewCmdInstanceTokenRotate(f *Factory, runF func(context.Context, *InstanceTokenRotateOptions) error) *cobra.Command {
	opts := &InstanceTokenRotateOptions{IO: f.IOStreams, Store: f.Store, Getenv: f.Config.getenv}
	cmd := &cobra.Command{
		Use:   "rotate INSTANCE",
		Short: "Replace the instance's token and print the new one, once",
		Long: `Rotate makes a new token for the instance and replaces the stored hash: the old token
stops working at once. The instance's own configuration files that held the old token
are rewritten with the new one (mode 0600). Files that 'agentctl instance connect'
wrote are not: rotate names those that still hold the old token; connect again to
update them.

The endpoints serving the instance over HTTP (agentctl serve, mcp serve --http, on
every host sharing the store) refuse the old token within a second (they keep a
token check for at most a second), without a restart, and end the sessions and
streams it opened within about a second as well. A client session that runs with
the old token then fails: restart it, and it reads the new token from its
rewritten configuration. An instance served over stdio sends no token.

The new token is printed on stdout (with -o json, as "token"), once; it is stored
nowhere but as a hash and in the files named. An instance created before instances
had tokens gets its first one this way.`,
		Example: `  agentctl instance token rotate fix-login
  agentctl instance token rotate fix-login -o json | jq -r .token`,
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
			return instanceTokenRotateRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output, opts.IO)
	return cmd
}

// rotatedJSON is `instance token rotate -o json`.
type rotatedJSON struct {
	ID    string `json:"id"`
	Token string `json:"token"`
	// Rewritten are the instance's own files now holding the new token.
	Rewritten []string `json:"rewritten"`
	// Stale are connected files still holding the old token.
	Stale []string `json:"stale"`
	// RestartClient: a running session of an HTTP instance's client holds
	// the old token and must be restarted.
	RestartClient bool `json:"restart_client"`
}

func instanceTokenRotateRun(ctx context.Context, opts *InstanceTokenRotateOptions) error {
	return withInstance(ctx, opts.Store, opts.Instance, func(st *instance.Store, r *instance.Record) error {
		rot, err := st.RotateToken(ctx, r.ID, opts.Getenv)
		if err != nil {
			return err
		}
		opts.IO.Narrate("New token for instance %s (shown only now; the old one no longer works).", r.ID)
		for _, p := range rot.Rewritten {
			opts.IO.Narrate("Rewritten with the new token: %s", p)
		}
		for _, p := range rot.Stale {
			opts.IO.Narrate("Still holds the old token: %s (run `agentctl instance connect %s` again to update it)", p, r.ID)
		}
		http := r.Transport.Kind == instance.TransportHTTP
		switch {
		case http && len(rot.Stale) > 0:
			opts.IO.Narrate("Endpoints serving it over HTTP refuse the old token within a second; restart a running %s session once its configuration holds the new token (connect again first where a file above still holds the old one).", r.Agent)
		case http:
			opts.IO.Narrate("Endpoints serving it over HTTP refuse the old token within a second; restart a running %s session: it holds the old token, and reads the new one when it starts.", r.Agent)
		default:
			opts.IO.Narrate("Its client starts its endpoint over stdio and sends no token; running sessions are not affected.")
		}
		if opts.Output == formatJSON {
			out := rotatedJSON{ID: r.ID, Token: rot.Token, Rewritten: rot.Rewritten, Stale: rot.Stale, RestartClient: http}
			if out.Rewritten == nil {
				out.Rewritten = []string{}
			}
			if out.Stale == nil {
				out.Stale = []string{}
			}
			return opts.IO.PrintJSON(out)
		}
		_, err = fmt.Fprintln(opts.IO.Out, rot.Token)
		return err
	})
}
