// Package provision does what the agentctl commands ask of instances, between
// the command line and the store: it creates an instance with its mounts,
// client configuration and expanded instructions and skills; changes an
// instance's mounts, listing the tool renames the change causes;
// and re-checks a record's mounts against the prefix contract before an
// endpoint serves it.
//
// The shortest use:
//
//	rec, plan, err := provision.Create(ctx, openStore, provision.CreateOptions{
//		Definition: def, Workspace: ".", Executable: exe,
//		Mounts: []mount.Mount{{Kind: mount.KindKB, Name: "docs", Path: "/srv/docs"}},
//	})
//	for _, line := range plan.Announcements() {
//		fmt.Fprintln(os.Stderr, line)
//	}
//
// It imports [github.com/agentctl/agentctl/instance] (the store and its
// records), [github.com/agentctl/agentctl/mcpserver] (the tool plan and the
// instruction templates) and [github.com/agentctl/agentctl/mcpserver/mount]
// (the prefix contract); it never imports a command-line library, and it
// prints nothing: what to tell the user is returned.
package provision
