package instance

// SetBeforeCommit installs a fault hook for tests.
func (s *Store) SetBeforeCommit(fn func() error) { s.beforeCommit = fn }

// ExecForTest runs a statement on the store's database.
func (s *Store) ExecForTest(q string) error {
	_, err := s.db.Exec(q)
	return err
}
