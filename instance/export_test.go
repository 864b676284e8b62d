package instance

import "fmt"

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
