package serving

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/agentctl/agentctl/cmd/internal/provision"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
)

// DefaultFollowInterval is how often a running endpoint reads its
// instance's record again ([Follow]) besides when the store says it may
// have changed ([instance.Store.WatchRecord]: PostgreSQL's LISTEN/NOTIFY,
// or a commit to SQLite): the fallback for a wake that was lost.
const DefaultFollowInterval = 10 * time.Second

// followStart is how long after the endpoint's start Follow begins: the
// store's watch (a connection of its own, and for SQLite the system's file
// events) and a read of the record would otherwise compete with the
// endpoint's first answers (about 1 ms of a 30 ms start, measured). What
// changed meanwhile is read then.
const followStart = 250 * time.Millisecond

// Follow applies the changes of instance rec's record to its running
// endpoint ep until ctx ends or the instance is deleted: a changed mount
// set (`instance mount add/remove`) is served at once ([mcpserver.Endpoint.SetMounts]),
// and a new restart request (`instance restart`) restarts the external
// servers it names. The record is read when the store says it may have
// changed, and every interval (0: [DefaultFollowInterval]) besides. A
// store that cannot be read is tried again at the next wake or tick;
// nothing here ends the endpoint.
func Follow(ctx context.Context, st *instance.Store, rec *instance.Record, ep *mcpserver.Endpoint, logger *slog.Logger, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultFollowInterval
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(followStart):
	}
	wake, stop := st.WatchRecord(ctx, rec.ID)
	defer stop()
	t := time.NewTicker(interval)
	defer t.Stop()
	last := rec
	for first := true; ; first = false {
		// The first read is at once: what changed before the watch began
		// is not announced.
		if !first {
			select {
			case <-ctx.Done():
				return
			case <-wake:
			case <-t.C:
			}
		}
		cur, err := st.Get(ctx, rec.ID)
		if err != nil {
			if nf := (*instance.NotFoundError)(nil); errors.As(err, &nf) {
				return // deleted: its tools say so
			}
			if ctx.Err() == nil {
				logger.Debug("reading the instance's record for changes", "error", err)
			}
			continue
		}
		if !reflect.DeepEqual(cur.Mounts, last.Mounts) && !applyMounts(cur, ep, logger) {
			return // the endpoint has stopped
		}
		if all, names := restartsDue(last.Restarts, cur.Restarts); all || len(names) > 0 {
			if all {
				names = nil // every server
			}
			restarted := ep.RestartServers(names...)
			logger.Info("restarting external servers as asked (agentctl instance restart)", "servers", restarted)
		}
		last = cur
	}
}

// restartsDue compares a record's restart requests before and now: all
// when every server was asked for since, else the servers that were.
func restartsDue(before, now map[string]time.Time) (all bool, names []string) {
	for _, n := range slices.Sorted(maps.Keys(now)) {
		if at := now[n]; !at.Equal(before[n]) {
			if n == instance.RestartAll {
				all = true
			}
			names = append(names, n)
		}
	}
	return all, names
}

// applyMounts serves rec's mounts in ep, checked against the prefix
// contract again as at start; false once ep has stopped.
func applyMounts(rec *instance.Record, ep *mcpserver.Endpoint, logger *slog.Logger) bool {
	ts, err := provision.RecordToolset(rec)
	if err != nil {
		logger.Warn("the instance's new mounts cannot be served; keeping the current ones", "error", err)
		return true
	}
	for _, line := range ts.Announcements() {
		logger.Info(line)
	}
	_, err = ep.SetMounts(ts.Mounts)
	switch {
	case errors.Is(err, mcpserver.ErrStopped):
		return false
	case err != nil:
		logger.Warn("some of the instance's new mounts cannot be served here; the others are", "error", err)
	}
	return true
}
