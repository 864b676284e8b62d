package main

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/agentctl/agentctl/cmd/internal/provision"
	"github.com/agentctl/agentctl/instance"
	"github.com/spf13/cobra"
)

// NewCmdInstanceMount is `agentctl instance mount`, the group of the mount
// commands.
func NewCmdInstanceMount(f *Factory, line cmdLine) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mount",
		Short: "Add or remove an instance's mounts (knowledge bases, external MCP servers)",
		Long: `Add or remove knowledge bases and external MCP servers of an existing instance. Changing the mount set can
rename existing tools: adding a second knowledge base to an instance with one gives
the first one's tools a prefix. Every rename is printed (old -> new) on stderr, and
the change is refused unless --yes is given or you confirm at a terminal. The
instance's instructions and skills are expanded again for the new names.

Running endpoints (mcp serve, agentctl serve, on any host sharing the store) serve
the new mounts within a second, without a restart, and tell the client
(notifications/tools/list_changed). A client that lists its tools only once (see
tools_list_changed in 'agentctl agents show AGENT') must be restarted for its model
to see them: the command says so, and get_instance tells the model.`,
	}
	line.add(cmd,
		sub{[]string{"add"}, func(cmdLine) *cobra.Command { return NewCmdInstanceMountAdd(f, nil) }},
		sub{[]string{"remove", "rm"}, func(cmdLine) *cobra.Command { return NewCmdInstanceMountRemove(f, nil) }})
	return cmd
}

// changeMounts plans a mount change of an instance with plan, shows the
// renames it causes, asks (unless yes) and applies it.
func changeMounts(ctx context.Context, io *IOStreams, open storeOpener, ref string, yes bool, output string,
	plan func(*instance.Record) (*provision.MountChange, error)) error {
	return withInstance(ctx, open, ref, func(st *instance.Store, rec *instance.Record) error {
		ch, err := plan(rec)
		if err != nil {
			return err
		}
		if err := confirmRenames(io, ch.Renames, yes); err != nil {
			return err
		}
		updated, err := ch.Apply(ctx, st)
		if err != nil {
			return err
		}
		for _, line := range ch.Toolset.Announcements() {
			io.Narrate("%s", line)
		}
		narrateNameWarnings(io, ch.Toolset, updated.ID)
		io.Narrate("Instance %s now has %d mount(s).", updated.ID, len(updated.Mounts))
		r := sessionReach(ctx, st, updated)
		r.tellMounts(io, updated)
		if output == formatJSON {
			return io.PrintJSON(struct {
				*instance.Record
				Renames []provision.Rename `json:"renames"`
				Running reach              `json:"running"`
			}{updated.Redacted(), append([]provision.Rename{}, ch.Renames...), r})
		}
		_, err = fmt.Fprintln(io.Out, updated.ID)
		return err
	})
}

// confirmRenames lists the renames on stderr and, unless yes, asks for a
// confirmation at a terminal; off a terminal a rename needs yes.
func confirmRenames(io *IOStreams, rn []provision.Rename, yes bool) error {
	for _, r := range rn {
		io.Narrate("rename: %s -> %s", r.Old, r.New)
	}
	if len(rn) == 0 || yes {
		return nil
	}
	if !io.CanPrompt() {
		return &exitError{code: ExitInvalid, err: fmt.Errorf("this change renames %d tool(s) (listed above); clients and instructions that use the old names will break; re-run with --yes to accept", len(rn))}
	}
	fmt.Fprintf(io.ErrOut, "Rename %d tool(s)? [y/N] ", len(rn))
	line, _ := bufio.NewReader(io.In).ReadString('\n')
	if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
		return &exitError{code: ExitInvalid, err: fmt.Errorf("not changed")}
	}
	return nil
}

// narrateNameWarnings tells of the names the client would refuse or drop
// (too long, outside its charset), and where to find how to fix them.
func narrateNameWarnings(io *IOStreams, ts provision.Toolset, id string) {
	lines := ts.NameWarnings()
	for _, line := range lines {
		io.Narrate("%s", line)
	}
	if len(lines) > 0 {
		io.Narrate("The client may refuse or drop these tools; 'agentctl tools lint --instance %s' checks them again (exit 7 while any is left).", id)
	}
}
