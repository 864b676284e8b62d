package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver/httpserve"
)

// Factory is what every command gets: the IO streams, the settings, the
// clock and the ways to reach the agent catalog, the state store and this
// executable. Nothing global; tests build their own, and a command's options
// take from it only what the command uses.
type Factory struct {
	IOStreams *IOStreams
	Config    *Config
	Now       func() time.Time
	// Executable is the absolute path of this agentctl as it was invoked.
	Executable func() (string, error)
	// Catalog loads the agent definitions in force.
	Catalog func() (*agents.Catalog, error)
	// Definition loads the one definition in force with this id, without
	// decoding the rest of the catalog.
	Definition func(id string) (*agents.Definition, error)
	// Store opens the state store (see [storeOpener]).
	Store storeOpener
	// TokenChecker checks instances' bearer tokens for `serve` and `mcp
	// serve --http`.
	TokenChecker func(st *instance.Store, log *slog.Logger) httpserve.TokenChecker
	// exitAfter: this run is the whole process (Main), which exits when
	// the command returns; the stores it opens are left to the exit to
	// close (see [instance.ClosedByExit]).
	exitAfter bool
	// watchSignals, when not nil (Main), makes SIGINT and SIGTERM cancel
	// the context of the command about to run; the root calls it before
	// every command that is not quick (see quickAnnotation).
	watchSignals func()
}

// storeOpener opens the state store. With create false it does not create
// one: it returns a [*noStateError] if none exists, so that commands that
// only read leave no state behind.
type storeOpener func(ctx context.Context, create bool) (*instance.Store, error)

// noStateError: the state directory has no database yet.
type noStateError struct{ dir string }

func (e *noStateError) Error() string { return "no state database in " + e.dir }

// newFactory builds the factory of one run of agentctl.
func newFactory(io *IOStreams, getenv func(string) string, args0 string) *Factory {
	f := &Factory{IOStreams: io, Config: newConfig(getenv), Now: time.Now}
	f.Executable = func() (string, error) { return executable(args0) }
	f.Catalog = func() (*agents.Catalog, error) {
		return agents.Load(agents.LoadOptions{UserDir: f.Config.AgentsDir()})
	}
	f.Definition = func(id string) (*agents.Definition, error) {
		c, err := agents.Load(agents.LoadOptions{UserDir: f.Config.AgentsDir(), Only: id})
		if err != nil {
			return nil, err
		}
		d, err := c.Lookup(id)
		if errors.Is(err, agents.ErrUnknownAgent) {
			// The full catalog names the agents that do exist.
			if all, err2 := f.Catalog(); err2 == nil {
				return all.Lookup(id)
			}
		}
		return d, err
	}
	// Every store a command opens enqueues the [[notify]] targets'
	// notifications, and delivers them (see notifyingStore).
	f.Store = notifyingStore(f, func(ctx context.Context, create bool) (*instance.Store, error) {
		return openStore(ctx, f.Config.StateDir(), storeOptions{
			url: f.Config.Store(), host: f.Config.String(keyHost), configFile: f.Config.givenFile(),
			create: create, now: f.Now, exitAfter: f.exitAfter,
		})
	})
	f.TokenChecker = func(st *instance.Store, log *slog.Logger) httpserve.TokenChecker {
		return newTokenChecker(st, log, getenv)
	}
	return f
}

// storeOptions say which store [openStore] opens, and how.
type storeOptions struct {
	url       instance.StoreURL // "" is SQLite in the state directory
	host      string            // "" is the host name
	create    bool              // create a SQLite store that is not there
	now       func() time.Time
	exitAfter bool // the process exits after the command ([instance.ClosedByExit])
	// configFile is the configuration file given by --config or
	// AGENTCTL_CONFIG (absolute), or "" ([instance.WithConfigFile]).
	configFile string
}

// openStore opens the store whose instance directories are in dir (see
// [storeOpener]).
func openStore(ctx context.Context, dir string, o storeOptions) (*instance.Store, error) {
	if db, ok := o.url.SQLitePath(dir); ok && !o.create {
		if _, err := os.Stat(db); errors.Is(err, os.ErrNotExist) {
			return nil, &noStateError{dir: dir}
		}
	}
	opts := []instance.Option{instance.WithClock(o.now), instance.WithStore(o.url), instance.WithHost(o.host), instance.WithConfigFile(o.configFile)}
	if o.exitAfter {
		opts = append(opts, instance.ClosedByExit())
	}
	return instance.Open(ctx, dir, opts...)
}

// executable is the absolute path of this agentctl as it was invoked (as
// args0), keeping a symlink's name, so that an upgrade behind a stable
// symlink keeps working.
func executable(args0 string) (string, error) {
	p := args0
	if !strings.ContainsRune(p, filepath.Separator) {
		lp, err := exec.LookPath(p)
		if err != nil {
			return os.Executable()
		}
		p = lp
	}
	return filepath.Abs(p)
}

// withStore opens the existing store for one command; a [*noStateError] if
// there is none.
func withStore(ctx context.Context, open storeOpener, fn func(*instance.Store) error) error {
	st, err := open(ctx, false)
	if err != nil {
		return err
	}
	defer st.Close()
	return st.Explain(fn(st))
}

// withInstance opens the existing store and resolves ref (an id, a unique id
// prefix or a label) for one command.
func withInstance(ctx context.Context, open storeOpener, ref string, fn func(*instance.Store, *instance.Record) error) error {
	err := withStore(ctx, open, func(st *instance.Store) error {
		r, err := st.Get(ctx, ref)
		if err != nil {
			return err
		}
		return fn(st, r)
	})
	return noInstance(err, ref)
}

// noInstance is err, but for a [*noStateError], which it gives as instance
// ref not found.
func noInstance(err error, ref string) error {
	var ns *noStateError
	if errors.As(err, &ns) {
		return &instance.NotFoundError{What: "instance", Ref: ref, Hint: "no instance was ever created in " + ns.dir}
	}
	return err
}
