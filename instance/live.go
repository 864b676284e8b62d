package instance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// An endpoint serving an instance holds a shared lock on serveLockFile in
// the instance's directory for its lifetime (see [Store.ServeLock]). The
// kernel drops the lock when the process ends however it ends, so a crash
// leaves nothing stale behind. Whoever asks whether an instance is served
// ([Store.Live], [Store.DeleteInstance]) first takes probeLockFile
// exclusively, one asker at a time, then tries serveLockFile exclusively
// without waiting: that fails exactly while an endpoint holds it.
//
// On Unix the locks are flock(2) locks. Elsewhere (Windows) instances are
// not tracked: ServeLock only checks that the instance exists, Live reports
// false and DeleteInstance never refuses; an endpoint whose instance is
// deleted still answers its tools' calls with "instance ... was deleted".
const (
	serveLockFile = ".serve.lock"
	probeLockFile = ".serve.probe"
)

func (s *Store) lockPath(id, name string) string {
	return filepath.Join(s.instancesDir(), id, name)
}

// ServeLock marks the instance id (exactly, not a reference) as served until
// release is called or the process ends. Several endpoints may serve one
// instance at once. It waits while the instance is being deleted, and then
// returns an error matching [ErrDeleted] (as it does if the instance is
// already gone). release may be called more than once.
func (s *Store) ServeLock(ctx context.Context, id string) (release func(), err error) {
	if !isID(id) {
		return nil, invalidf("%q is not an instance id; resolve a reference with Get first", id)
	}
	var f *os.File
	if serveLocking {
		if f, err = s.lockServed(ctx, id); err != nil {
			return nil, err
		}
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if f != nil {
				f.Close()
			}
		})
	}
	// A delete that did not wait for us (forced, or one that ran before we
	// locked) leaves no record behind.
	ok, err := s.Exists(ctx, id)
	if err != nil || !ok {
		release()
		if err == nil {
			err = deletedError(id)
		}
		return nil, err
	}
	return release, nil
}

// lockServed opens and share-locks the instance's serve lock file. A delete
// holding it exclusively removes the file before it lets go: then the lock
// we got is on a file nobody else sees, so look again.
func (s *Store) lockServed(ctx context.Context, id string) (*os.File, error) {
	path := s.lockPath(id, serveLockFile)
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if errors.Is(err, os.ErrNotExist) {
			// Another host's instance gets a directory here, for its
			// locks and logs, at its first serving.
			if r, gerr := s.Get(ctx, id); gerr == nil && s.Foreign(r) {
				if err := os.MkdirAll(r.Dir, 0o700); err != nil {
					return nil, fmt.Errorf("instance %s (of host %s): make its directory on this host: %w", id, r.Host, err)
				}
				continue
			}
			// A delete moves the directory aside before it removes the
			// record: give one in progress the time to finish.
			if s.deletedSoon(ctx, id) {
				return nil, deletedError(id)
			}
			return nil, fmt.Errorf("instance %s: its directory %s is missing; delete the instance and create it again", id, filepath.Dir(path))
		}
		if err != nil {
			return nil, fmt.Errorf("instance %s: open the serve lock: %w", id, err)
		}
		if err := lockFile(f, false, true); err != nil {
			f.Close()
			return nil, fmt.Errorf("instance %s: lock %s: %w", id, path, err)
		}
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return f, nil
		}
		f.Close()
	}
}

// deletedSoon reports whether instance id is gone from the store, now or
// within a second (a delete between moving the directory aside and removing
// the record).
func (s *Store) deletedSoon(ctx context.Context, id string) bool {
	deadline := time.Now().Add(time.Second)
	for {
		ok, err := s.Exists(ctx, id)
		switch {
		case err != nil:
			return false
		case !ok:
			return true
		case time.Now().After(deadline):
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Live reports whether an endpoint is serving the instance id now (see
// [Store.ServeLock]). It is always false where locks are not tracked.
func (s *Store) Live(ctx context.Context, id string) (bool, error) {
	if !isID(id) {
		return false, invalidf("%q is not an instance id; resolve a reference with Get first", id)
	}
	unlock, live, err := s.probeServed(id, false)
	if err != nil {
		return false, err
	}
	unlock()
	return live, nil
}

// probeServed reports whether an endpoint serves instance id. Unless live,
// it returns holding the serve lock exclusively (with create, creating the
// lock file if needed), so no endpoint starts serving until unlock; a
// DeleteInstance keeps it so while it deletes. A missing directory serves
// nothing.
func (s *Store) probeServed(id string, create bool) (unlock func(), live bool, err error) {
	nothing := func() {}
	if !serveLocking {
		return nothing, false, nil
	}
	probe, err := os.OpenFile(s.lockPath(id, probeLockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		return nothing, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if err := lockFile(probe, true, true); err != nil {
		probe.Close()
		return nil, false, err
	}
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE
	}
	served, err := os.OpenFile(s.lockPath(id, serveLockFile), flags, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		// No endpoint ever served it, or a delete took the directory while
		// we waited for the probe lock.
		return func() { probe.Close() }, false, nil
	}
	if err != nil {
		probe.Close()
		return nil, false, err
	}
	unlock = func() { served.Close(); probe.Close() }
	switch err := lockFile(served, true, false); {
	case errors.Is(err, errLocked):
		unlock()
		return nothing, true, nil
	case err != nil:
		unlock()
		return nil, false, err
	}
	return unlock, false, nil
}
