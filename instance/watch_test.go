package instance

import (
	"context"
	"database/sql"
	"errors"
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
	conns := map[*sql.Conn]bool{}
	var newConns atomic.Int32
	b.version = func(conn *sql.Conn) (int64, error) { // before the watch starts
		if !conns[conn] {
			conns[conn] = true
			newConns.Add(1)
		}
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
}

// SQLite publishes a commit (in its shared memory, which the system does
// not report) after it has written it to the WAL (which it does): the read
// the write's report brings may come first and see nothing new. The watch
// asks again shortly, so the commit still wakes it at once, not at the
// poll (here once an hour).
func TestSQLiteWatchSeesACommitPublishedAfterItsWrite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := confOpen(t, dir, "")
	b := st.db.be.(*sqliteBackend)
	b.fallback = time.Hour
	needFileEvents(t, b)
	// Once lagging, a new version shows 50 ms after it was first read:
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
		if time.Since(since) < 50*time.Millisecond {
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
