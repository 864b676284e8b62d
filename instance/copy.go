package instance

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
)

// Copying a store into another (`agentctl store migrate`): every row of
// instances, instance_tokens, questions, events and run_logs
// (copy_runlogs.go), in one transaction on
// the target, inserted with ON CONFLICT DO NOTHING, so that a second run
// copies nothing and says so. The source is read in one read-only
// transaction (a snapshot) and never written.
//
// A row already in the target is left as it is: an identical one is
// skipped, a different one (the same id, another record) is skipped too
// and reported as a conflict, never overwritten. An instance whose label
// another instance of the target has is not copied, nor are its token,
// questions and events (reported: labels are unique).
//
// Events keep their sequence numbers where they can: an instance's events
// whose numbers are free in the target, and above those of its events the
// target has, keep them; otherwise (stores of several hosts merged into
// one shared database all numbered from 1) they are appended after the
// target's last event, in their order. Events are told apart by their
// content, not their number, so a second run copies none again either way.

// CopyOptions are the options of [CopyStore].
type CopyOptions struct {
	// Host is the host that holds the instance directories of the records
	// copied: the one copying. Records that name no host (made before
	// records kept one) get it, in the host column and in the record's
	// "host". "" leaves them without.
	Host string
	// DryRun counts what would be copied, and writes nothing: the target's
	// transaction is rolled back.
	DryRun bool
}

// TableCopy is what [CopyStore] did with one table's rows.
type TableCopy struct {
	// Copied rows are new in the target.
	Copied int `json:"copied"`
	// Skipped rows were not copied: the target has them already, or has a
	// different row under their id, or their instance was not copied.
	Skipped int `json:"skipped"`
	// Conflicting is how many of the skipped rows the target does not have
	// as they are in the source (see [CopyStats.Conflicts]).
	Conflicting int `json:"conflicting"`
}

// Total is the number of the table's rows in the source.
func (t TableCopy) Total() int { return t.Copied + t.Skipped }

// CopyStats is what [CopyStore] did (or, with [CopyOptions.DryRun], would
// do).
type CopyStats struct {
	Instances TableCopy `json:"instances"`
	Tokens    TableCopy `json:"tokens"`
	Questions TableCopy `json:"questions"`
	Events    TableCopy `json:"events"`
	// RunLogs are the chunks of headless runs' output ([Store.RunLog]).
	RunLogs TableCopy `json:"run_logs"`
	// Renumbered counts the copied events that got a new sequence number,
	// after the target's last, because theirs was taken in the target.
	Renumbered int `json:"renumbered_events"`
	// HostSet counts the copied records that named no host and were given
	// [CopyOptions.Host].
	HostSet int `json:"host_set"`
	// Conflicts are the rows the target does not have as the source has
	// them, by table and id.
	Conflicts []CopyConflict `json:"conflicts"`
	DryRun    bool           `json:"dry_run"`
}

// Copied is the number of rows copied, of every table.
func (s *CopyStats) Copied() int {
	return s.Instances.Copied + s.Tokens.Copied + s.Questions.Copied + s.Events.Copied + s.RunLogs.Copied
}

// LeftOut are the conflicts whose rows the target does not have at all.
func (s *CopyStats) LeftOut() []CopyConflict {
	var out []CopyConflict
	for _, c := range s.Conflicts {
		if c.LeftOut {
			out = append(out, c)
		}
	}
	return out
}

// CopyConflict is a row of the source that the target does not have as it
// is.
type CopyConflict struct {
	// Table is instances, instance_tokens, questions or events.
	Table string `json:"table"`
	// ID is the row's key: an instance's id (instances, instance_tokens,
	// events: all the instance's) or a question's.
	ID string `json:"id"`
	// LeftOut is set when the target has no version of the row: it was not
	// copied, and for an instance neither were its token, questions and
	// events. Otherwise the target has a different version, which it keeps.
	LeftOut bool `json:"left_out"`
	// Reason says what differs, or why the row was left out.
	Reason string `json:"reason"`
}

func (c CopyConflict) String() string {
	what := map[string]string{"instances": "instance", "instance_tokens": "token of instance", "questions": "question", "events": "events of instance"}[c.Table]
	if what == "" {
		what = c.Table
	}
	return what + " " + c.ID + ": " + c.Reason
}

// copyBatch is how many rows each statement of the copy reads or writes:
// few round trips to a remote database, far below both databases' limit
// on a statement's parameters.
const copyBatch = 200

