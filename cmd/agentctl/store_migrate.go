package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/spf13/cobra"
)

// StoreMigrateOptions are the inputs of `agentctl store migrate`.
type StoreMigrateOptions struct {
	IO *IOStreams
	// StateDir is this host's state directory, whose instance directories
	// both stores' records name.
	StateDir func() string
	// Store is the store in force (--store, AGENTCTL_STORE, config.toml),
	// the default of --from.
	Store func() string
	// Open opens the store u names for the state directory dir, creating a
	// SQLite file only with create (see [openStore]).
	Open func(ctx context.Context, dir string, u instance.StoreURL, create bool) (*instance.Store, error)

	From   string
	To     string
	DryRun bool
	Output string
}

// NewCmdStoreMigrate is `agentctl store migrate`; runF replaces
// [storeMigrateRun] in tests.
func NewCmdStoreMigrate(f *Factory, runF func(context.Context, *StoreMigrateOptions) error) *cobra.Command {
	opts := &StoreMigrateOptions{
		IO:       f.IOStreams,
		StateDir: func() string { return f.Config.StateDir() },
		Store:    func() string { return string(f.Config.Store()) },
		Open: func(ctx context.Context, dir string, u instance.StoreURL, create bool) (*instance.Store, error) {
			return openStore(ctx, dir, storeOptions{url: u, host: f.Config.String(keyHost), create: create, now: f.Now, exitAfter: f.exitAfter})
		},
	}
	cmd := &cobra.Command{
		Use:   "migrate --to STORE [--from STORE]",
		Short: "Copy every record, token, question, event and run log of one store into another",
		Long: `Copy every instance record, token, question, progress event and headless run's
output (instance logs) of one store (--from, by default the store in force) into
another (--to), in one transaction: the target gets all of it or nothing. The source
is only read. A store is a path, sqlite:PATH or postgres://USER@HOST:PORT/DATABASE
(see 'agentctl store --help').

Migrate can be run again: the rows the target has already are skipped, so a second
run copies only what the source gained since, or prints "nothing to copy". A row
the target has in another version (the same id with a different record, say
after a run there) keeps the target's version, is never overwritten, and is listed.
An instance whose label another instance of the target has is not copied, nor are
its token, questions and events (labels are unique): migrate copies the rest, lists
it and exits 4; delete one of the two and run migrate again.

The instance directories stay where they are, in this host's state directory.
Records that name no host (made before records named one) get this host's name
(host in config.toml, AGENTCTL_HOST, else the host name), so that in a shared
store they say whose files they are. Events keep their sequence numbers, unless the
target has given those to other events (several hosts' stores merged into one
database): then they follow the target's last event, in their order. An instance's
run log is copied when the target has none of it (it is not merged with one there).
Pending notifications and the web page's operator tokens stay with the source: deliver
them there, and make a new operator token with 'agentctl ui --new-token'.

Stop the endpoints and runs that write to the source first, or run migrate again
once they have stopped to copy what they wrote meanwhile. Then make the target the
store in force: --store, AGENTCTL_STORE or store in config.toml.

--dry-run counts what would be copied and writes nothing.`,
		Example: `  agentctl store migrate --to postgres://agentctl@db.internal:5432/agentctl --dry-run
  PGPASSWORD=... agentctl store migrate --to postgres://agentctl@db.internal:5432/agentctl
  agentctl store migrate --from sqlite:/backup/state.db --to postgres://agentctl@db.internal/agentctl -o json
  agentctl store migrate --from postgres://agentctl@db.internal/agentctl --to sqlite:$HOME/state.db`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(opts.Output); err != nil {
				return err
			}
			if opts.To == "" {
				return usageErrorf("%s needs --to STORE, the store to copy into: a path, sqlite:PATH or postgres://USER@HOST:PORT/DATABASE", cmd.CommandPath())
			}
			if opts.From == "" {
				opts.From = opts.Store()
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return storeMigrateRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.From, "from", "", "the `STORE` to copy from: a path, sqlite:PATH or postgres:// URL (default: the store in force, see 'agentctl store --help')")
	cmd.Flags().StringVar(&opts.To, "to", "", "the `STORE` to copy into: a path, sqlite:PATH or postgres:// URL (required)")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "count what would be copied; write nothing")
	addOutputFlag(cmd, &opts.Output, opts.IO)
	return cmd
}

// storeMigrateJSON is `store migrate -o json`: the stores (without their
// passwords) and what was copied.
type storeMigrateJSON struct {
	From string `json:"from"`
	To   string `json:"to"`
	instance.CopyStats
}

