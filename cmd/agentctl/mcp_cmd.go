package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/spf13/cobra"
)

func (a *App) newMCPCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "The MCP endpoint of an instance",
	}
	cmd.AddCommand(a.newMCPServeCmd())
	return cmd
}

func (a *App) logLevel(cmd *cobra.Command) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(a.v.GetString("log_level"))); err != nil {
		return 0, a.invalidSetting(cmd, "log_level", "use debug, info, warn or error")
	}
	return l, nil
}

func (a *App) newMCPServeCmd() *cobra.Command {
	var (
		ref      string
		fastLane bool
	)
	cmd := &cobra.Command{
		Use:   "serve --instance INSTANCE",
		Short: "Serve an instance's MCP endpoint over stdio (the client starts this)",
		Long: `Serve the instance's MCP endpoint over stdio. The client starts this command from
the configuration that 'instance create' wrote; you rarely run it by hand.

The endpoint reads the naming capability from the instance record only, so editing
an agent definition later changes no existing instance. stdout carries only the
protocol; logs go to stderr. It exits cleanly on end of input and on SIGTERM.

Calls of external stdio servers' tools take a fast lane: their bytes are forwarded
with only the tool name, request id and progress token rewritten, instead of being
decoded and encoded again. --fast-lane=false sends every message through the
MCP SDK instead (for comparison, or to rule the lane out when troubleshooting).`,
		Example: `  agentctl mcp serve --instance fix-login --log-level debug`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ref == "" {
				return usageErrorf("--instance is required: the id, id prefix or label of the instance to serve")
			}
			level, err := a.logLevel(cmd)
			if err != nil {
				return err
			}
			logger := slog.New(slog.NewTextHandler(a.IO.ErrOut, &slog.HandlerOptions{Level: level}))
			ctx := cmd.Context()
			return a.withInstance(ctx, ref, func(st *instance.Store, rec *instance.Record) error {
				// The prefix contract again, in case the record was edited.
				mounts, _, err := recordPlan(rec)
				if err != nil {
					return err
				}
				for _, m := range mounts {
					if line := m.Announcement(); line != "" {
						fmt.Fprintln(a.IO.ErrOut, line)
					}
				}
				cfg := endpointConfig(rec, st, logger)
				cfg.Mounts, cfg.PrefixMode = unresolved(mounts), mount.PrefixMode(rec.ToolPrefixMode)
				cfg.NoFastLane = !fastLane
				if slices.ContainsFunc(mounts, func(m mount.Resolved) bool { return m.Kind == mount.KindServer }) {
					// External servers' stderr goes to the instance's log file,
					// never to stdout (the protocol) nor to our stderr.
					f, err := os.OpenFile(filepath.Join(rec.Dir, upstreamLogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
					if err != nil {
						return fmt.Errorf("open the instance's log file: %w", err)
					}
					defer f.Close()
					cfg.ServerStderr = f
				}
				ep, err := mcpserver.New(cfg)
				if err != nil {
					return fmt.Errorf("instance %s: %w", rec.ID, err)
				}
				logger.Debug("serving", "instance", rec.ID, "agent", rec.Agent, "namespacing", rec.Capabilities.ToolNames.Namespacing,
					"tools", strings.Join(ep.Registry().Names(), ","))
				return ep.ServeStdio(ctx, a.IO.In, a.IO.Out)
			})
		},
	}
	cmd.Flags().StringVar(&ref, "instance", "", "the instance to serve: id, id prefix or label (required)")
	cmd.Flags().BoolVar(&fastLane, "fast-lane", true, "forward external stdio servers' tool calls without decoding them")
	cmd.Flags().String("log-level", "info", "log level on stderr: debug, info, warn, error (env AGENTCTL_LOG_LEVEL)")
	_ = cmd.RegisterFlagCompletionFunc("instance", a.completeInstances)
	_ = cmd.RegisterFlagCompletionFunc("log-level", cobra.FixedCompletions([]string{"debug", "info", "warn", "error"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// upstreamLogFile, in the instance directory, receives external servers' stderr.
const upstreamLogFile = "upstreams.log"

// endpointConfig builds the endpoint's configuration from the record alone.
func endpointConfig(rec *instance.Record, st mcpserver.Store, logger *slog.Logger) mcpserver.Config {
	return mcpserver.Config{
		Instance:        mcpserver.Instance{ID: rec.ID, Name: rec.Name, Agent: rec.Agent, Workspace: rec.Workspace},
		ServerName:      rec.ServerName,
		Naming:          rec.Capabilities.ToolNames,
		QuestionTimeout: time.Duration(rec.QuestionTimeout),
		Store:           st,
		Logger:          logger,
		Version:         version,
	}
}
