package instance

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A SQLite store's watch is woken by the system's report of a write to
// the database's files, not by its poll (here once an hour): a commit of
// another store wakes it, and nothing else does.
func TestSQLiteWatchWakesOnFileEvents(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := confOpen(t, dir, "")
	b := st.db.be.(*sqliteBackend)
	b.fallback = time.Hour // before the watch starts
	needFileEvents(t, b)
	ch, stop := st.WatchRecord(ctx, "01kaaaaaaaaaaaaaaaaaaaaaaa")
	defer stop()
	sqliteSettled(ch)
	confQuiet(t, ch, 2*SQLiteWatchInterval, "an idle store")
	other := confOpen(t, dir, "")
	confCreate(t, other, "auggie", "", nil)
	confReceives(t, ch, "a commit of another store")
	confQuiet(t, ch, 2*SQLiteWatchInterval, "the store after the commit")
	if _, err := other.Get(ctx, "01kaaaaaaaaaaaaaaaaaaaaaaa"); err == nil {
		t.Fatal("a made-up id was found")
	}
	confQuiet(t, ch, 2*SQLiteWatchInterval, "a read of another store")
}

// A SQLite store whose data version cannot be read wakes every watcher at
// each try, since a commit may go unseen meanwhile, and once more when it
// can be read again (on a new connection, whose versions do not compare
// with the old one's); then the watch is quiet until the next commit. So
// it is where there are no file events, and the watch polls.
func TestSQLiteWatchWakesWhenTheStoreCannotBeRead(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := st.db.be.(*sqliteBackend)
	b.files = func(string) (<-chan struct{}, func()) { return nil, func() {} }
	var failing atomic.Bool
	conns := map[any]bool{} // by the driver's connection
	var newConns atomic.Int32
	b.version = func(conn *sql.Conn) (int64, error) { // before the watch starts
		_ = conn.Raw(func(dc any) error {
			if !conns[dc] {
				conns[dc] = true
				newConns.Add(1)
			}
			return nil
		})
		if failing.Load() {
			return 0, errors.New("disk I/O error")
		}
		return dataVersion(conn)
	}
	ch, stop := st.WatchRecord(ctx, "01kaaaaaaaaaaaaaaaaaaaaaaa")
	defer stop()
	sqliteSettled(ch)
	confQuiet(t, ch, 2*SQLiteWatchInterval, "an idle store")

	failing.Store(true)
	confReceives(t, ch, "a failed read")
	confReceives(t, ch, "a second failed read")
	failing.Store(false)
	sqliteSettled(ch) // the last failure's wake, and the first read's after
	confQuiet(t, ch, 3*SQLiteWatchInterval, "a store that can be read again")
	if n := newConns.Load(); n < 3 {
		t.Errorf("the watch read on %d connections, want a new one after each failure", n)
	}
	confCreate(t, st, "auggie", "", nil)
	confReceives(t, ch, "a commit after the failures")

	// The connections the watch gave up are not the store's to use: they
	// wait for no lock.
	b.Close()
	var held []*sql.Conn
	for range st.db.Stats().Idle {
		conn, err := st.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, conn)
		var ms int
		if err := conn.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&ms); err != nil || ms == 0 {
			t.Errorf("a connection of the store's pool waits %d ms for a lock (%v), want the store's 30000", ms, err)
		}
	}
	for _, conn := range held {
		conn.Close()
	}
}

