package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentctl/agentctl/instance"
	"github.com/spf13/cobra"
)

// InstanceDeleteOptions are the inputs of `instance delete`.
type InstanceDeleteOptions struct {
	IO       *IOStreams
	Store    storeOpener
	StateDir func() string
	Getenv   func(string) string

	Instance string
	Output   string
	// Force deletes an instance even while an endpoint is serving it or
	// `instance run` is running its client.
	Force bool
}

// NewCmdInstanceDelete is `agentctl instance delete`; runF replaces
// [instanceDeleteRun] in tests.
func NewCmdInstanceDelete(f *Factory, runF func(context.Context, *InstanceDeleteOptions) error) *cobra.Command {
	opts := &InstanceDeleteOptions{IO: f.IOStreams, Store: f.Store, StateDir: func() string { return f.Config.StateDir() }, Getenv: f.Config.getenv}
	cmd := &cobra.Command{
		Use:     "delete INSTANCE",
		Aliases: []string{"rm"},
		Short:   "Delete an instance: its record, questions, events and directory",
		Long: `Delete an instance: its record, questions, events and directory.

An instance whose endpoint is running (a client has 'mcp serve' open for it), or
whose client 'agentctl instance run' is running, is not deleted unless you pass
--force (exit 4): the endpoint would lose its instance under the model's feet, and
the client its directory. Wait for the run to end ('instance logs --follow'
follows it), or stop it, first. With --force it is deleted all the same, and the
endpoint's tools answer the model that the instance was deleted.

The entries 'agentctl instance connect' put in the files its client reads (either
scope) are taken out first, as 'instance disconnect' does (the file backed up): left
there, they would start an instance that is gone each time the client starts. An
entry changed by hand since is left, and named on stderr. -o json lists the files
changed as "disconnected".

It works on a full disk, taking the least space it can: the instance's directory
goes first, then the 1 MiB reserve that create and gc keep in the state directory;
nothing is compacted on the way ('agentctl gc' does that once there is room).`,
		Example: `  agentctl instance delete fix-login
  agentctl instance delete 01jq3 --force`,
		Args:              exactArgs(1, "an instance id, id prefix or label"),
		ValidArgsFunction: completeInstances(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Output); err != nil {
				return err
			}
			opts.Instance = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return instanceDeleteRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "delete the instance even while an endpoint is serving it or a run is in progress")
	addOutputFlag(cmd, &opts.Output, opts.IO)
	return cmd
}

// disconnectDeleted takes the instance's entries out of the files
// `instance connect` put them in (each scope's), as disconnect does, and
// returns those files: an entry left there starts `mcp serve` for an
// instance that is gone, which fails every time the client starts, and
// nothing could remove it afterwards (disconnect needs the instance). An
// entry changed by hand since is left, and named.
func disconnectDeleted(io *IOStreams, r *instance.Record, getenv func(string) string) []string {
	out := []string{}
	for _, scope := range []string{instance.ScopeWorkspace, instance.ScopeUser} {
		o := instance.ConnectOptions{Scope: scope, Getenv: getenv}
		path, ok := instance.Connected(r, o)
		if !ok {
			continue
		}
		res, err := instance.Disconnect(r, o)
		if err != nil {
			io.Narrate("warning: %s still has an entry that starts instance %s, which will not start any more; remove it yourself: %v", path, r.ID, err)
			continue
		}
		io.Narrate("%s: %s removed (it started this instance).", res.Path, res.Key)
		out = append(out, res.Path)
	}
	return out
}

func instanceDeleteRun(ctx context.Context, opts *InstanceDeleteOptions) error {
	// Not withInstance: that decodes the record, and an instance whose
	// record is corrupt must still be deletable.
	opened := false
	del := func(st *instance.Store) error {
		opened = true
		disconnected := []string{}
		r, err := st.DeleteInstance(ctx, opts.Instance, instance.DeleteOptions{Force: opts.Force,
			Prepare: func(r *instance.Record) { disconnected = disconnectDeleted(opts.IO, r, opts.Getenv) }})
		if err != nil {
			return err
		}
		if st.Foreign(r) {
			// r.Dir is the other host's: this one removed only its own.
			opts.IO.Narrate("Deleted instance %s. Its files on host %s (%s) stay there until `agentctl gc` runs on %s.", r.ID, r.Host, r.Dir, r.Host)
		} else {
			opts.IO.Narrate("Deleted instance %s and %s.", r.ID, r.Dir)
		}
		if opts.Output == formatJSON {
			return opts.IO.PrintJSON(struct {
				*instance.Record
				Disconnected []string `json:"disconnected"`
			}{r.Redacted(), disconnected})
		}
		_, err = fmt.Fprintln(opts.IO.Out, r.ID)
		return err
	}
	err := withStore(ctx, opts.Store, del)
	// On a full disk even opening the database can fail (SQLite makes its
	// WAL index again when no process has it open): the reserve kept for
	// deletes makes room for that too.
	if !opened && instance.IsDiskFull(err) && opts.StateDir != nil && instance.ReleaseReserve(opts.StateDir()) {
		err = withStore(ctx, opts.Store, del)
	}
	var ns *noStateError
	if errors.As(err, &ns) {
		return &instance.NotFoundError{What: "instance", Ref: opts.Instance, Hint: "no instance was ever created in " + ns.dir}
	}
	return err
}
