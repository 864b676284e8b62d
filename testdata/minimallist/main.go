// Command minimallist is the floor of `agentctl instance list -o json
// --limit 50` (BenchmarkStoreScale in cmd/agentctl): testdata/minimalsqlite
// that also opens a state database with the settings agentctl's store
// opens it with, refuses one whose schema version is not the store's, runs
// the listing's query for the 50 most recent instances and writes their
// stored records as a JSON array in one write. What agentctl adds to it is
// its command line and settings, the store's checks around the open (the
// state folder made, an emptied database refused, a WAL trimmed at exit),
// and decoding, redacting and printing the records.
// TestMinimalListIsTheStores (in instance) pins the three constants below
// to the store's.
//
//	minimallist STATE_DIR/state.db
package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	_ "modernc.org/sqlite"
)

// dsnParams are instance.Open's connection settings.
const dsnParams = "?_pragma=busy_timeout(30000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)" +
	"&_pragma=wal_autocheckpoint(100)&_txlock=immediate"

// schemaVersion is the store's number of migrations.
const schemaVersion = 8

// query is the one instance.Store.Records runs for ListOptions{Limit: 50}.
const query = `SELECT * FROM (SELECT i.id, i.record, i.status, ` +
	`(SELECT count(*) FROM questions q WHERE q.instance_id = i.id AND q.status = 'open') ` +
	`FROM instances i ORDER BY i.id DESC LIMIT ?) AS t ORDER BY 1`

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "minimallist", Version: "1"}, nil)
	_ = s
	if err := list(context.Background(), os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "minimallist:", err)
		os.Exit(1)
	}
}

func list(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", "file:"+path+dsnParams)
	if err != nil {
		return err
	}
	var v int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v != schemaVersion {
		return fmt.Errorf("%s has schema version %d, not %d", path, v, schemaVersion)
	}
	rows, err := db.QueryContext(ctx, query, 50)
	if err != nil {
		return err
	}
	defer rows.Close()
	out := []byte("[")
	for n := 0; rows.Next(); n++ {
		var id, raw, status string
		var open int
		if err := rows.Scan(&id, &raw, &status, &open); err != nil {
			return err
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, raw...)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	_, err = os.Stdout.Write(append(out, "]\n"...))
	return err
}
