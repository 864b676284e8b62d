package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/spf13/cobra"
)

// InstanceRestartOptions are the inputs of `instance restart`.
type InstanceRestartOptions struct {
	IO    *IOStreams
	Store storeOpener

	Instance string
	Servers  []string
	Output   string
}

// NewCmdInstanceRestart is `agentctl instance restart`; runF replaces
// [instanceRestartRun] in tests.
func NewCmdInstanceRestart(f *Factory, runF func(context.Context, *InstanceRestartOptions) error) *cobra.Command {
	opts := &InstanceRestartOptions{IO: f.IOStreams, Store: f.Store}
	cmd := &cobra.Command{
		Use:   "restart INSTANCE [--server NAME]...",
		Short: "Restart the external MCP servers of the endpoints serving an instance",
		Long: `Restart the instance's external MCP servers in every endpoint serving it (mcp serve,
agentctl serve, on any host sharing the store), within a second and without
restarting the client: each server's connection is closed, its process stopped and
started again at once, and its tools are served again when it is back. Use it after
changing a server's code or files, or when one is stuck.

With --server, only the servers named (repeat it for several); without, all. The
instance's knowledge bases are in-process and have nothing to restart. An endpoint
started later starts its servers anyway: with none serving the instance, this
changes nothing but the record.`,
		Example: `  agentctl instance restart fix-login
  agentctl instance restart fix-login --server browser -o json`,
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
			return instanceRestartRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringSliceVar(&opts.Servers, "server", nil, "restart only this external server (repeatable; default: all)")
	_ = cmd.RegisterFlagCompletionFunc("server", completeServers(f))
	addOutputFlag(cmd, &opts.Output, opts.IO)
	return cmd
}

// restartJSON is `instance restart -o json`.
type restartJSON struct {
	ID          string    `json:"id"`
	Servers     []string  `json:"servers"`
	RequestedAt time.Time `json:"requested_at"`
	Running     reach     `json:"running"`
}

// requestedAt is the time the record keeps for the request of servers.
func requestedAt(r *instance.Record, servers []string) time.Time {
	if len(servers) == 0 {
		return r.Restarts[instance.RestartAll]
	}
	return r.Restarts[servers[0]]
}

func instanceRestartRun(ctx context.Context, opts *InstanceRestartOptions) error {
	return withInstance(ctx, opts.Store, opts.Instance, func(st *instance.Store, r *instance.Record) error {
		updated, err := st.RequestRestart(ctx, r.ID, opts.Servers)
		if err != nil {
			return err
		}
		servers := opts.Servers
		if len(servers) == 0 {
			for _, m := range updated.Mounts {
				if m.Kind == mount.KindServer {
					servers = append(servers, m.Name)
				}
			}
		}
		rc := sessionReach(ctx, st, updated)
		switch {
		case rc.ServedHere && rc.SharedStore:
			opts.IO.Narrate("Restarting %s in the endpoints serving instance %s, on this host and any other sharing this store (within a second).", strings.Join(servers, ", "), updated.ID)
		case rc.ServedHere:
			opts.IO.Narrate("Restarting %s in the endpoint serving instance %s on this host (within a second).", strings.Join(servers, ", "), updated.ID)
		case rc.SharedStore:
			opts.IO.Narrate("Asked the endpoints serving instance %s, on any host sharing this store, to restart %s (within a second); none serves it on this host.", updated.ID, strings.Join(servers, ", "))
		default:
			opts.IO.Narrate("No endpoint serves instance %s now: its servers (%s) start with its next session.", updated.ID, strings.Join(servers, ", "))
		}
		if opts.Output == formatJSON {
			return opts.IO.PrintJSON(restartJSON{ID: updated.ID, Servers: servers, RequestedAt: requestedAt(updated, opts.Servers), Running: rc})
		}
		_, err = fmt.Fprintln(opts.IO.Out, updated.ID)
		return err
	})
}
