package serving

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentctl/agentctl/cmd/internal/provision"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/agentctl/agentctl/mcpserver/proxy"
)

// ServerLogFile, in the instance directory, receives external servers'
// stderr, whichever transport serves the instance.
const ServerLogFile = "upstreams.log"

// EndpointConfig builds an endpoint's configuration from the record alone
// (never from an agent definition): what every transport serves.
func EndpointConfig(rec *instance.Record, st mcpserver.Store, logger *slog.Logger, version string) mcpserver.Config {
	return mcpserver.Config{
		Instance:   mcpserver.Instance{ID: rec.ID, Name: rec.Name, Agent: rec.Agent, Workspace: rec.Workspace},
		ServerName: rec.ServerName,
		Naming:     rec.Capabilities.ToolNames,
		// External servers run in the workspace, wherever the client
		// started this endpoint: a relative path among their arguments
		// means a file of the workspace.
		ServerDir: rec.Workspace,
		// The client follows tools/list_changed: its first tools/list
		// need not wait for every external server.
		ToolsListChanged: rec.Capabilities.ToolsListChanged,
		QuestionTimeout:  time.Duration(rec.QuestionTimeout),
		Questions:        rec.Capabilities.Questions,
		Store:            st,
		Logger:           logger,
		Version:          version,
	}
}

// EndpointOptions are the settings of the endpoints a [Daemon] builds,
// beyond what the record says.
type EndpointOptions struct {
	// KBIndexDir and KBRefreshInterval: see [mcpserver.Config].
	KBIndexDir        string
	KBRefreshInterval time.Duration
	// FirstListWait: see [mcpserver.Config.FirstListWait].
	FirstListWait time.Duration
	// NoFastLane: see [mcpserver.Config.NoFastLane] (stdio only).
	NoFastLane bool
	Version    string
	// FollowInterval is how often the endpoint reads its record again for
	// changes of its mounts besides when the store says it may have
	// changed ([Follow]; 0: [DefaultFollowInterval]).
	FollowInterval time.Duration
}

// served is one instance's endpoint, built from its record ([Build]) and
// started, with its stop.
type served struct {
	ep     *mcpserver.Endpoint
	stop   func()
	cancel context.CancelFunc
}

// Build builds instance rec's endpoint from its record, as every transport
// serves it: the serve lock taken (so that `instance delete` sees the
// endpoint is live), the record's mounts checked against the prefix
// contract again (each derived prefix told to announce), the configuration
// from the record with o, and external servers' stderr going to the
// instance's ServerLogFile. The endpoint is not started, but it follows
// its record from now on ([Follow]: mount changes, restart requests).
// stop stops it and releases what it holds; on an error nothing is held.
func Build(ctx context.Context, st *instance.Store, rec *instance.Record, o EndpointOptions, logger *slog.Logger, announce func(string)) (ep *mcpserver.Endpoint, stop func(), err error) {
	release, err := st.ServeLock(ctx, rec.ID)
	if err != nil {
		return nil, nil, err
	}
	var (
		logFile io.Closer
		built   *mcpserver.Endpoint
		// unfollow stops Follow and waits for it: no mount change after
		// the endpoint's end.
		unfollow = func() {}
	)
	end := func() {
		unfollow()
		if built != nil {
			built.Shutdown()
		}
		if logFile != nil {
			logFile.Close()
		}
		release()
	}
	defer func() {
		if err != nil {
			end()
		}
	}()
	ts, err := provision.RecordToolset(rec)
	if err != nil {
		return nil, nil, err
	}
	for _, line := range ts.Announcements() {
		announce(line)
	}
	cfg := EndpointConfig(rec, st, logger, o.Version)
	cfg.Resolved = ts.Mounts // resolved once, by RecordToolset
	cfg.KBIndexDir, cfg.KBRefreshInterval = o.KBIndexDir, o.KBRefreshInterval
	cfg.FirstListWait, cfg.NoFastLane = o.FirstListWait, o.NoFastLane
	if slices.ContainsFunc(ts.Mounts, func(m mount.Resolved) bool { return m.Kind == mount.KindServer }) {
		// Never to stdout (the protocol) nor to our stderr; rotated past
		// mcpserver.ServerLogMax to upstreams.log.1.
		f, err := mcpserver.OpenServerLog(filepath.Join(rec.Dir, ServerLogFile))
		if err != nil {
			return nil, nil, fmt.Errorf("open the instance's log file: %w", err)
		}
		logFile, cfg.ServerStderr = f, f
	}
	if built, err = mcpserver.New(cfg); err != nil {
		if me, ok := errors.AsType[*mcpserver.MountError](err); ok && errors.Is(err, fs.ErrNotExist) {
			// A knowledge base is a folder of the host that created the
			// instance: in a shared store, another host may not have it.
			where := "this host (" + st.Host() + ")"
			if st.Foreign(rec) {
				where += "; the instance was created on host " + rec.Host
			}
			return nil, nil, fmt.Errorf("instance %s: knowledge base %q: its folder %s is missing on %s; make that folder here (a checkout or mount of the same files), or serve the instance where it is: %w",
				rec.ID, me.Mount, mountPath(ts.Mounts, me.Mount), where, err)
		}
		return nil, nil, fmt.Errorf("instance %s: %w", rec.ID, err)
	}
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		Follow(fctx, st, rec, built, logger, o.FollowInterval)
	}()
	unfollow = func() {
		cancel()
		<-followed
	}
	return built, end, nil
}

// buildEndpoint builds the instance's endpoint ([Build]) and starts its
// external servers (in the background, with ctx).
func buildEndpoint(ctx context.Context, st *instance.Store, rec *instance.Record, o EndpointOptions, logger *slog.Logger) (*served, error) {
	ep, stop, err := Build(ctx, st, rec, o, logger, func(line string) { logger.Info(line) })
	if err != nil {
		return nil, err
	}
	s := &served{ep: ep, stop: stop}
	var epCtx context.Context
	epCtx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	ep.Start(epCtx)
	return s, nil
}

// close stops the external servers, closes the mounts and the log file,
// and releases the serve lock.
func (s *served) close() {
	s.cancel()
	s.stop()
}

// recordHealth is the health of an instance whose endpoint is not built
// (no request came yet, or it stopped when idle): what its record says,
// its external servers not started.
func recordHealth(rec *instance.Record) (mcpserver.Health, error) {
	plan, err := provision.RecordToolset(rec)
	if err != nil {
		return mcpserver.Health{}, err
	}
	h := mcpserver.Health{
		ServerName: rec.ServerName,
		Capability: mcpserver.HealthCapability{Namespacing: rec.Capabilities.ToolNames.Namespacing, Template: rec.Capabilities.ToolNames.Template},
		Mounts:     []mcpserver.MountInfo{},
		Servers:    []proxy.ServerStatus{},
	}
	for _, m := range plan.Mounts {
		h.Mounts = append(h.Mounts, mcpserver.MountInfo{Kind: m.Kind, Name: m.Name, EffectivePrefix: m.EffectivePrefix, PrefixOrigin: m.PrefixOrigin})
		if m.Kind == mount.KindServer {
			h.Servers = append(h.Servers, proxy.ServerStatus{Name: m.Name, State: StateStopped})
		}
	}
	return h, nil
}

// StateStopped is the state /instances/{id}/health reports for an external
// server whose endpoint is not running: it starts with the instance's
// first MCP request.
const StateStopped = "stopped"

// mountPath is the folder of the mount named name.
func mountPath(ms []mount.Resolved, name string) string {
	for _, m := range ms {
		if m.Name == name {
			return m.Path
		}
	}
	return "?"
}
