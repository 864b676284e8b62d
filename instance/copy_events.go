package instance

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// The events of [CopyStore]: matched by content, kept under their numbers
// where those are free, else renumbered after the target's last event.

// eventCopy is an event's row as copied.
type eventCopy struct {
	seq      int64
	instance string
	content  eventContent
}

// eventContent is an event but its number: what tells a copied event from
// another.
type eventContent struct {
	at, tool, status, message, run string
	percent                        sql.NullFloat64
}

func scanEventCopy(rows *sql.Rows) (*eventCopy, error) {
	var e eventCopy
	err := rows.Scan(&e.seq, &e.instance, &e.content.at, &e.content.tool, &e.content.status, &e.content.message, &e.content.percent, &e.content.run)
	return &e, err
}

const eventCopyCols = `seq, instance_id, at, tool, status, message, percent, run_id`

// copyEvents copies the events, an instance's at a time (see the comment
// at the top).
func (c *copier) copyEvents() error {
	if c.to.Kind() == "postgres" && !c.o.DryRun {
		// The events copied take numbers the identity has not given yet (it
		// is moved past them before the commit): hold off the inserts of
		// other hosts until then, rather than have theirs collide.
		if _, err := c.dst.ExecContext(c.ctx, `LOCK TABLE events IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return c.dstErr(err)
		}
	}
	rows, err := c.src.QueryContext(c.ctx, `SELECT `+eventCopyCols+` FROM events ORDER BY instance_id, seq`)
	if err != nil {
		return c.srcErr(err)
	}
	defer rows.Close()
	var group []*eventCopy
	for rows.Next() {
		e, err := scanEventCopy(rows)
		if err != nil {
			return c.srcErr(err)
		}
		if len(group) > 0 && group[0].instance != e.instance {
			if err := c.copyInstanceEvents(group); err != nil {
				return err
			}
			group = group[:0]
		}
		group = append(group, e)
	}
	if err := rows.Err(); err != nil {
		return c.srcErr(err)
	}
	if len(group) > 0 {
		return c.copyInstanceEvents(group)
	}
	return nil
}

// copyInstanceEvents copies one instance's events, in order.
func (c *copier) copyInstanceEvents(events []*eventCopy) error {
	id := events[0].instance
	ci := c.instances[id]
	if ci == nil || ci.leftOut {
		c.st.Events.Skipped += len(events)
		c.st.Events.Conflicting += len(events)
		if ci == nil {
			c.conflict("events", id, true, "%d events not copied: their instance is not in the source", len(events))
		}
		return nil
	}
	// The target's events of the instance, by content; none for an
	// instance new in the target.
	have := map[eventContent]int{}
	var last int64
	if !ci.inserted {
		rows, err := c.dst.QueryContext(c.ctx, `SELECT `+eventCopyCols+` FROM events WHERE instance_id = ? ORDER BY seq`, id)
		if err != nil {
			return c.dstErr(err)
		}
		for rows.Next() {
			e, err := scanEventCopy(rows)
			if err != nil {
				rows.Close()
				return c.dstErr(err)
			}
			have[e.content]++
			last = e.seq
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return c.dstErr(err)
		}
	}
	var missing []*eventCopy
	for _, e := range events {
		if have[e.content] > 0 {
			have[e.content]--
			c.st.Events.Skipped++
			continue
		}
		missing = append(missing, e)
	}
	if len(missing) == 0 {
		return nil
	}
	// Keep their numbers when all are free and come after the instance's
	// events in the target; else append them all, in order.
	keep := missing[0].seq > last
	if keep {
		seqs := make([]int64, len(missing))
		for i, e := range missing {
			seqs[i] = e.seq
		}
		err := queryIn(c, c.dst, `SELECT seq FROM events WHERE seq IN (`, seqs, func(*sql.Rows) error {
			keep = false
			return nil
		})
		if err != nil {
			return c.dstErr(err)
		}
	}
	next := int64(0)
	if !keep {
		if err := c.dst.QueryRowContext(c.ctx, `SELECT coalesce(max(seq), 0) FROM events`).Scan(&next); err != nil {
			return c.dstErr(err)
		}
		next++
	}
	insert := make([][]any, len(missing))
	for i, e := range missing {
		seq := e.seq
		if !keep {
			seq = next + int64(i)
		}
		insert[i] = []any{seq, id, e.content.at, e.content.tool, e.content.status, e.content.message, e.content.percent, e.content.run}
	}
	inserted, err := c.insertRows("events", strings.Split(eventCopyCols, ", "), insert)
	if err != nil {
		return err
	}
	if len(inserted) != len(insert) {
		// The table is locked (PostgreSQL) or the database is (SQLite):
		// nothing else inserts meanwhile.
		return c.dstErr(fmt.Errorf("copy the events of instance %s: %d of %d inserted", id, len(inserted), len(insert)))
	}
	c.st.Events.Copied += len(insert)
	if !keep {
		c.st.Renumbered += len(insert)
	}
	return nil
}

// restoreStatus gives each instance copied the source's status column,
// which the trigger on events set as each of its events was copied (and
// the latest event's status is what the source's says, unless the source
// is older than the trigger).
func (c *copier) restoreStatus() error {
	for id, ci := range c.instances {
		if !ci.inserted {
			continue
		}
		if _, err := c.dst.ExecContext(c.ctx, `UPDATE instances SET status = ? WHERE id = ? AND status <> ?`, ci.status, id, ci.status); err != nil {
			return c.dstErr(err)
		}
	}
	return nil
}

// resetEventSeq moves PostgreSQL's identity of events.seq past the largest
// number in the table (never back: numbers handed out to transactions not
// committed yet stay ahead), so that the next event recorded gets a larger
// one. SQLite's AUTOINCREMENT follows inserted numbers by itself.
func (c *copier) resetEventSeq() error {
	if c.to.Kind() != "postgres" {
		return nil
	}
	_, err := c.dst.ExecContext(c.ctx, `SELECT setval(s, greatest(m, coalesce(pg_sequence_last_value(s), 0)))
		FROM (SELECT pg_get_serial_sequence('events', 'seq')::regclass AS s, (SELECT max(seq) FROM events) AS m) t
		WHERE m IS NOT NULL`)
	if err != nil {
		return c.dstErr(fmt.Errorf("move the events' sequence past the copied events: %w", err))
	}
	return nil
}
