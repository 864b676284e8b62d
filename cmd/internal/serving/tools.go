package serving

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/cmd/internal/provision"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/agentctl/agentctl/mcpserver/proxy"
)

// ToolsReport is one agent's description, as `tools list -o json` prints
// it: the agent, the instance if any, and [mcpserver.Description]'s fields.
type ToolsReport struct {
	Agent    string `json:"agent"`
	Instance string `json:"instance,omitempty"`
	mcpserver.Description
}

// agentNaming is one client to describe for.
type agentNaming struct {
	id     string
	naming agents.ToolNaming
}

// AllAgents is the [ToolsTarget.Agent] that means every agent definition
// in force.
const AllAgents = "all"

// ToolsTarget is what `tools list` and `tools lint` describe: an instance
// (Record), or a hypothetical one from the create flags, for one agent,
// every agent ([AllAgents]) or, with an instance, its own capability.
type ToolsTarget struct {
	Record *instance.Record
	Agent  string
	// The create flags, for a hypothetical instance.
	ServerName string
	PrefixMode mount.PrefixMode
	Mounts     []mount.Mount
	// Connect lists the external servers' tools: each is started or
	// dialled, as `mcp serve` would, and stopped again.
	Connect bool
	// Version is agentctl's, told to the external servers.
	Version string
}

// DescribeTools computes the reports of t: the mounts (from the record or
// the flags), the external servers' listings if t.Connect, and
// [mcpserver.DescribeTools] for each agent. The caller calls stopped once
// done with the reports: it waits until the servers started to list them
// have stopped, which they do meanwhile.
func DescribeTools(ctx context.Context, catalog func() (*agents.Catalog, error), t *ToolsTarget) (reports []ToolsReport, stopped func(), err error) {
	stopped = func() {}
	reports, err = describeWith(ctx, catalog, t, &stopped)
	return reports, stopped, err
}

func describeWith(ctx context.Context, catalog func() (*agents.Catalog, error), t *ToolsTarget, stopped *func()) ([]ToolsReport, error) {
	var (
		server  string
		resolve []mount.Resolved
		clients []agentNaming
		ref     string
		rec     = t.Record
	)
	if rec != nil {
		plan, err := provision.RecordToolset(rec)
		if err != nil {
			return nil, err
		}
		server, resolve, ref = rec.ServerName, plan.Mounts, rec.ID
	}
	// An instance's servers start now, while the catalog loads: starting
	// them is most of what a listing costs.
	listed := func() []mcpserver.ServerListing { return nil }
	if t.Connect && rec != nil {
		listed = startListing(ctx, resolve, rec.Workspace, t.Version, stopped)
	}
	cat, err := catalog()
	if err != nil {
		return nil, err
	}
	var stale []mcpserver.Finding
	if rec != nil {
		if t.Agent == "" {
			clients = []agentNaming{{rec.Agent, rec.Capabilities.ToolNames}}
		}
		stale = staleFindings(cat, rec)
	} else {
		server = t.ServerName
	}
	if clients == nil {
		if clients, err = agentNamings(cat, t.Agent); err != nil {
			return nil, err
		}
	}
	if rec == nil {
		plan, err := provision.ResolveToolset(server, clients[0].naming, t.PrefixMode, t.Mounts)
		if err != nil {
			return nil, err
		}
		resolve = plan.Mounts
		if t.Connect {
			// A hypothetical instance's workspace is create's default,
			// the current directory.
			listed = startListing(ctx, resolve, "", t.Version, stopped)
		}
	}
	listings := listed()
	out := make([]ToolsReport, 0, len(clients))
	for _, c := range clients {
		d, err := mcpserver.DescribeTools(server, c.naming, resolve, listings)
		if err != nil {
			return nil, &provision.InvalidError{Err: err}
		}
		if c.id == agentOf(t, ref, clients) {
			d.Findings = append(stale, d.Findings...)
			d.Findings = append(d.Findings, mcpserver.LintTexts(d.Tools, instanceTexts(rec))...)
			if d.Findings == nil {
				d.Findings = []mcpserver.Finding{} // [] in JSON, as --help says
			}
		}
		out = append(out, ToolsReport{Agent: c.id, Instance: ref, Description: d})
	}
	return out, nil
}

// startListing lists the external servers among mounts in the background
// ([listServers]) and returns the function that waits for their listings;
// *stopped then waits for the listing, and for the servers to stop.
func startListing(ctx context.Context, mounts []mount.Resolved, dir, version string, stopped *func()) func() []mcpserver.ServerListing {
	done := make(chan struct{})
	var (
		listings []mcpserver.ServerListing
		wait     func()
	)
	go func() {
		defer close(done)
		listings, wait = listServers(ctx, mounts, dir, version)
	}()
	*stopped = func() {
		<-done
		wait()
	}
	return func() []mcpserver.ServerListing {
		<-done
		return listings
	}
}

// agentOf is the agent whose report carries the instance's own findings
// (a stale capability): the instance's agent, when it is described.
func agentOf(t *ToolsTarget, ref string, clients []agentNaming) string {
	if ref == "" || t.Agent != "" {
		return ""
	}
	return clients[0].id
}

