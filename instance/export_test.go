package instance

import (
	"context"
	"fmt"
	"time"
)

// SetBeforeCommit installs a fault hook for tests.
func (s *Store) SetBeforeCommit(fn func() error) { s.beforeCommit = fn }

// SetAfterResolve installs a hook that DeleteInstance runs once it has
// resolved the reference, before anything else.
func (s *Store) SetAfterResolve(fn func()) { s.afterResolve = fn }

// ExecForTest runs a statement on the store's database.
func (s *Store) ExecForTest(q string) error {
	_, err := s.db.Exec(q)
	return err
}

// HoldDeleteLockForTest holds the instance as a delete does, until unlock.
func (s *Store) HoldDeleteLockForTest(id string) (unlock func()) {
	unlock, live, err := s.probeServed(id, true)
	if err != nil || live {
		panic(fmt.Sprint("HoldDeleteLockForTest: ", live, err))
	}
	return unlock
}

// ListQueryPlanForTest returns the details of SQLite's plan for the query
// [Store.Records] runs with o, one step a string.
func (s *Store) ListQueryPlanForTest(o ListOptions) ([]string, error) {
	q, args := listQuery(o)
	rows, err := s.db.Query("EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return nil, err
		}
		out = append(out, detail)
	}
	return out, rows.Err()
}

// InWAL is inWAL, for tests.
var InWAL = inWAL

// SetLostClientGraceForTest replaces [LostClientGrace] for this store.
func (s *Store) SetLostClientGraceForTest(d time.Duration) { s.lostClientGrace = d }

// SetDiskFullForTest makes each write of DeleteInstance ask full first:
// true fails it as on a full disk.
func (s *Store) SetDiskFullForTest(full func() bool) { s.diskFullHook = full }

// CountForTest returns the count(*) query q gives; its ? placeholders are
// rebound for the store's database, as the store's own statements are.
func (s *Store) CountForTest(q string, args ...any) (n int, err error) {
	err = s.db.QueryRowContext(context.Background(), q, args...).Scan(&n)
	return n, err
}

// ConnectPath is the file `instance connect` edits for rec in scope.
func ConnectPath(rec *Record, o ConnectOptions) (string, error) {
	_, path, err := resolveConnect(rec, o)
	return path, err
}

// SetConnectLockWait sets how long connect waits for another program's
// lock, until the test ends.
func SetConnectLockWait(t interface{ Cleanup(func()) }, d time.Duration) {
	old := connectLockWait
	connectLockWait = d
	t.Cleanup(func() { connectLockWait = old })
}

// EditFileForTest puts next in place of the file at path as connect edits
// a client's file (lock, compare-and-swap, backups, owner).
func EditFileForTest(path string, next []byte) (*ConnectResult, error) {
	res := &ConnectResult{Path: path}
	err := editConfig(path, res, func([]byte, bool) (*fileEdit, error) { return &fileEdit{next: next}, nil })
	return res, err
}