// CopyStore copies every row of from into to (see above), in one
// transaction on to; from is only read. It refuses a target that is the
// source's own database (an error matching [ErrInvalid]). On any error,
// a context cancelled midway included, nothing is copied.
func CopyStore(ctx context.Context, from, to *Store, o CopyOptions) (CopyStats, error) {
	st := CopyStats{Conflicts: []CopyConflict{}, DryRun: o.DryRun}
	if from == nil || to == nil {
		return st, errors.New("CopyStore: a nil store")
	}
	if from == to {
		return st, sameStoreError(from)
	}
	if from.sqlitePath != "" && to.sqlitePath != "" {
		a, errA := os.Stat(from.sqlitePath)
		b, errB := os.Stat(to.sqlitePath)
		if errA == nil && errB == nil && os.SameFile(a, b) {
			return st, sameStoreError(from)
		}
	}
	// The source: a snapshot, read only (SQLite: a deferred BEGIN, which
	// takes no lock from its writers).
	opts := &sql.TxOptions{ReadOnly: true}
	if from.Kind() == "postgres" {
		opts.Isolation = sql.LevelRepeatableRead
	}
	stx, err := from.db.DB.BeginTx(ctx, opts)
	if err != nil {
		return st, from.dbError(err)
	}
	defer stx.Rollback()
	dtx, err := to.db.BeginTx(ctx)
	if err != nil {
		return st, to.dbError(err)
	}
	defer dtx.Rollback()
	c := &copier{ctx: ctx, o: o, st: &st, from: from, to: to,
		src: &dbTx{Tx: stx, be: from.db.be}, dst: dtx, instances: map[string]*copiedInstance{}}
	if from.Kind() == "postgres" && to.Kind() == "postgres" {
		same, err := c.samePostgres()
		if err != nil {
			return st, err
		}
		if same {
			return st, sameStoreError(from)
		}
	}
	// On an error nothing was copied: no counts.
	for _, step := range []func() error{c.copyInstances, c.copyTokens, c.copyQuestions, c.copyEvents, c.copyRunLogs, c.restoreStatus} {
		if err := step(); err != nil {
			return CopyStats{}, err
		}
	}
	if o.DryRun {
		return st, nil // the deferred Rollback
	}
	if err := c.resetEventSeq(); err != nil {
		return CopyStats{}, err
	}
	if err := dtx.Commit(); err != nil {
		return CopyStats{}, to.dbError(err)
	}
	return st, nil
}

func sameStoreError(s *Store) error {
	return invalidf("the source and the target are the same database (%s %s): there is nothing to copy; give --to another store", s.Kind(), s.StoreName())
}

// copier is one run of [CopyStore].
type copier struct {
	ctx      context.Context
	o        CopyOptions
	st       *CopyStats
	from, to *Store
	src, dst *dbTx // the source's read-only snapshot; the target's transaction
	// instances are the source's instances by id, with what became of each.
	instances map[string]*copiedInstance
}

// copiedInstance is what became of one of the source's instances.
type copiedInstance struct {
	// inserted: new in the target, in this transaction; else the target
	// had it already, unless leftOut.
	inserted bool
	leftOut  bool
	status   string // the source's status column
}

// srcErr and dstErr name the database in an error from it.
func (c *copier) srcErr(err error) error { return c.from.dbError(err) }
func (c *copier) dstErr(err error) error { return c.to.dbError(err) }

func (c *copier) conflict(table, id string, leftOut bool, format string, args ...any) {
	c.st.Conflicts = append(c.st.Conflicts, CopyConflict{Table: table, ID: id, LeftOut: leftOut, Reason: fmt.Sprintf(format, args...)})
}

// samePostgres reports whether the source's and the target's PostgreSQL
// databases are one, however their URLs spell it: an advisory lock taken
// in the source's transaction (at a random key) is refused to the
// target's when they are. Advisory locks belong to a database, not a
// server, and write nothing.
func (c *copier) samePostgres() (bool, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	key := int64(binary.LittleEndian.Uint64(b[:]))
	var got bool
	if err := c.src.QueryRowContext(c.ctx, `SELECT pg_try_advisory_xact_lock(?)`, key).Scan(&got); err != nil {
		return false, c.srcErr(err)
	}
	if !got {
		return false, nil // someone holds that key: unknowable, and unlikely
	}
	if err := c.dst.QueryRowContext(c.ctx, `SELECT pg_try_advisory_xact_lock(?)`, key).Scan(&got); err != nil {
		return false, c.dstErr(err)
	}
	return !got, nil
}

