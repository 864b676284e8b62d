package mcpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/mcpserver/proxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The endpoint's side of the external servers (package proxy): one flat
// namespace with the built-ins and knowledge bases, kept by reconcile.

// Conflict is a tool name that several external servers want; none of them
// is served.
type Conflict struct {
	Name    string   `json:"name"`
	Sources []string `json:"sources"`
}

// reconcile makes the registry serve the tools of the external servers that
// are up, next to the built-ins and knowledge bases. In-process names are
// reserved: an external tool that would take one, or reach the model under
// one's model-visible name, is withheld alone ([WithheldExternal]). A name
// that two external servers want is served by neither, nor are names the
// model would see as one ([AlikeExternal]). Both are reported on stderr
// (once) and by get_instance.
func (e *Endpoint) reconcile() {
	e.nsMu.Lock()
	defer e.nsMu.Unlock()
	type candidate struct {
		s    *proxy.Server
		tool *mcp.Tool
	}
	want := map[string][]candidate{}
	var offered []ExternalTool
	servers := e.pool.Servers()
	for name, s := range e.down {
		if !slices.Contains(servers, s) {
			delete(e.down, name) // unmounted: its tools are gone for good
		}
	}
	for _, s := range servers {
		m := s.Mount()
		for _, t := range s.Tools() {
			name := m.ToolName(t.Name)
			want[name] = append(want[name], candidate{s, t})
			offered = append(offered, ExternalTool{Name: name, Mount: m.Name, Source: m.Source()})
		}
	}
	withheld := WithheldExternal(e.cfg.ServerName, e.cfg.Naming, e.inProcess, offered)
	reserved := map[string]bool{}
	for _, w := range withheld {
		reserved[w.Name] = true
	}
	var names []string
	for name := range want {
		if !reserved[name] {
			names = append(names, name)
		}
	}
	alike := AlikeExternal(e.cfg.ServerName, e.cfg.Naming, names)
	conflicts := map[string][]string{}
	invalid := map[string]bool{}
	for name, cands := range want {
		if reserved[name] {
			continue
		}
		switch group := alike[name]; {
		case group != nil:
			// Names the model sees as one: each source, with its name.
			var sources []string
			for _, n := range group {
				for _, c := range want[n] {
					sources = append(sources, c.s.Mount().Source()+" ("+n+")")
				}
			}
			conflicts[name] = sources
		case len(cands) > 1:
			var sources []string
			for _, c := range cands {
				sources = append(sources, c.s.Mount().Source())
			}
			conflicts[name] = sources
		}
		if err := ValidateToolName(name); err != nil {
			e.log.Warn("an external tool has an invalid name; it is not served", "tool", name, "source", cands[0].s.Mount().Source(), "error", err)
			invalid[name] = true
		}
	}
	// External tools: drop what is gone, changed, reserved or in conflict;
	// add the rest. An unchanged definition stays registered (a relist or a
	// restart of its server must not make a call fail or tell clients of a
	// change).
	for name, served := range e.external {
		cands := want[name]
		_, clash := conflicts[name]
		if clash || reserved[name] || len(cands) != 1 || cands[0].s != served.s || !sameTool(cands[0].tool, served.tool) {
			e.registry.Remove(name)
			delete(e.external, name)
			if len(cands) == 0 && !served.s.Up() {
				e.down[name] = served.s
			}
		} else {
			served.tool = cands[0].tool
		}
	}
	var schemas SchemaChecker
	for _, name := range slices.Sorted(maps.Keys(want)) {
		cands := want[name]
		if _, clash := conflicts[name]; clash || invalid[name] || reserved[name] {
			continue
		}
		if _, ok := e.external[name]; ok {
			continue
		}
		c := cands[0]
		tool := *c.tool
		tool.Name = name
		if err := schemas.Check(&tool); err != nil {
			e.log.Warn("an external tool's schema breaks the MCP rules; it is not served", "tool", name, "source", c.s.Mount().Source(), "error", err)
			continue
		}
		m := c.s.Mount()
		ent := Entry{Name: name, Source: m.Source(), Kind: KindServer, Mount: m.Name, Prefix: m.EffectivePrefix, Base: c.tool.Name}
		if err := e.registry.AddRawTool(ent, &tool, c.s.Handler(c.tool.Name)); err != nil {
			e.log.Warn("cannot serve an external tool", "tool", name, "error", err)
			continue
		}
		e.external[name] = &servedTool{s: c.s, tool: c.tool}
		delete(e.down, name)
	}
	// Report each new collision and each newly withheld tool once.
	var list []Conflict
	for _, name := range slices.Sorted(maps.Keys(conflicts)) {
		list = append(list, Conflict{Name: name, Sources: conflicts[name]})
		if !slices.Equal(e.reported[name], conflicts[name]) {
			e.log.Warn("tool name collision: neither is served", "tool", name, "sources", strings.Join(conflicts[name], " and "))
		}
	}
	e.reported = conflicts
	e.conflicts = list
	reportedWithheld := make(map[Withheld]bool, len(withheld))
	for _, w := range withheld {
		if !e.reportedWithheld[w] {
			e.log.Warn("an external tool is withheld; the in-process tool keeps its name",
				"tool", w.Name, "source", w.Source, "holder", w.Holder, "reason", w.Reason, "fix", w.Fix)
		}
		reportedWithheld[w] = true
	}
	e.reportedWithheld = reportedWithheld
	e.withheld = withheld
}

// servedTool is an external tool the registry serves.
type servedTool struct {
	s    *proxy.Server
	tool *mcp.Tool
}

// sameTool compares two listings of a tool by value.
func sameTool(a, b *mcp.Tool) bool {
	if a == b {
		return true
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// Withheld returns the external tools withheld because an in-process tool
// keeps their name (see [WithheldExternal]).
func (e *Endpoint) Withheld() []Withheld {
	e.nsMu.RLock()
	defer e.nsMu.RUnlock()
	return slices.Clone(e.withheld)
}

// Conflicts returns the tool names that several external servers want:
// none of them is served.
func (e *Endpoint) Conflicts() []Conflict {
	e.nsMu.RLock()
	defer e.nsMu.RUnlock()
	return slices.Clone(e.conflicts)
}

// ServerStatuses returns the external servers' states, by mount order.
func (e *Endpoint) ServerStatuses() []proxy.ServerStatus { return e.pool.Statuses() }

// namespace is the endpoint as its external servers see it
// ([proxy.Namespace]).
type namespace struct{ e *Endpoint }

func (n namespace) Reconcile() { n.e.reconcile() }

// ServerLogMax is the size past which [OpenServerLog]'s file is rotated.
const ServerLogMax = 10 << 20

// OpenServerLog opens the file for [Config.ServerStderr] at path: appended
// to, and past [ServerLogMax] renamed to path.1 (one older file kept) and
// started again, so a chatty server cannot fill the disk.
func OpenServerLog(path string) (io.WriteCloser, error) {
	return proxy.OpenRotatingFile(path, ServerLogMax)
}
