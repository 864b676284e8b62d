package instance

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// Run logs in the store: a headless run's output is appended to run.log in
// the instance's directory, on the host that runs it, and, when the store
// is shared (PostgreSQL), to the store too, in chunks of at most
// [RunLogChunk] bytes, so that `instance logs` works from any host.

// RunLogChunk bounds one stored chunk of a run's output.
const RunLogChunk = 32 << 10

// runLogFlush is how long output waits in a [RunLogWriter] before it is
// stored, when less than a chunk has come.
const runLogFlush = 250 * time.Millisecond

// runLogBuffer bounds what a [RunLogWriter] holds while the store does not
// answer: past it, the oldest output is dropped from the store's copy (the
// file keeps it) and a line says so.
const runLogBuffer = 4 << 20

// LogChunk is one stored chunk of a run's output.
type LogChunk struct {
	Seq   int64
	RunID string
	Data  []byte
}

// SharesLogs reports whether runs' output is kept in the store as well as
// in run.log (a store that many hosts share).
func (s *Store) SharesLogs() bool { return s.sqlitePath == "" }

// AppendRunLog stores data (at most [RunLogChunk] bytes per row) as output
// of run runID of instance id, and wakes its followers.
func (s *Store) AppendRunLog(ctx context.Context, id, runID string, data []byte) error {
	for len(data) > 0 {
		n := min(len(data), RunLogChunk)
		err := s.inTx(ctx, id, func(tx *dbTx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO run_logs (instance_id, run_id, at, data) VALUES (?, ?, ?, ?)`,
				id, runID, s.stamp().Format(timeFormat), data[:n]); err != nil {
				return err
			}
			return tx.notify(ctx, chanLogs, id)
		})
		if err != nil {
			return s.orDeleted(ctx, id, s.dbError(err))
		}
		data = data[n:]
	}
	return nil
}

// RunLog returns instance id's stored output after chunk after, oldest
// first.
func (s *Store) RunLog(ctx context.Context, id string, after int64) ([]LogChunk, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, run_id, data FROM run_logs WHERE instance_id = ? AND seq > ? ORDER BY seq`, id, after)
	if err != nil {
		return nil, s.dbError(err)
	}
	defer rows.Close()
	var out []LogChunk
	for rows.Next() {
		var c LogChunk
		if err := rows.Scan(&c.Seq, &c.RunID, &c.Data); err != nil {
			return nil, s.dbError(err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// WatchRunLog is [Store.WatchEvents] for instance id's stored output.
func (s *Store) WatchRunLog(ctx context.Context, id string) (<-chan struct{}, func()) {
	return s.db.be.watch(ctx, chanLogs, id)
}

// RunLogWriter stores what is written to it as output of one run (see
// [Store.AppendRunLog]) from a goroutine of its own, so that a client's
// output never waits for the store: in chunks once [RunLogChunk] bytes
// have come or [runLogFlush] has passed. A store that does not answer
// loses the store's copy of the output, never the run.
type RunLogWriter struct {
	s         *Store
	id, runID string

	mu      sync.Mutex
	buf     []byte
	dropped int
	closed  bool
	wake    chan struct{}
	done    chan struct{}
}

// NewRunLogWriter starts a [RunLogWriter] for run runID of instance id;
// Close stores what is left.
func (s *Store) NewRunLogWriter(id, runID string) *RunLogWriter {
	w := &RunLogWriter{s: s, id: id, runID: runID, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go w.loop()
	return w
}

func (w *RunLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - runLogBuffer; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
		w.dropped += over
	}
	full := len(w.buf) >= RunLogChunk
	w.mu.Unlock()
	if full {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

// Close stores what is left, waiting at most 10 s for the store.
func (w *RunLogWriter) Close() error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	select {
	case <-w.done:
	case <-time.After(10 * time.Second):
	}
	return nil
}

func (w *RunLogWriter) loop() {
	defer close(w.done)
	t := time.NewTicker(runLogFlush)
	defer t.Stop()
	ctx := context.Background()
	for {
		select {
		case <-w.wake:
		case <-t.C:
		}
		w.mu.Lock()
		data, dropped, closed := w.buf, w.dropped, w.closed
		w.buf, w.dropped = nil, 0
		w.mu.Unlock()
		if dropped > 0 {
			data = append([]byte("[agentctl: "+strconv.Itoa(dropped)+" bytes of output were not stored: the store did not answer in time; run.log on the run's host has them]\n"), data...)
		}
		if len(data) > 0 && w.s.AppendRunLog(ctx, w.id, w.runID, data) != nil && !closed {
			// Kept for the next try, within the bound.
			w.mu.Lock()
			w.buf = append(data, w.buf...)
			if over := len(w.buf) - runLogBuffer; over > 0 {
				w.buf = append(w.buf[:0], w.buf[over:]...)
				w.dropped += over
			}
			w.mu.Unlock()
		}
		if closed {
			return
		}
	}
}
