package instance

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// A SQLite store whose data version cannot be read wakes every watcher at
// each try, since a commit may go unseen meanwhile, and once more when it
// can be read again (on a new connection, whose versions do not compare
// with the old one's); then the watch is quiet until the next commit.
func TestSQLiteWatchWakesWhenTheStoreCannotBeRead(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := st.db.be.(*sqliteBackend)
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
	confReceives(t, ch, "the watch's start")
	drain := func() {
		time.Sleep(2 * SQLiteWatchInterval)
		select {
		case <-ch:
		default:
		}
	}
	drain()
	confQuiet(t, ch, 2*SQLiteWatchInterval, "an idle store")

	failing.Store(true)
	confReceives(t, ch, "a failed read")
	confReceives(t, ch, "a second failed read")
	failing.Store(false)
	drain() // the last failure's wake, and the first read's after
	confQuiet(t, ch, 3*SQLiteWatchInterval, "a store that can be read again")
	if n := newConns.Load(); n < 3 {
		t.Errorf("the watch read on %d connections, want a new one after each failure", n)
	}
	confCreate(t, st, "auggie", "", nil)
	confReceives(t, ch, "a commit after the failures")
}
