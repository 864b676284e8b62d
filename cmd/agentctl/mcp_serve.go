package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/cmd/internal/serving"
	"github.com/agentctl/agentctl/instance"
	"github.com/spf13/cobra"
)

// MCPServeOptions are the inputs of `mcp serve`.
type MCPServeOptions struct {
	IO    *IOStreams
	Store storeOpener

	Instance string
	LogLevel slog.Level
	FastLane bool
	// KBRefreshInterval: see [Config.KBRefreshInterval].
	KBRefreshInterval time.Duration
	// FirstListWait bounds the first tools/list's wait for a client that
	// follows tools/list_changed (setting first_list_wait).
	FirstListWait time.Duration
	// HTTP, when set, serves the instance over streamable HTTP at this
	// address instead of stdio, as `agentctl serve` does (Serve holds its
	// other options).
	HTTP  string
	Serve *ServeOptions
}

// NewCmdMCPServe is `agentctl mcp serve`; runF replaces [mcpServeRun] in
// tests.
func NewCmdMCPServe(f *Factory, runF func(context.Context, *MCPServeOptions) error) *cobra.Command {
	// f.Store enqueues the notifications of the [[notify]] tables
	// (questions, failures); the endpoint delivers them.
	store := f.Store
	opts := &MCPServeOptions{IO: f.IOStreams, Store: store,
		Serve: &ServeOptions{IO: f.IOStreams, Store: store, TokenChecker: f.TokenChecker, IdleStop: serving.DefaultIdleStop}}
	cmd := &cobra.Command{
		Use:   "serve --instance INSTANCE",
		Short: "Serve an instance's MCP endpoint over stdio (the client starts this)",
		Long: `Serve the instance's MCP endpoint over stdio. The client starts this command from
the configuration that 'instance create' wrote; you rarely run it by hand.

The endpoint reads the naming capability from the instance record only, so editing
an agent definition later changes no existing instance. stdout carries only the
protocol; logs go to stderr. It exits cleanly on end of input and on SIGTERM,
after answering every request it has read: a call still running 10s after the
input ended, or when the signal came, is answered with an error (-32004).

While it runs, 'instance delete' of its instance refuses unless given --force; a
deleted instance's tools then answer that the instance was deleted.

With --http ADDR it serves the instance over streamable HTTP instead, at
http://ADDR/instances/ID/mcp, as 'agentctl serve' serves every instance (see its
help: tokens, health URLs, loopback unless --allow-remote).

Calls of external stdio servers' tools take a fast lane: their bytes are forwarded
with only the tool name, request id and progress token rewritten, instead of being
decoded and encoded again. --fast-lane=false sends every message through the
MCP SDK instead (for comparison, or to rule the lane out when troubleshooting),
still behind agentctl's input guard, which in both modes answers a line that is
not JSON with a parse error, drops the answers to requests the client cancelled,
and answers every request read before the end of input. A stdio server that stops
reading its input stalls neither mode: the lane refuses its calls once 4 MiB wait
for it; the SDK fails a call the server has not taken within its mount's timeout
(default 10s) and restarts the server.

A server that is not up is shown by get_instance with why, and the last lines of
its stderr (secrets redacted); all of its stderr goes to upstreams.log in the
instance's directory.

The client's first tools/list waits for the external servers according to the
instance's tools_list_changed capability (agentctl agents show AGENT): a client
that lists its tools again on notifications/tools/list_changed gets its first
list after at most --first-list-wait (default 300ms), with the servers that are
up by then, and a notification as each later one comes up; any other client's
first list waits for every server's first connection attempt, each bounded by
its connect timeout, since it would never see a later server's tools.

It sets Go's garbage collector target to 200 (GOGC) unless the GOGC environment
variable is set: the heap may grow to three times what is live between
collections, for less CPU per request.`,
		Example: `  agentctl mcp serve --instance fix-login --log-level debug
  agentctl mcp serve --instance fix-login --http 127.0.0.1:7822`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Instance == "" {
				return usageErrorf("--instance is required: the id, id prefix or label of the instance to serve")
			}
			if opts.HTTP == "" {
				if err := httpOnlyFlags(cmd); err != nil {
					return err
				}
			}
			var err error
			if opts.LogLevel, err = f.Config.LogLevel(); err != nil {
				return err
			}
			if opts.KBRefreshInterval, err = f.Config.KBRefreshInterval(); err != nil {
				return err
			}
			if opts.FirstListWait, err = f.Config.FirstListWait(); err != nil {
				return err
			}
			if opts.HTTP != "" {
				so := opts.Serve
				so.Listen, so.Only, so.ListenFlag = opts.HTTP, opts.Instance, "--http"
				if err := so.fill(f); err != nil {
					return err
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return mcpServeRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Instance, "instance", "", "the instance to serve: id, id prefix or label (required)")
	cmd.Flags().BoolVar(&opts.FastLane, "fast-lane", true, "forward external stdio servers' tool calls without decoding them")
	cmd.Flags().StringVar(&opts.HTTP, "http", "", "serve over streamable HTTP at this address (host:port) instead of stdio, at /instances/ID/mcp")
	addServeFlags(cmd, opts.Serve, "")
	for _, name := range mcpServeHTTPFlags {
		fl := cmd.Flags().Lookup(name)
		if u, ok := strings.CutSuffix(fl.Usage, " (with --allow-remote)"); ok {
			fl.Usage = u + " (with --http and --allow-remote)"
		} else {
			fl.Usage += " (with --http)"
		}
	}
	addSettingFlag(cmd.Flags(), keyLogLevel)
	addSettingFlag(cmd.Flags(), keyFirstListWait)
	_ = cmd.RegisterFlagCompletionFunc("instance", completeInstances(f))
	_ = cmd.RegisterFlagCompletionFunc("log-level", cobra.FixedCompletions([]string{"debug", "info", "warn", "error"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// mcpServeHTTPFlags are the flags of `mcp serve` that only --http uses
// (addServeFlags'): on stdio they would do nothing.
var mcpServeHTTPFlags = []string{"allow-remote", "allow-host", "max-body", "grace"}

// httpOnlyFlags refuses the flags of mcp serve that only --http uses, given
// without it: a --grace that did nothing contradicted the stdio endpoint's
// own 10 seconds, silently.
func httpOnlyFlags(cmd *cobra.Command) error {
	var given []string
	for _, name := range mcpServeHTTPFlags {
		if cmd.Flags().Changed(name) {
			given = append(given, "--"+name)
		}
	}
	if len(given) == 0 {
		return nil
	}
	verb, them := "applies", "it"
	if len(given) > 1 {
		verb, them = "apply", "them"
	}
	return usageErrorf("%s only %s to serving over HTTP: add --http ADDR, or leave %s out (on stdio a call still running 10s after the input ended, or when a signal came, is answered -32004)", strings.Join(given, ", "), verb, them)
}

func mcpServeRun(ctx context.Context, opts *MCPServeOptions) error {
	if opts.HTTP != "" {
		return serveRun(ctx, opts.Serve)
	}
	logger := slog.New(slog.NewTextHandler(opts.IO.ErrOut, &slog.HandlerOptions{Level: opts.LogLevel}))
	return withInstance(ctx, opts.Store, opts.Instance, func(st *instance.Store, rec *instance.Record) error {
		defer tuneGC(opts.IO.getenv)()
		// Every instance's due notifications, while it serves.
		defer startNotifyDelivery(ctx, st)()
		ep, stop, err := serving.Build(ctx, st, rec, serving.EndpointOptions{
			KBIndexDir: kbIndexDir(st.Dir()), KBRefreshInterval: opts.KBRefreshInterval,
			FirstListWait: opts.FirstListWait, NoFastLane: !opts.FastLane, Version: version,
		}, logger, func(line string) { fmt.Fprintln(opts.IO.ErrOut, line) })
		if err != nil {
			return err
		}
		defer stop()
		logger.Debug("serving", "instance", rec.ID, "agent", rec.Agent, "namespacing", rec.Capabilities.ToolNames.Namespacing,
			"tools", strings.Join(ep.Registry().Names(), ","))
		// A client that closed its end of stdout must not kill the
		// endpoint (Go dies of SIGPIPE on a write to fd 1) before it has
		// closed the questions that wait: with SIGPIPE notified, the write
		// fails with EPIPE, and it goes on. Notified, not ignored: an
		// ignored signal stays ignored in the external servers it starts.
		sigpipe := make(chan os.Signal, 1)
		signal.Notify(sigpipe, syscall.SIGPIPE)
		defer signal.Stop(sigpipe)
		return ep.ServeStdio(ctx, opts.IO.In, opts.IO.Out)
	})
}