func storeMigrateRun(ctx context.Context, opts *StoreMigrateOptions) error {
	dir := opts.StateDir()
	from, to := instance.StoreURL(opts.From), instance.StoreURL(opts.To)
	if p, ok := from.SQLitePath(dir); ok {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			return &exitError{code: ExitNotFound, err: fmt.Errorf("no store to copy from: %s does not exist; give --from the store's path (sqlite:PATH) or postgres:// URL", p)}
		}
	}
	src, err := opts.Open(ctx, dir, from, false)
	if err != nil {
		return fmt.Errorf("the store to copy from: %w", err)
	}
	defer src.Close()

	toName := instance.RedactStore(opts.To)
	var dst *instance.Store
	// A dry run writes nothing: what would be copied into a new store (a
	// SQLite file not there, a PostgreSQL database without agentctl's
	// tables, which opening it would make) is what is copied into an
	// empty one.
	empty := false
	toKind := "postgres"
	if _, ok := to.SQLitePath(dir); ok {
		toKind = "sqlite"
	}
	if p, ok := to.SQLitePath(dir); ok && opts.DryRun {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			empty, toName = true, p
		}
	} else if !ok && opts.DryRun {
		have, want, err := instance.PostgresSchema(ctx, opts.To)
		switch {
		case err != nil:
			return fmt.Errorf("the store to copy into: %w", err)
		case have == 0:
			empty = true
		case have < want:
			return &instance.InvalidError{Msg: fmt.Sprintf("the store to copy into, %s, has agentctl's schema version %d, older than this agentctl's %d, which a dry run does not upgrade: "+
				"run migrate without --dry-run (it upgrades the schema first), or any agentctl command with --store pointing at it", toName, have, want)}
		}
	}
	if empty {
		tmp, err := os.MkdirTemp("", "agentctl-migrate-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dst, err = opts.Open(ctx, tmp, "", true)
		if err != nil {
			return err
		}
	}
	if dst == nil {
		dst, err = opts.Open(ctx, dir, to, true)
		if err != nil {
			return fmt.Errorf("the store to copy into: %w", err)
		}
		toName = dst.StoreName()
	}
	defer dst.Close()

	start := time.Now()
	st, err := instance.CopyStore(ctx, src, dst, instance.CopyOptions{Host: src.Host(), DryRun: opts.DryRun})
	if err != nil {
		return err
	}
	for _, c := range st.Conflicts {
		opts.IO.Narrate("Conflict: %s", TerminalText(c.String()))
	}
	if opts.Output == formatJSON {
		if err := opts.IO.PrintJSON(storeMigrateJSON{From: src.StoreName(), To: toName, CopyStats: st}); err != nil {
			return err
		}
	} else if err := printMigrateSummary(opts.IO, &st); err != nil {
		return err
	}
	// The target's kind, not dst's: a dry run into an empty store copies
	// into a SQLite one of its own.
	stores := fmt.Sprintf("from %s store %s into %s store %s", src.Kind(), src.StoreName(), toKind, toName)
	if opts.DryRun {
		opts.IO.Narrate("Dry run: %d rows would be copied %s; nothing was written.", st.Copied(), stores)
	} else {
		opts.IO.Narrate("Copied %d rows %s in %s.", st.Copied(), stores, time.Since(start).Round(time.Millisecond))
	}
	if st.HostSet > 0 {
		opts.IO.Narrate("%d records that named no host now name %s, whose state directory (%s) holds their files.", st.HostSet, src.Host(), dir)
	}
	if st.Renumbered > 0 {
		opts.IO.Narrate("%d events follow the target's last event, in their order: their sequence numbers were taken there.", st.Renumbered)
	}
	if left := st.LeftOut(); len(left) > 0 {
		return &exitError{code: ExitInvalid, err: fmt.Errorf("not everything was copied: %d of the conflicts above left rows out; resolve them and run migrate again (what was copied stays)", len(left))}
	}
	if !opts.DryRun && st.Copied() > 0 {
		opts.IO.Narrate("To use it, make it the store in force: --store %s, AGENTCTL_STORE or store in config.toml.", toName)
	}
	return nil
}

// printMigrateSummary prints a line per table, and says when there was
// nothing to copy.
func printMigrateSummary(io *IOStreams, st *instance.CopyStats) error {
	copied := "copied"
	if st.DryRun {
		copied = "to copy"
	}
	for _, t := range []struct {
		name string
		tc   instance.TableCopy
	}{{"instances", st.Instances}, {"tokens", st.Tokens}, {"questions", st.Questions}, {"events", st.Events}, {"run logs", st.RunLogs}} {
		line := fmt.Sprintf("%-10s %d %s, %d already there", t.name+":", t.tc.Copied, copied, t.tc.Skipped-t.tc.Conflicting)
		if t.tc.Conflicting > 0 {
			line += fmt.Sprintf(", %d in conflict (listed on stderr)", t.tc.Conflicting)
		}
		if _, err := fmt.Fprintln(io.Out, line); err != nil {
			return err
		}
	}
	if st.Copied() == 0 && len(st.Conflicts) == 0 {
		_, err := fmt.Fprintln(io.Out, "nothing to copy: the target already has every row")
		return err
	}
	return nil
}
