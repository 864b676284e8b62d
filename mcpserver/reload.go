package mcpserver

import (
	"errors"
	"reflect"
	"slices"
	"time"

	"github.com/agentctl/agentctl/mcpserver/kb"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A running endpoint follows its instance's mounts: `instance mount add`
// and `remove` change the record, the serving side reads it again and
// calls [Endpoint.SetMounts], and the tools change under the running
// session. go-sdk sends notifications/tools/list_changed for every change
// of the server's tools; a client that does not follow it sees the change
// only in get_instance's tools_changed until it is restarted.

// ToolsChange is the last change of the endpoint's mounts while it ran, as
// get_instance shows it.
type ToolsChange struct {
	At            time.Time `json:"at"`
	MountsAdded   []string  `json:"mounts_added"`
	MountsRemoved []string  `json:"mounts_removed"`
	// MountsChanged are mounts kept whose tools' names or definition
	// changed (a prefix given or taken away, a server's command).
	MountsChanged []string `json:"mounts_changed"`
	// Errors are the mounts that could not be served (a knowledge base's
	// folder missing on this host): their tools are absent.
	Errors []string `json:"errors,omitempty"`
	// Note tells the model what the change means for it.
	Note string `json:"note"`
}

// ErrStopped is [Endpoint.SetMounts]' error once the endpoint has
// stopped (closed): there is nothing left to change.
var ErrStopped = errors.New("the endpoint has stopped")

// SetMounts makes ms the endpoint's mounts while it runs: knowledge bases
// no longer mounted are closed and their tools withdrawn, new ones opened
// and their tools added, external servers stopped and started
// ([proxy.Pool.Set]); a mount whose prefix alone changed keeps running
// under its new names. Every tool change reaches the client as
// notifications/tools/list_changed. A mount that cannot be served is left
// out and named in the error; the others are applied. ms must have passed
// the prefix contract ([mount.Resolve]), as a record's mounts have.
func (e *Endpoint) SetMounts(ms []mount.Resolved) (*ToolsChange, error) {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	if e.closed {
		return nil, ErrStopped
	}
	e.nsMu.Lock()
	old := e.mounts
	byName := func(list []mount.Resolved) map[string]mount.Resolved {
		out := map[string]mount.Resolved{}
		for _, m := range list {
			out[m.Name] = m
		}
		return out
	}
	oldBy, newBy := byName(old), byName(ms)
	ch := &ToolsChange{At: time.Now().UTC(), MountsAdded: []string{}, MountsRemoved: []string{}, MountsChanged: []string{}}
	for _, m := range old {
		n, kept := newBy[m.Name]
		switch {
		case !kept:
			ch.MountsRemoved = append(ch.MountsRemoved, m.Name)
		case !reflect.DeepEqual(m, n):
			ch.MountsChanged = append(ch.MountsChanged, m.Name)
		}
	}
	for _, m := range ms {
		if _, ok := oldBy[m.Name]; !ok {
			ch.MountsAdded = append(ch.MountsAdded, m.Name)
		}
	}
	// Knowledge bases, in two steps so that no name is held by a base on
	// its way out: withdraw the tools of every base gone or changed (the
	// bases stay open), then register the new set, a base whose prefix
	// alone changed under its new names without reopening it. A base that
	// cannot be served as asked keeps its old names if it had them, and
	// is named in the error.
	var errs []error
	prev := map[string]*kb.Base{} // withdrawn, still open
	for _, o := range old {
		if o.Kind != mount.KindKB {
			continue
		}
		if n, ok := newBy[o.Name]; ok && reflect.DeepEqual(o, n) && e.hasKB(o.Name) {
			continue
		}
		if b := e.kbNamed(o.Name); b != nil {
			e.withdrawKB(o.Name)
			prev[o.Name] = b
		}
	}
	var served []mount.Resolved
	keep := map[*kb.Base]bool{}
	for _, m := range ms {
		if m.Kind != mount.KindKB {
			served = append(served, m)
			continue
		}
		o, had := oldBy[m.Name]
		b, withdrawn := prev[m.Name]
		if !withdrawn && had && reflect.DeepEqual(o, m) {
			if cur := e.kbNamed(m.Name); cur != nil {
				keep[cur] = true
				served = append(served, m)
				continue
			}
		}
		var err error
		if withdrawn && reflect.DeepEqual(o.Mount, m.Mount) {
			err = e.registerKB(b, m) // its prefix alone changed
			if err == nil {
				keep[b] = true
				served = append(served, m)
				continue
			}
		} else {
			var nb *kb.Base
			if nb, err = e.openKB(m); err == nil {
				if err = e.registerKB(nb, m); err == nil {
					e.kbs = append(e.kbs, nb)
					keep[nb] = true
					served = append(served, m)
					continue
				}
				nb.Close()
			}
		}
		errs = append(errs, err)
		ch.Errors = append(ch.Errors, err.Error())
		if withdrawn && e.registerKB(b, o) == nil { // as it was
			keep[b] = true
			served = append(served, o)
		}
	}
	for name, b := range prev {
		if !keep[b] {
			e.closeKB(name, b)
		}
	}
	e.mounts = served
	e.inProcess = inProcessTools(e.registry, e.cfg.ServerName, e.cfg.Naming)
	instr := instructions(e.cfg, served) // a later session's initialize names the new tools
	e.instr.Store(&instr)
	e.nsMu.Unlock()
	e.pool.Set(ms) // reconciles: external tools under their new names
	ch.Note = changeNote(e.cfg.ToolsListChanged, ch)
	e.changeMu.Lock()
	e.change = ch
	e.changeMu.Unlock()
	if len(ch.MountsAdded)+len(ch.MountsRemoved)+len(ch.MountsChanged) > 0 {
		e.log.Info("the instance's mounts changed; serving the new set", "added", ch.MountsAdded, "removed", ch.MountsRemoved,
			"changed", ch.MountsChanged, "client_relists", e.cfg.ToolsListChanged)
	}
	return ch, errors.Join(errs...)
}

// withInstructions gives an initialize (or discover) result the
// instructions of the current mount set, once it changed since New.
func (e *Endpoint) withInstructions(res mcp.Result, err error) (mcp.Result, error) {
	instr := e.instr.Load()
	if err != nil || instr == nil {
		return res, err
	}
	switch r := res.(type) {
	case *mcp.InitializeResult:
		c := *r
		c.Instructions = *instr
		return &c, nil
	case *mcp.DiscoverResult:
		c := *r
		c.Instructions = *instr
		return &c, nil
	}
	return res, err
}

// changeNote is [ToolsChange.Note].
func changeNote(follows bool, ch *ToolsChange) string {
	if follows {
		return "The instance's mounts changed while you ran; your client was told (notifications/tools/list_changed) and lists its tools again: use the tools as they are listed now."
	}
	return "The instance's mounts changed while you ran, but your client does not list its tools again: tools added since it started are not shown to you until the person restarts the client, and tools removed fail when called. Tell the person if you need them."
}

// RestartServers restarts the external servers named (all when none is):
// see [proxy.Pool.Restart]. It returns the names of those restarting.
func (e *Endpoint) RestartServers(names ...string) []string {
	return e.pool.Restart(names...)
}

// lastChange is the last [ToolsChange], or nil.
func (e *Endpoint) lastChange() *ToolsChange {
	e.changeMu.Lock()
	defer e.changeMu.Unlock()
	return e.change
}

// hasKB reports whether the knowledge base mounted as name is open.
func (e *Endpoint) hasKB(name string) bool { return e.kbNamed(name) != nil }

// kbNamed is the open knowledge base mounted as name, or nil.
func (e *Endpoint) kbNamed(name string) *kb.Base {
	for _, b := range e.kbs {
		if b.Name() == name {
			return b
		}
	}
	return nil
}

// withdrawKB takes the tools of the knowledge base mounted as name out of
// the registry (e.nsMu held); the base stays open.
func (e *Endpoint) withdrawKB(name string) {
	for _, ent := range e.registry.Entries() {
		if ent.Kind == KindKB && ent.Mount == name {
			e.registry.Remove(ent.Name)
		}
	}
}

// closeKB closes base b, mounted as name, and forgets it (e.nsMu held).
func (e *Endpoint) closeKB(name string, b *kb.Base) {
	e.kbs = slices.DeleteFunc(e.kbs, func(x *kb.Base) bool { return x == b })
	if err := b.Close(); err != nil {
		e.log.Warn("closing a knowledge base no longer mounted", "mount", name, "error", err)
	}
}

// openKB opens the knowledge base of mount m.
func (e *Endpoint) openKB(m mount.Resolved) (*kb.Base, error) {
	b, err := kb.Open(m.Name, m.Path, kb.Options{ReadOnly: m.ReadOnly, MaxBytes: m.MaxBytes,
		IndexDir: e.cfg.KBIndexDir, RefreshInterval: e.cfg.KBRefreshInterval})
	if err != nil {
		return nil, &MountError{Mount: m.Name, Err: err}
	}
	return b, nil
}

// registerKB registers base b's tools under mount m's names (e.nsMu held);
// on an error none of them is. An external tool that holds one of the
// names gives it up: in-process names are reserved, and the next
// reconcile withholds it.
func (e *Endpoint) registerKB(b *kb.Base, m mount.Resolved) error {
	for _, base := range KBToolBases(m.ReadOnly) {
		name := m.ToolName(base)
		if _, ext := e.external[name]; ext {
			e.registry.Remove(name)
			delete(e.external, name)
		}
	}
	if err := RegisterKBTools(e.registry, b, m.EffectivePrefix, m.ToolName); err != nil {
		e.withdrawKB(m.Name)
		return &MountError{Mount: m.Name, Err: err}
	}
	return nil
}