// placeholders is the list of n placeholders for tx's backend, in
// groups of size (a row's values) in parentheses when size > 0: "?, ?",
// "($1, $2), ($3, $4)". The statements they make are not rebound: their
// sizes vary, and rebinding remembers every statement (see rebindDollar).
func placeholders(tx *dbTx, n, size int) string {
	var b strings.Builder
	for i := range n {
		switch {
		case i > 0 && size > 0 && i%size == 0:
			b.WriteString("), (")
		case i > 0:
			b.WriteString(", ")
		}
		if tx.be.Kind() == "postgres" {
			b.WriteString("$" + strconv.Itoa(i+1))
		} else {
			b.WriteByte('?')
		}
	}
	if size > 0 {
		return "(" + b.String() + ")"
	}
	return b.String()
}

// insertRows inserts rows (each the values of cols) into table in batches,
// skipping those that conflict, and returns the key (the first column) of
// each inserted row. The RETURNING rows are read to their end (see
// insertEvent).
func (c *copier) insertRows(table string, cols []string, rows [][]any) (map[any]bool, error) {
	inserted := map[any]bool{}
	for len(rows) > 0 {
		n := min(len(rows), copyBatch)
		q := `INSERT INTO ` + table + ` (` + strings.Join(cols, ", ") + `) VALUES ` +
			placeholders(c.dst, n*len(cols), len(cols)) + ` ON CONFLICT DO NOTHING RETURNING ` + cols[0]
		args := make([]any, 0, n*len(cols))
		for _, r := range rows[:n] {
			args = append(args, r...)
		}
		res, err := c.dst.Tx.QueryContext(c.ctx, q, args...)
		if err != nil {
			return nil, c.dstErr(fmt.Errorf("copy into %s: %w", table, err))
		}
		for res.Next() {
			var k any
			if err := res.Scan(&k); err != nil {
				res.Close()
				return nil, c.dstErr(err)
			}
			if b, ok := k.([]byte); ok {
				k = string(b)
			}
			inserted[k] = true
		}
		if err := errors.Join(res.Err(), res.Close()); err != nil {
			return nil, c.dstErr(fmt.Errorf("copy into %s: %w", table, err))
		}
		rows = rows[n:]
	}
	return inserted, nil
}