// A state database reached through a link keeps its WAL beside the file
// linked to: the watch hears the writes there (its poll here an hour), the
// WAL is private like the database, and a store left to the process's
// exit still trims it.
func TestSQLiteWatchFollowsALinkedDatabase(t *testing.T) {
	ctx := context.Background()
	realDir, dir := t.TempDir(), t.TempDir()
	real := filepath.Join(realDir, "elsewhere.db")
	// A store left to the process's exit leaves its WAL behind.
	first := confOpen(t, t.TempDir(), StoreURL("sqlite:"+real), ClosedByExit())
	confCreate(t, first, "auggie", "", nil)
	first.Close()
	if err := os.Symlink(real, filepath.Join(dir, DBFile)); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	// As another tool may have left them.
	for _, f := range []string{real, real + "-wal"} {
		if err := os.Chmod(f, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st := confOpen(t, dir, "")
	b := st.db.be.(*sqliteBackend)
	b.fallback = time.Hour
	needFileEvents(t, b)
	ch, stop := st.WatchRecord(ctx, "01kaaaaaaaaaaaaaaaaaaaaaaa")
	defer stop()
	sqliteSettled(ch)
	confCreate(t, confOpen(t, dir, ""), "codex", "", nil)
	confReceives(t, ch, "a commit to the linked database")
	fi, err := os.Stat(real + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("the linked database's WAL has mode %v, want it private (0600)", fi.Mode().Perm())
	}
	if fi, err := os.Stat(real); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("the linked database: %v %v, want it private (0600)", fi.Mode().Perm(), err)
	}

	// A commit larger than the checkpoint's bound, from a store left to
	// the exit: its close folds the WAL in and truncates it.
	exiting := confOpen(t, dir, "", ClosedByExit())
	rec := confCreate(t, exiting, "gemini", "", nil)
	big := strings.Repeat("x", 2*walCheckpointPages*walFrameBytes)
	if _, err := exiting.AddEvent(ctx, Event{InstanceID: rec.ID, Tool: "report_progress", Status: StatusRunning, Message: big}); err != nil {
		t.Fatal(err)
	}
	b.Close() // the watch's connection would keep the checkpoint from finishing
	exiting.Close()
	if fi, err := os.Stat(real + "-wal"); err != nil || fi.Size() != 0 {
		t.Errorf("the linked database's WAL after a close at exit: %v %v, want it truncated", fi.Size(), err)
	}
}

// When the system stops reporting the database's writes (their folder
// removed), the report channel closes; the watch then polls every
// SQLiteWatchInterval rather than waiting for its fallback, and does not
// spin on the closed channel.
func TestSQLiteWatchPollsWhenFileEventsEnd(t *testing.T) {
	parent := t.TempDir()
	gone := filepath.Join(parent, "state")
	if err := os.Mkdir(gone, 0o700); err != nil {
		t.Fatal(err)
	}
	ch, stopFiles := fileChanges(filepath.Join(gone, DBFile))
	if ch == nil {
		t.Skip("no file events on this system: the watch polls")
	}
	defer stopFiles()
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(confWait)
	for open := true; open; {
		select {
		case _, open = <-ch:
		case <-deadline:
			t.Fatal("the file events of a removed folder's database did not end")
		}
	}

	ctx := context.Background()
	dir := t.TempDir()
	st := confOpen(t, dir, "")
	b := st.db.be.(*sqliteBackend)
	b.fallback = time.Hour
	ended := make(chan struct{})
	b.files = func(string) (<-chan struct{}, func()) { return ended, func() {} }
	var reads atomic.Int32
	b.version = func(conn *sql.Conn) (int64, error) {
		reads.Add(1)
		return dataVersion(conn)
	}
	w, stop := st.WatchRecord(ctx, "01kaaaaaaaaaaaaaaaaaaaaaaa")
	defer stop()
	sqliteSettled(w)
	close(ended)
	sqliteSettled(w)
	before := reads.Load()
	time.Sleep(time.Second)
	if n := reads.Load() - before; n > 2*int32(time.Second/SQLiteWatchInterval)+2 {
		t.Errorf("%d reads of the data version in a second after the file events ended, want a poll every %s", n, SQLiteWatchInterval)
	}
	confCreate(t, confOpen(t, dir, ""), "auggie", "", nil)
	confReceives(t, w, "a commit after the file events ended")
}

// SQLite publishes a commit (in its shared memory, which the system does
// not report) after it has written it to the WAL (which it does): the read
// the write's report brings may come first and see nothing new. The watch
// asks again shortly, so the commit still wakes it at once, not at the
// poll (here once an hour).
func TestSQLiteWatchSeesACommitPublishedAfterItsWrite(t *testing.T) {
	// 50 ms: within the settle steps; 600 ms: after them (a writer that
	// syncs its WAL before publishing, on a slow disk), seen by the reads
	// that follow a reported write at a slowing pace.
	for _, lag := range []time.Duration{50 * time.Millisecond, 600 * time.Millisecond} {
		t.Run(lag.String(), func(t *testing.T) { testCommitPublishedAfter(t, lag) })
	}
}

func testCommitPublishedAfter(t *testing.T, lag time.Duration) {
	ctx := context.Background()
	dir := t.TempDir()
	st := confOpen(t, dir, "")
	b := st.db.be.(*sqliteBackend)
	b.fallback = time.Hour
	needFileEvents(t, b)
	// Once lagging, a new version shows lag after it was first read:
	// after every write of its commit was reported.
	var (
		shown    int64 // the version the watch was last given
		since    time.Time
		lagging  atomic.Bool
		withheld atomic.Int32
	)
	b.version = func(conn *sql.Conn) (int64, error) { // before the watch starts
		v, err := dataVersion(conn)
		if err != nil || v == shown || !lagging.Load() {
			shown = v
			return v, err
		}
		if since.IsZero() {
			since = time.Now()
		}
		if time.Since(since) < lag {
			withheld.Add(1)
			return shown, nil
		}
		shown, since = v, time.Time{}
		return v, nil
	}
	ch, stop := st.WatchRecord(ctx, "01kaaaaaaaaaaaaaaaaaaaaaaa")
	defer stop()
	sqliteSettled(ch)
	lagging.Store(true)
	confCreate(t, confOpen(t, dir, ""), "auggie", "", nil)
	confReceives(t, ch, "a commit first read before it was published")
	if withheld.Load() == 0 {
		t.Error("no read came before the commit showed")
	}
}

// needFileEvents skips a test of the watch's file events where the system
// gives none (the watch polls there).
func needFileEvents(t *testing.T, b *sqliteBackend) {
	t.Helper()
	ch, stop := fileChanges(b.path)
	if ch == nil {
		t.Skip("no file events on this system: the watch polls")
	}
	stop()
}