// instanceTexts reads the texts written into an instance's directory for
// its model (instructions.md and skills, each with the kept template it was
// expanded from, if any), for [mcpserver.LintTexts]. A file that is not
// there (an instance another host made, whose files this host has not
// made yet) is left out.
func instanceTexts(rec *instance.Record) []mcpserver.Text {
	var out []mcpserver.Text
	for _, f := range rec.Files {
		if f != mcpserver.InstructionsFile && !strings.HasPrefix(f, "skills"+string(filepath.Separator)) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(rec.Dir, f))
		if err != nil {
			continue
		}
		t := mcpserver.Text{File: f, Body: string(data)}
		if kept := filepath.Join(provision.TemplatesDir, f); slices.Contains(rec.Files, kept) {
			t.Template = kept
		}
		out = append(out, t)
	}
	return out
}

// agentNamings is the naming of one agent, or of every agent for "all".
func agentNamings(cat *agents.Catalog, id string) ([]agentNaming, error) {
	if id != AllAgents {
		def, err := cat.Lookup(id)
		if err != nil {
			return nil, err
		}
		return []agentNaming{{def.ID, def.Capabilities.ToolNames}}, nil
	}
	var out []agentNaming
	for _, d := range cat.Definitions() {
		out = append(out, agentNaming{d.ID, d.Capabilities.ToolNames})
	}
	return out, nil
}

// staleFindings compares an instance's stored capability with its agent's
// definition now.
func staleFindings(cat *agents.Catalog, rec *instance.Record) []mcpserver.Finding {
	def, err := cat.Lookup(rec.Agent)
	if fp, ok := errors.AsType[*agents.FileProblem](err); ok {
		// Its file is there but cannot be used: say that, not that the
		// agent is gone.
		return []mcpserver.Finding{{Code: mcpserver.FindingStale, Severity: mcpserver.SeverityError, Source: "instance " + rec.ID,
			Problem: fmt.Sprintf("agent %q's definition cannot be used (%v); the endpoint keeps using the capability stored at create", rec.Agent, fp),
			Fix:     "mend " + fp.File}}
	}
	if err != nil {
		return []mcpserver.Finding{{Code: mcpserver.FindingStale, Severity: mcpserver.SeverityError, Source: "instance " + rec.ID,
			Problem: fmt.Sprintf("agent %q is not defined any more; the endpoint keeps using the capability stored at create", rec.Agent),
			Fix:     fmt.Sprintf("restore the definition of %q, or re-create the instance for another agent", rec.Agent)}}
	}
	if f, ok := mcpserver.StaleCapability(rec.ID, rec.Agent, rec.Capabilities.ToolNames, def.Capabilities.ToolNames); ok {
		return []mcpserver.Finding{f}
	}
	return nil
}

// listServers starts or dials the external servers among mounts, as `mcp
// serve` does (in dir, the instance's workspace: see [proxy.Options.Dir]),
// each in its own [proxy.Pool] and all at once, and takes each
// one's tools (or why it failed) as soon as its first attempt ends, within
// its mount's timeout ([proxy.DefaultTimeout] by default). Each server is
// stopped once listed, in the background; wait waits until all are gone
// (no orphans), so that the caller can describe and print meanwhile.
func listServers(ctx context.Context, mounts []mount.Resolved, dir, version string) (listings []mcpserver.ServerListing, wait func()) {
	var servers []mount.Resolved
	for _, m := range mounts {
		if m.Kind == mount.KindServer {
			servers = append(servers, m)
		}
	}
	out := make([]mcpserver.ServerListing, len(servers))
	var listing, stopping sync.WaitGroup
	for i, m := range servers {
		listing.Go(func() {
			pool := proxy.NewPool([]mount.Resolved{m}, noNamespace{}, proxy.Options{Version: version, Dir: dir})
			pool.Start(ctx)
			out[i] = listServer(ctx, pool, m)
			stopping.Go(func() {
				pool.Stop()
				pool.Wait()
			})
		})
	}
	listing.Wait()
	return out, stopping.Wait
}

// listServer waits for the first attempt of pool's one server, m, and
// returns what it listed or why it failed.
func listServer(ctx context.Context, pool *proxy.Pool, m mount.Resolved) mcpserver.ServerListing {
	l := mcpserver.ServerListing{Mount: m.Name, State: mcpserver.ListingUp, Tools: []string{}}
	select {
	case <-pool.FirstRound():
	case <-ctx.Done():
		l.State, l.Error = mcpserver.ListingDown, context.Cause(ctx).Error()
		return l
	}
	// Read at once: a failed server is retried after a back-off, which
	// clears its error.
	s := pool.Servers()[0]
	if st := s.Status(); st.State != proxy.StateUp {
		l.State, l.Error, l.StderrTail = mcpserver.ListingDown, st.Error, st.StderrTail
		return l
	}
	var schemas mcpserver.SchemaChecker
	for _, t := range s.Tools() {
		l.Tools = append(l.Tools, t.Name)
		if err := schemas.Check(t); err != nil {
			if l.Unservable == nil {
				l.Unservable = map[string]string{}
			}
			l.Unservable[t.Name] = err.Error()
		}
	}
	return l
}

// noNamespace: listing needs no endpoint to reconcile.
type noNamespace struct{}

func (noNamespace) Reconcile() {}
