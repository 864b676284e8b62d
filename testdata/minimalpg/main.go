// Command minimalpg connects to the PostgreSQL database $AGENTCTL_STORE
// names, as agentctl's store does (pgx, statements in one round trip),
// reads the schema version agentctl keeps there and exits: the floor of
// any agentctl command on a PostgreSQL store (BenchmarkStoreCommands in
// cmd/agentctl), a new process's connection and one statement.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5"
)

func main() {
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(os.Getenv("AGENTCTL_STORE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "minimalpg:", err)
		os.Exit(1)
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "minimalpg:", err)
		os.Exit(1)
	}
	var v int
	if err := conn.QueryRow(ctx, `SELECT version FROM agentctl_schema`).Scan(&v); err != nil {
		fmt.Fprintln(os.Stderr, "minimalpg:", err)
		os.Exit(1)
	}
	conn.Close(ctx)
	fmt.Println("schema", v)
}
