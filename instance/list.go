package instance

import (
	"context"
	"database/sql"
	"errors"
	"iter"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// ListOptions select the instances [Store.Records] yields. The zero value
// selects every instance.
type ListOptions struct {
	// Limit keeps only the Limit most recent matching instances; 0 keeps
	// them all. They are still yielded oldest first, as `tail -n` would.
	Limit int
	// Agent keeps the instances of this agent definition id.
	Agent string
	// Status keeps the instances whose latest progress report has this
	// status (one of [ProgressStatuses]).
	Status string
	// Since keeps the instances created at or after this time.
	Since time.Time
	// Host keeps the instances whose files are on this host (see
	// [Record.Host]).
	Host string
}

// Listed is one instance as [Store.Records] yields it: the record, the
// status of its latest progress report ("" before the first) and how many
// of its questions are open (asked and neither answered nor withdrawn).
type Listed struct {
	*Record
	Status        string `json:"status,omitempty"`
	OpenQuestions int    `json:"open_questions"`
}

// Records yields the instances o selects, oldest first, reading one row at
// a time: the cost of a listing is that of what it yields, not of the size
// of the store. The filters run in SQLite, on the primary key (instance ids
// are ULIDs, so creation time orders them) and the indexes of migrations 2
// (agent) and 4 (status).
//
// A record that does not decode is yielded as a [*CorruptRecordError] with
// a nil [Listed], and the sequence goes on; any other error ends it.
func (s *Store) Records(ctx context.Context, o ListOptions) iter.Seq2[*Listed, error] {
	return func(yield func(*Listed, error) bool) {
		q, args := listQuery(o)
		rows, err := s.db.QueryContext(ctx, q, args...)
		if err != nil {
			yield(nil, s.dbError(err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			var id, raw, status string
			var open int
			if err := rows.Scan(&id, &raw, &status, &open); err != nil {
				yield(nil, s.dbError(err))
				return
			}
			r, err := s.decode(id, raw)
			if err != nil {
				if !yield(nil, err) {
					return
				}
				continue
			}
			if !yield(&Listed{Record: r, Status: status, OpenQuestions: open}, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(nil, s.dbError(err))
		}
	}
}

// latestStatus is the status of an instance's latest progress report: the
// column of migration 4, which a trigger sets with every event insert, so
// that --status is a range of the instances_status index (status, id)
// rather than a look at every instance's latest event.
const latestStatus = `i.status`

// openQuestions counts an instance's open questions, read through the
// questions_instance index (instance_id, status) alone: its cost is that of
// the instance's own open questions, whatever the size of the store.
const openQuestions = `(SELECT count(*) FROM questions q WHERE q.instance_id = i.id AND q.status = '` + QuestionOpen + `')`

// listQuery builds the query of [Store.Records]: only the filters o sets,
// so that SQLite can use an index for each.
func listQuery(o ListOptions) (string, []any) {
	var where []string
	var args []any
	if o.Agent != "" {
		where = append(where, "i.agent = ?")
		args = append(args, o.Agent)
	}
	if !o.Since.IsZero() {
		// The smallest id made at or after Since: a ULID's first ten
		// characters are its time in milliseconds.
		var min ulid.ULID
		ms := max(o.Since.UnixMilli(), 0)
		if err := min.SetTime(uint64(ms)); err != nil {
			min = ulid.ULID{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		}
		where = append(where, "i.id >= ?")
		args = append(args, strings.ToLower(min.String()))
	}
	if o.Status != "" {
		where = append(where, latestStatus+" = ?")
		args = append(args, o.Status)
	}
	if o.Host != "" {
		where = append(where, "i.host = ?")
		args = append(args, o.Host)
	}
	q := "SELECT i.id, i.record, " + latestStatus + ", " + openQuestions + " FROM instances i"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	if o.Limit > 0 {
		q = "SELECT * FROM (" + q + " ORDER BY i.id DESC LIMIT ?) AS t ORDER BY 1"
		args = append(args, o.Limit)
	} else {
		q += " ORDER BY i.id"
	}
	return q, args
}

// List returns every instance, oldest first, and the records that do not
// decode (see [CorruptRecordError]), which do not stop the listing of the
// others.
func (s *Store) List(ctx context.Context) ([]*Record, []*CorruptRecordError, error) {
	out := []*Record{}
	var broken []*CorruptRecordError
	for l, err := range s.Records(ctx, ListOptions{}) {
		var ce *CorruptRecordError
		switch {
		case errors.As(err, &ce):
			broken = append(broken, ce)
		case err != nil:
			return nil, nil, err
		default:
			out = append(out, l.Record)
		}
	}
	return out, broken, nil
}

// Listing is instance r as [Store.Records] would list it: the record with
// its latest progress status and its number of open questions, read in one
// query (what `instance show -o json` prints, so that show and list agree).
func (s *Store) Listing(ctx context.Context, r *Record) (*Listed, error) {
	l := &Listed{Record: r}
	err := s.db.QueryRowContext(ctx, "SELECT "+latestStatus+", "+openQuestions+" FROM instances i WHERE i.id = ?", r.ID).Scan(&l.Status, &l.OpenQuestions)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, deletedError(r.ID)
	}
	if err != nil {
		return nil, s.dbError(err)
	}
	return l, nil
}
