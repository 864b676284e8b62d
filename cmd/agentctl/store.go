package main

import (
	"github.com/spf13/cobra"
)

// NewCmdStore is `agentctl store`, the group of the commands on the store
// itself.
func NewCmdStore(f *Factory, line cmdLine) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "The store of records, tokens, questions and events: move a fleet from one to another",
		Long: `The store keeps what agentctl knows of its instances: their records, their bearer
tokens (as hashes only), the questions they asked and the progress they reported.
The files of an instance (its client configuration, locks, run logs) are not in the
store: they stay in the state directory of the host that made it, which its record
names.

A store is one of:

  SQLite      a file, by default state.db in the state directory: one host's.
              A path or sqlite:PATH puts it elsewhere.
  PostgreSQL  postgres://USER@HOST:PORT/DATABASE: one database the hosts of a fleet
              share; 'instance list' and 'instance questions' show every host's
              instances, 'instance list --host NAME' one host's.

The store in force is --store, else AGENTCTL_STORE, else store in config.toml, else
SQLite in the state directory. Keep a password out of the URL (PGPASSWORD or
~/.pgpass); agentctl never shows one.

TLS follows the URL's sslmode, as libpq's does; without one it is prefer: TLS if
the server offers it, else none. The driver (pgx) answers a server without TLS by
opening a second connection, which every command pays (7-8 ms on a small machine).
For such a server, on this host or a private network, add ?sslmode=disable or use
its Unix socket (postgres:///DATABASE?host=/var/run/postgresql); across a network
you do not trust, give the server TLS and use sslmode=verify-full.

To move to another store, copy into it with 'agentctl store migrate', then make it
the store in force.`,
	}
	line.add(cmd, sub{[]string{"migrate"}, func(cmdLine) *cobra.Command { return NewCmdStoreMigrate(f, nil) }})
	return cmd
}