// queryIn runs q, which ends in "IN (" and has no other placeholder, with
// keys as the list in batches, and calls fn for each row.
func queryIn[K any](c *copier, tx *dbTx, q string, keys []K, fn func(*sql.Rows) error) error {
	for len(keys) > 0 {
		n := min(len(keys), copyBatch)
		args := make([]any, n)
		for i, k := range keys[:n] {
			args[i] = k
		}
		rows, err := tx.Tx.QueryContext(c.ctx, q+placeholders(tx, n, 0)+`)`, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			if err := fn(rows); err != nil {
				rows.Close()
				return err
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

// eachBatch reads the source's rows of q in batches of [copyBatch], each
// row by scan, and hands each batch to fn (which works on the target only:
// the source's rows are still being read).
func eachBatch[R any](c *copier, q string, scan func(*sql.Rows) (R, error), fn func([]R) error) error {
	rows, err := c.src.QueryContext(c.ctx, q)
	if err != nil {
		return c.srcErr(err)
	}
	defer rows.Close()
	batch := make([]R, 0, copyBatch)
	for rows.Next() {
		r, err := scan(rows)
		if err != nil {
			return c.srcErr(err)
		}
		if batch = append(batch, r); len(batch) == copyBatch {
			if err := fn(batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if err := rows.Err(); err != nil {
		return c.srcErr(err)
	}
	if len(batch) > 0 {
		return fn(batch)
	}
	return nil
}

// instanceCopy is an instance's row as copied.
type instanceCopy struct {
	id                                   string
	name                                 sql.NullString
	agent, created, record, status, host string
}

const instanceCopyCols = `id, name, agent, created_at, record, status, host`

func scanInstanceCopy(rows *sql.Rows) (*instanceCopy, error) {
	var r instanceCopy
	err := rows.Scan(&r.id, &r.name, &r.agent, &r.created, &r.record, &r.status, &r.host)
	return &r, err
}

func (c *copier) copyInstances() error {
	return eachBatch(c, `SELECT `+instanceCopyCols+` FROM instances ORDER BY id`, scanInstanceCopy, c.copyInstanceBatch)
}

func (c *copier) copyInstanceBatch(batch []*instanceCopy) error {
	ids := make([]string, len(batch))
	hostSet := map[string]bool{}
	for i, r := range batch {
		ids[i] = r.id
		if r.host == "" {
			if h := recordHost(r.record); h != "" {
				r.host = h // the record says it; the column did not
			} else if c.o.Host != "" {
				r.host, r.record = c.o.Host, setRecordHost(r.record, c.o.Host)
				hostSet[r.id] = true
			}
		}
		c.instances[r.id] = &copiedInstance{status: r.status}
	}
	there := map[string]*instanceCopy{}
	err := queryIn(c, c.dst, `SELECT `+instanceCopyCols+` FROM instances WHERE id IN (`, ids, func(rows *sql.Rows) error {
		r, err := scanInstanceCopy(rows)
		there[r.id] = r
		return err
	})
	if err != nil {
		return c.dstErr(err)
	}
	var names []string
	for _, r := range batch {
		if there[r.id] == nil && r.name.Valid {
			names = append(names, r.name.String)
		}
	}
	labelled := map[string]string{} // label → the target's instance id
	err = queryIn(c, c.dst, `SELECT name, id FROM instances WHERE name IN (`, names, func(rows *sql.Rows) error {
		var name, id string
		err := rows.Scan(&name, &id)
		labelled[name] = id
		return err
	})
	if err != nil {
		return c.dstErr(err)
	}
	var insert [][]any
	for _, r := range batch {
		ci := c.instances[r.id]
		if t := there[r.id]; t != nil {
			c.st.Instances.Skipped++
			if diff := instanceDiff(r, t); diff != "" {
				c.st.Instances.Conflicting++
				c.conflict("instances", r.id, false, "the target has it with a different %s; kept the target's", diff)
			}
			continue
		}
		if other, ok := labelled[r.name.String]; ok && r.name.Valid {
			ci.leftOut = true
			c.st.Instances.Skipped++
			c.st.Instances.Conflicting++
			c.conflict("instances", r.id, true, "not copied, nor its token, questions and events: its label %q is instance %s's in the target, and labels are unique; delete one of the two (agentctl instance delete) and copy again", r.name.String, other)
			continue
		}
		insert = append(insert, []any{r.id, r.name, r.agent, r.created, r.record, r.status, r.host})
	}
	inserted, err := c.insertRows("instances", strings.Split(instanceCopyCols, ", "), insert)
	if err != nil {
		return err
	}
	for _, row := range insert {
		id := row[0].(string)
		ci := c.instances[id]
		if !inserted[id] {
			// Another process took the id or the label since the look above.
			ci.leftOut = true
			c.st.Instances.Skipped++
			c.st.Instances.Conflicting++
			c.conflict("instances", id, true, "not copied, nor its token, questions and events: another process added an instance with its id or label to the target meanwhile; run the copy again")
			continue
		}
		ci.inserted = true
		c.st.Instances.Copied++
		if hostSet[id] {
			c.st.HostSet++
		}
	}
	return nil
}

// instanceDiff names what differs between the source's instance r (its
// host filled in) and the target's t, "" for nothing. The status is not
// compared: the target's follows its own events. Records are compared as
// JSON values: PostgreSQL may have rewritten one's text.
func instanceDiff(r, t *instanceCopy) string {
	var diff []string
	if r.name != t.name {
		diff = append(diff, "label")
	}
	if r.agent != t.agent {
		diff = append(diff, "agent")
	}
	if r.created != t.created {
		diff = append(diff, "creation time")
	}
	if r.host != t.host {
		diff = append(diff, "host")
	}
	if r.record != t.record {
		var a, b any
		if json.Unmarshal([]byte(r.record), &a) != nil || json.Unmarshal([]byte(t.record), &b) != nil || !reflect.DeepEqual(a, b) {
			diff = append(diff, "record")
		}
	}
	return strings.Join(diff, ", ")
}

// recordHost is the host a stored record names, "" for none (or a record
// that does not decode).
func recordHost(raw string) string {
	var r struct {
		Host string `json:"host"`
	}
	_ = json.Unmarshal([]byte(raw), &r)
	return r.Host
}

// setRecordHost is the stored record raw with its "host" set to host,
// everything else byte for byte as it was (a record written by another
// agentctl may hold fields this one does not know); raw as it is when it
// is not a JSON object.
func setRecordHost(raw, host string) string {
	data := []byte(raw)
	root, err := scanJSON(data)
	if err != nil || root.kind != '{' {
		return raw
	}
	if _, m := root.member("host"); m != nil {
		var v bytes.Buffer
		writeJSONString(&v, host)
		return string(splice(data, m.val.start, m.val.end, v.Bytes()))
	}
	out, err := jsonInsert(data, root, "host", host, "  ")
	if err != nil {
		return raw
	}
	return string(out)
}

// childRow is a row of a table whose rows belong to an instance
// (instance_tokens, questions): its key, its instance, and its values in
// the order of the table's columns.
type childRow struct {
	key, instance string
	vals          []any
}

// childTable is how to copy such a table.
type childTable struct {
	name string
	cols []string // the key first
	scan func(*sql.Rows) (*childRow, error)
	// stats are the table's in [CopyStats].
	stats func(*CopyStats) *TableCopy
	// differs says how the target's row differs, for the conflict.
	differs string
}

var tokenTable = childTable{
	name: "instance_tokens",
	cols: []string{"instance_id", "hash"},
	scan: func(rows *sql.Rows) (*childRow, error) {
		var id string
		var hash []byte
		err := rows.Scan(&id, &hash)
		return &childRow{key: id, instance: id, vals: []any{id, hash}}, err
	},
	stats:   func(s *CopyStats) *TableCopy { return &s.Tokens },
	differs: "the target has another token for the instance (rotated there?); kept the target's, so the source's token does not work against it",
}

var questionTable = childTable{
	name: "questions",
	cols: []string{"id", "instance_id", "question", "choices", "status", "asked_at", "answer", "answered_at"},
	scan: func(rows *sql.Rows) (*childRow, error) {
		var id, inst, text, choices, status, asked string
		var answer, answered sql.NullString
		err := rows.Scan(&id, &inst, &text, &choices, &status, &asked, &answer, &answered)
		return &childRow{key: id, instance: inst, vals: []any{id, inst, text, choices, status, asked, answer, answered}}, err
	},
	stats:   func(s *CopyStats) *TableCopy { return &s.Questions },
	differs: "the target has it with another status or answer; kept the target's",
}

func (c *copier) copyTokens() error { return c.copyChildren(tokenTable) }

// copyQuestions copies the questions; the target's trigger gives each its
// instance's label, agent and host as the target has them.
func (c *copier) copyQuestions() error { return c.copyChildren(questionTable) }

func (c *copier) copyChildren(t childTable) error {
	cols := strings.Join(t.cols, ", ")
	stats := t.stats(c.st)
	return eachBatch(c, `SELECT `+cols+` FROM `+t.name+` ORDER BY `+t.cols[0], t.scan, func(batch []*childRow) error {
		keys := make([]string, len(batch))
		for i, r := range batch {
			keys[i] = r.key
		}
		there := map[string]*childRow{}
		err := queryIn(c, c.dst, `SELECT `+cols+` FROM `+t.name+` WHERE `+t.cols[0]+` IN (`, keys, func(rows *sql.Rows) error {
			r, err := t.scan(rows)
			there[r.key] = r
			return err
		})
		if err != nil {
			return c.dstErr(err)
		}
		var insert [][]any
		for _, r := range batch {
			switch ci := c.instances[r.instance]; {
			case ci == nil || ci.leftOut:
				stats.Skipped++
				stats.Conflicting++
				if ci == nil {
					c.conflict(t.name, r.key, true, "not copied: its instance %s is not in the source", r.instance)
				}
			case there[r.key] != nil:
				stats.Skipped++
				if !sameValues(r.vals, there[r.key].vals) {
					stats.Conflicting++
					c.conflict(t.name, r.key, false, "%s", t.differs)
				}
			default:
				insert = append(insert, r.vals)
			}
		}
		inserted, err := c.insertRows(t.name, t.cols, insert)
		if err != nil {
			return err
		}
		for _, row := range insert {
			if inserted[row[0]] {
				stats.Copied++
				continue
			}
			stats.Skipped++
			stats.Conflicting++
			c.conflict(t.name, row[0].(string), true, "not copied: another process added a row with its key to the target meanwhile; run the copy again")
		}
		return nil
	})
}

// sameValues compares two rows' values.
func sameValues(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, xb := a[i].([]byte)
		y, yb := b[i].([]byte)
		if xb || yb {
			if !xb || !yb || !bytes.Equal(x, y) {
				return false
			}
		} else if a[i] != b[i] {
			return false
		}
	}
	return true
}
