package main

import (
	"bufio"
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/spf13/cobra"
)

func (a *App) newInstanceMountCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mount",
		Short: "Add or remove an instance's mounts (knowledge bases, external MCP servers)",
		Long: `Add or remove knowledge bases and external MCP servers of an existing instance. Changing the mount set can
rename existing tools: adding a second knowledge base to an instance with one gives
the first one's tools a prefix. Every rename is printed (old -> new) on stderr, and
the change is refused unless --yes is given or you confirm at a terminal. The
instance's instructions and skills are expanded again for the new names. A running
endpoint serves the new mounts once it is restarted.`,
	}
	cmd.AddCommand(a.newMountAddCmd(), a.newMountRemoveCmd())
	return cmd
}

func (a *App) newMountAddCmd() *cobra.Command {
	var (
		mounts mountFlags
		yes    bool
		output string
	)
	cmd := &cobra.Command{
		Use:   "add INSTANCE [--kb NAME=DIR] [--mcp NAME=COMMAND] ...",
		Short: "Mount knowledge bases or external MCP servers into an instance",
		Example: `  agentctl instance mount add fix-login --kb notes=./notes --yes
  agentctl instance mount add fix-login --mcp 'browser=npx -y @playwright/mcp'`,
		Args:              exactArgs(1, "an instance id, id prefix or label"),
		ValidArgsFunction: a.completeInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(output); err != nil {
				return err
			}
			if mounts.empty() {
				return usageErrorf("nothing to add: give one or more --kb NAME=DIR or --mcp NAME=COMMAND")
			}
			added, err := a.configuredMounts(mounts, false) // config-file mounts apply at create only
			if err != nil {
				return err
			}
			return a.changeMounts(cmd.Context(), args[0], yes, output, func(cur []mount.Mount) ([]mount.Mount, error) {
				return append(cur, added...), nil
			})
		},
	}
	mounts.register(cmd.Flags())
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "accept the renames this change causes without asking")
	addOutputFlag(cmd, &output)
	return cmd
}

func (a *App) newMountRemoveCmd() *cobra.Command {
	var (
		yes    bool
		output string
	)
	cmd := &cobra.Command{
		Use:               "remove INSTANCE NAME",
		Aliases:           []string{"rm"},
		Short:             "Unmount a knowledge base or an external MCP server from an instance",
		Example:           `  agentctl instance mount remove fix-login notes --yes`,
		Args:              exactArgs(2, "an instance and a mount name"),
		ValidArgsFunction: a.completeInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(output); err != nil {
				return err
			}
			return a.changeMounts(cmd.Context(), args[0], yes, output, func(cur []mount.Mount) ([]mount.Mount, error) {
				i := slices.IndexFunc(cur, func(k mount.Mount) bool { return k.Name == args[1] })
				if i < 0 {
					var names []string
					for _, k := range cur {
						names = append(names, k.Name)
					}
					return nil, &instance.NotFoundError{What: "mount", Ref: args[1], Hint: "the instance's mounts: " + orDash(strings.Join(names, ", "))}
				}
				return slices.Delete(cur, i, i+1), nil
			})
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "accept the renames this change causes without asking")
	addOutputFlag(cmd, &output)
	return cmd
}

// rename is a tool whose canonical name a mount change alters.
type rename struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// renames lists the tools present before and after whose names change.
func renames(before, after []mcpserver.PlannedTool) []rename {
	key := func(t mcpserver.PlannedTool) string { return t.Mount + "\x00" + t.Base }
	now := map[string]string{}
	for _, t := range after {
		now[key(t)] = t.Canonical
	}
	var out []rename
	for _, t := range before {
		if n, ok := now[key(t)]; ok && n != t.Canonical {
			out = append(out, rename{Old: t.Canonical, New: n})
		}
	}
	return out
}

// prefixRenames lists the external servers whose tools change names: their
// tools are known only once connected, so the rename is by prefix.
func prefixRenames(before, after []mount.Resolved) []rename {
	pattern := func(prefix string) string {
		if prefix == "" {
			return "<tool>"
		}
		return prefix + "__<tool>"
	}
	var out []rename
	for _, b := range before {
		if b.Kind != "mcp" {
			continue
		}
		for _, a := range after {
			if a.Kind == "mcp" && a.Name == b.Name && a.EffectivePrefix != b.EffectivePrefix {
				out = append(out, rename{Old: "mcp " + b.Name + ": " + pattern(b.EffectivePrefix), New: pattern(a.EffectivePrefix)})
			}
		}
	}
	return out
}

// changeMounts recomputes an instance's mounts, shows the renames, asks,
// and stores the new mount set with its re-expanded files.
func (a *App) changeMounts(ctx context.Context, ref string, yes bool, output string, change func([]mount.Mount) ([]mount.Mount, error)) error {
	return a.withInstance(ctx, ref, func(st *instance.Store, rec *instance.Record) error {
		_, before, err := recordPlan(rec)
		if err != nil {
			return err
		}
		next, err := change(unresolved(rec.Mounts))
		if err != nil {
			return err
		}
		mode, _ := mount.ParsePrefixMode(rec.ToolPrefixMode)
		mounts, after, err := planMounts(rec.ServerName, rec.Capabilities.ToolNames, mode, next)
		if err != nil {
			return err
		}
		rn := append(renames(before, after), prefixRenames(rec.Mounts, mounts)...)
		for _, r := range rn {
			a.IO.Narrate("rename: %s -> %s", r.Old, r.New)
		}
		if len(rn) > 0 && !yes {
			if !a.IO.CanPrompt() {
				return &exitError{code: ExitInvalid, err: fmt.Errorf("this change renames %d tool(s) (listed above); clients and instructions that use the old names will break; re-run with --yes to accept", len(rn))}
			}
			fmt.Fprintf(a.IO.ErrOut, "Rename %d tool(s)? [y/N] ", len(rn))
			line, _ := bufio.NewReader(a.IO.In).ReadString('\n')
			if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
				return &exitError{code: ExitInvalid, err: fmt.Errorf("not changed")}
			}
		}
		templates, err := keptTemplates(rec)
		if err != nil {
			return err
		}
		newMounts := mounts
		updated, err := st.UpdateInstance(ctx, rec.ID, func(cur *instance.Record) (map[string][]byte, error) {
			if !reflect.DeepEqual(cur.Mounts, rec.Mounts) {
				return nil, &instance.InvalidError{Msg: "the instance's mounts changed while this command ran; run it again"}
			}
			cur.Mounts = newMounts
			return renderFiles(cur, mounts, after, templates, nil)
		})
		if err != nil {
			return err
		}
		for _, m := range mounts {
			if m.PrefixOrigin == mount.OriginDerived {
				a.IO.Narrate("%s", m.Announcement())
			}
		}
		a.IO.Narrate("Instance %s now has %d mount(s); a running endpoint serves them once restarted.", updated.ID, len(updated.Mounts))
		if output == formatJSON {
			return a.IO.PrintJSON(struct {
				*instance.Record
				Renames []rename `json:"renames"`
			}{updated.Redacted(), append([]rename{}, rn...)})
		}
		_, err = fmt.Fprintln(a.IO.Out, updated.ID)
		return err
	})
}
