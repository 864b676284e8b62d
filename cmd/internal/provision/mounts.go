package provision

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
	"github.com/agentctl/agentctl/mcpserver/mount"
)

// Rename is a tool whose canonical name a mount change alters. For an
// external server, whose tools are known only once it runs, Old and New are
// patterns such as "mcp browser: <tool>" and "browser__<tool>".
type Rename struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// MountChange is a planned change of an instance's mounts: the record it
// starts from, the plan after the change and the renames it causes. Show the
// renames, then [MountChange.Apply] it.
type MountChange struct {
	Record  *instance.Record
	Toolset Toolset
	Renames []Rename
	// PrefixMode is the instance's tool prefix mode after the change.
	PrefixMode mount.PrefixMode
}

// PlanMountAdd plans mounting more knowledge bases or external servers into
// an instance. The added knowledge bases' folders must exist (see
// [CheckFolders]); the added servers' relative commands are made absolute
// and must be executable files (see [CheckCommands]). A mode not empty
// changes the instance's tool prefix mode too, as `instance mount add
// --tool-prefix-mode` asks; the renames it causes are listed like any
// other.
func PlanMountAdd(rec *instance.Record, added []mount.Mount, mode mount.PrefixMode) (*MountChange, error) {
	added, err := CheckFolders(added)
	if err != nil {
		return nil, err
	}
	if added, err = CheckCommands(added, "", FromCreateDir); err != nil {
		return nil, err
	}
	return planMountChange(rec, mode, func(cur []mount.Mount) ([]mount.Mount, error) {
		for _, a := range added {
			// The same kind under the same name: a second one of it. (A
			// server named as a knowledge base is the prefix contract's
			// reserved-name case, said by mount.Resolve.)
			if i := slices.IndexFunc(cur, func(m mount.Mount) bool { return m.Name == a.Name && m.Kind == a.Kind }); i >= 0 {
				return nil, &instance.InvalidError{Msg: fmt.Sprintf("the instance already mounts %q (%s); remove it first (agentctl instance mount remove %s %s), or give the new mount another name",
					a.Name, mountWhat(cur[i]), rec.ID, a.Name)}
			}
		}
		return append(cur, added...), nil
	})
}

// mountWhat is what a mount serves, for messages: its folder or server.
func mountWhat(m mount.Mount) string {
	switch {
	case m.Kind == mount.KindKB:
		return "the knowledge base " + m.Path
	case m.URL != "":
		return "the MCP server at " + mount.RedactURL(m.URL)
	}
	return "the MCP server " + m.Command
}

// PlanMountRemove plans unmounting the mount called name; a name the
// instance does not mount is an [instance.NotFoundError] listing its mounts.
func PlanMountRemove(rec *instance.Record, name string) (*MountChange, error) {
	return planMountChange(rec, "", func(cur []mount.Mount) ([]mount.Mount, error) {
		i := slices.IndexFunc(cur, func(m mount.Mount) bool { return m.Name == name })
		if i < 0 {
			names := make([]string, len(cur))
			for j, m := range cur {
				names[j] = m.Name
			}
			hint := "the instance has no mounts"
			if len(names) > 0 {
				hint = "the instance's mounts: " + strings.Join(names, ", ")
			}
			return nil, &instance.NotFoundError{What: "mount", Ref: name, Hint: hint}
		}
		return slices.Delete(cur, i, i+1), nil
	})
}

// planMountChange plans the change of the record's mounts that change makes
// (it gets a copy of them), in prefix mode mode (empty: the record's). The
// record's own plan is checked first (see [RecordToolset]).
func planMountChange(rec *instance.Record, mode mount.PrefixMode, change func([]mount.Mount) ([]mount.Mount, error)) (*MountChange, error) {
	before, err := RecordToolset(rec)
	if err != nil {
		return nil, err
	}
	next, err := change(Unresolved(rec.Mounts))
	if err != nil {
		return nil, err
	}
	if mode == "" {
		mode, _ = mount.ParsePrefixMode(rec.ToolPrefixMode) // RecordToolset parsed it
	}
	after, err := ResolveToolset(rec.ServerName, rec.Capabilities.ToolNames, mode, next)
	if err != nil {
		return nil, err
	}
	rn := append(Renames(before.Tools, after.Tools), PrefixRenames(rec.Mounts, after.Mounts)...)
	return &MountChange{Record: rec, Toolset: after, Renames: rn, PrefixMode: mode}, nil
}

// Apply stores the new mount set with the instance's files expanded again
// for the new tool names (the kept templates, or a generated
// instructions.md). It refuses, changing nothing, if the instance's mounts
// changed since the change was planned.
func (c *MountChange) Apply(ctx context.Context, st *instance.Store) (*instance.Record, error) {
	templates, err := KeptTemplates(c.Record)
	if err != nil {
		return nil, err
	}
	return st.UpdateInstance(ctx, c.Record.ID, func(cur *instance.Record) (map[string][]byte, error) {
		if !reflect.DeepEqual(cur.Mounts, c.Record.Mounts) {
			return nil, &instance.InvalidError{Msg: "the instance's mounts changed while this command ran; run it again"}
		}
		cur.Mounts = c.Toolset.Mounts
		if c.PrefixMode != "" {
			cur.ToolPrefixMode = string(c.PrefixMode)
		}
		return RenderFiles(cur, c.Toolset, templates)
	})
}

// Renames lists the tools present before and after whose canonical names
// change, in the order of before.
func Renames(before, after []mcpserver.NamedTool) []Rename {
	key := func(t mcpserver.NamedTool) string { return t.Mount + "\x00" + t.Base }
	now := map[string]string{}
	for _, t := range after {
		now[key(t)] = t.Canonical
	}
	var out []Rename
	for _, t := range before {
		if n, ok := now[key(t)]; ok && n != t.Canonical {
			out = append(out, Rename{Old: t.Canonical, New: n})
		}
	}
	return out
}

// PrefixRenames lists the external servers whose tools change names: their
// tools are known only once connected, so the rename is by prefix.
func PrefixRenames(before, after []mount.Resolved) []Rename {
	pattern := func(prefix string) string {
		if prefix == "" {
			return "<tool>"
		}
		return prefix + "__<tool>"
	}
	var out []Rename
	for _, b := range before {
		if b.Kind != mount.KindServer {
			continue
		}
		for _, a := range after {
			if a.Kind == mount.KindServer && a.Name == b.Name && a.EffectivePrefix != b.EffectivePrefix {
				out = append(out, Rename{Old: "mcp " + b.Name + ": " + pattern(b.EffectivePrefix), New: pattern(a.EffectivePrefix)})
			}
		}
	}
	return out
}
