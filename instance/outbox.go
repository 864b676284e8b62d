package instance

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"
)

// Notifications: a store given targets ([WithNotify]) adds a row to its
// outbox (the notify_outbox table) for each target that takes an event, in
// the transaction of the write that makes the event (a transactional
// outbox): a question asked or answered, a run started or ended, a
// failure. Delivering the rows (POSTing them) is the business of the layer
// above (cmd/internal/notify), which claims them here with a lease, so
// that any number of processes, on any host sharing the store, deliver
// them safely, and a row whose deliverer died is tried again, under the
// same id, once its lease runs out.

// The events a notification target can take.
const (
	// NotifyQuestion: ask_user_question stored a question ([Store.AddQuestion]).
	NotifyQuestion = "question"
	// NotifyAnswered: a stored question was answered ([Store.Answer]).
	NotifyAnswered = "answered"
	// NotifyRunStarted: `instance run` started a client ([Store.StartRun]).
	NotifyRunStarted = "run_started"
	// NotifyRunEnded: a run ended ([Store.EndRun]); one that ended failed
	// is [NotifyFailed] instead to a target that takes that.
	NotifyRunEnded = "run_ended"
	// NotifyFailed: a run ended failed, or the model reported status
	// failed with report_progress ([Store.AddEvent]).
	NotifyFailed = "failed"
)

// NotifyEvents returns the events a notification target can take, in the
// order a run meets them.
func NotifyEvents() []string {
	return []string{NotifyQuestion, NotifyAnswered, NotifyRunStarted, NotifyRunEnded, NotifyFailed}
}

// The statuses of an outbox row. A row being delivered stays pending: its
// claim moves its next_at a lease ahead, so that a deliverer that dies
// leaves it due again when the lease runs out.
const (
	OutboxPending   = "pending"
	OutboxDelivered = "delivered"
	OutboxFailed    = "failed"
	// OutboxSuperseded: a question's notification not sent because the
	// question was no longer open when its turn came ([Store.OutboxSupersede]).
	OutboxSuperseded = "superseded"
)

// NotifyTarget is a receiver of notifications, as the store sees it: the
// URL its outbox rows carry, and the events it takes.
type NotifyTarget struct {
	URL string
	// Events are the events it takes (see [NotifyEvents]); empty: every one.
	Events []string
}

func (t NotifyTarget) takes(event string) bool {
	return len(t.Events) == 0 || slices.Contains(t.Events, event)
}

// A Notifier delivers a store's outbox rows.
type Notifier interface {
	// Enqueued is told the ids of the rows a write just committed; it
	// delivers them, or leaves them in the outbox for later. It is called
	// in the goroutine of the write, which it may hold up for a short,
	// bounded time (a CLI command waits that long for its own
	// notifications before it exits).
	Enqueued(s *Store, ids []string)
}

// Notify is what a store notifies, and to whom (see [WithNotify]).
type Notify struct {
	Targets []NotifyTarget
	// BaseURL is the public URL of `agentctl serve` (setting base_url):
	// when set, a notification links to its instance's page,
	// BASE/ui/instances/ID.
	BaseURL string
	// Notifier, when set, is told of the rows each write enqueues; else
	// they wait in the outbox for a deliverer.
	Notifier Notifier
}

// WithNotify makes the store enqueue a notification for each of n's
// targets that takes an event, in the transaction of the write that makes
// it. A store without targets (nil n, the default) enqueues nothing, and
// its writes cost what they did before notifications. The option may also
// be applied to a store just opened, before it is used (a store opener
// that wraps another).
func WithNotify(n *Notify) Option {
	return func(s *Store) {
		if n != nil && len(n.Targets) == 0 {
			n = nil
		}
		s.notify = n
	}
}

// Notifying is what the store notifies (see [WithNotify]); nil if nothing.
func (s *Store) Notifying() *Notify { return s.notify }

// notifyFor is what the store notifies when some target takes one of
// events; nil otherwise, the common case, at the cost of an atomic load.
func (s *Store) notifyFor(events ...string) *Notify {
	n := s.Notifying()
	if n == nil {
		return nil
	}
	for _, t := range n.Targets {
		for _, e := range events {
			if t.takes(e) {
				return n
			}
		}
	}
	return nil
}

// enqueued tells n's notifier of the rows a committed write enqueued.
func (n *Notify) enqueued(s *Store, ids []string) {
	if n != nil && n.Notifier != nil && len(ids) > 0 {
		n.Notifier.Enqueued(s, ids)
	}
}

// Notification is the body of a notification in format json, as the
// outbox keeps it (its payload). It carries what identifies the instance
// and the event, never the instance's token, its record or its mounts'
// environment and headers.
type Notification struct {
	// ID is the delivery id (the outbox row's): the same on every attempt,
	// so that a receiver recognises a retry.
	ID    string    `json:"id"`
	Event string    `json:"event"`
	At    time.Time `json:"at"`
	// Test marks a sample sent by `agentctl notify test`.
	Test     bool                  `json:"test,omitempty"`
	Instance NotificationInstance  `json:"instance"`
	Question *NotificationQuestion `json:"question,omitempty"`
	Run      *NotificationRun      `json:"run,omitempty"`
	// Progress is the model's report_progress that made a failed event.
	Progress *NotificationProgress `json:"progress,omitempty"`
	// Link is the instance's page, BASE/ui/instances/ID, when base_url is set.
	Link string `json:"link,omitempty"`
}

// NotificationInstance identifies the instance of a [Notification].
type NotificationInstance struct {
	ID        string `json:"id"`
	Name      string `json:"name,omitempty"`
	Agent     string `json:"agent"`
	Host      string `json:"host,omitempty"`
	Workspace string `json:"workspace,omitempty"`
}

// NotificationQuestion is the question of a question or answered event.
type NotificationQuestion struct {
	ID      string   `json:"id"`
	Text    string   `json:"text"`
	Choices []string `json:"choices"`
	// Answer is the answer when it is one of the choices; a free-text
	// answer, which may hold anything a person typed, is not sent.
	Answer     string     `json:"answer,omitempty"`
	AskedAt    time.Time  `json:"asked_at"`
	AnsweredAt *time.Time `json:"answered_at,omitempty"`
}

// NotificationRun is the run of a run_started, run_ended or failed event.
type NotificationRun struct {
	ID        string     `json:"id,omitempty"`
	Mode      string     `json:"mode,omitempty"`
	Status    string     `json:"status,omitempty"`
	ExitCode  *int       `json:"exit_code,omitempty"`
	Signal    string     `json:"signal,omitempty"`
	Message   string     `json:"message,omitempty"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
}

// NotificationProgress is the progress event that made a failed event.
type NotificationProgress struct {
	Seq     int64  `json:"seq"`
	Tool    string `json:"tool"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

// InstanceLink is the page of instance id under base, "" without a base.
func InstanceLink(base, id string) string {
	if base == "" {
		return ""
	}
	return strings.TrimRight(base, "/") + "/ui/instances/" + id
}

// enqueue adds, in tx, a row to the outbox for each of n's targets that
// takes one of events (the first it takes, in that order), with the body
// fill completes, and returns the rows' ids. An instance that is gone
// enqueues nothing (the write that makes the event fails anyway).
func (s *Store) enqueue(ctx context.Context, tx *dbTx, n *Notify, instanceID string, events []string, fill func(*Notification)) ([]string, error) {
	type pick struct{ target, event string }
	var picks []pick
	for _, t := range n.Targets {
		for _, e := range events {
			if t.takes(e) {
				picks = append(picks, pick{t.URL, e})
				break
			}
		}
	}
	if len(picks) == 0 {
		return nil, nil
	}
	var inst NotificationInstance
	err := tx.QueryRowContext(ctx, `SELECT id, coalesce(name, ''), agent, host, coalesce(`+tx.be.jsonText("record", "workspace")+`, '') FROM instances WHERE id = ?`, instanceID).
		Scan(&inst.ID, &inst.Name, &inst.Agent, &inst.Host, &inst.Workspace)
	if err != nil {
		return nil, err
	}
	now := s.stamp()
	ids := make([]string, 0, len(picks))
	for _, p := range picks {
		b := Notification{ID: s.newID(now), Event: p.event, At: now, Instance: inst, Link: InstanceLink(n.BaseURL, inst.ID)}
		fill(&b)
		payload, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		at := now.Format(timeFormat)
		if _, err := tx.ExecContext(ctx, `INSERT INTO notify_outbox (id, target, event, instance_id, payload, created_at, status, attempts, next_at, last_error)
			VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, '')`, b.ID, p.target, p.event, inst.ID, string(payload), at, OutboxPending, at); err != nil {
			return nil, err
		}
		ids = append(ids, b.ID)
	}
	return ids, nil
}

// notificationQuestion is q as a notification carries it.
func notificationQuestion(q *Question) *NotificationQuestion {
	nq := &NotificationQuestion{ID: q.ID, Text: q.Text, Choices: q.Choices, AskedAt: q.AskedAt, AnsweredAt: q.AnsweredAt}
	if nq.Choices == nil {
		nq.Choices = []string{}
	}
	for _, c := range q.Choices {
		if c == q.Answer {
			nq.Answer = c
		}
	}
	return nq
}

// OutboxRow is one notification of the outbox.
type OutboxRow struct {
	ID         string `json:"id"`
	Target     string `json:"target"`
	Event      string `json:"event"`
	InstanceID string `json:"instance_id"`
	// Payload is the body in format json (a [Notification]).
	Payload   []byte    `json:"-"`
	CreatedAt time.Time `json:"created_at"`
	Status    string    `json:"status"`
	// Attempts counts the deliveries tried (claims), the one under way
	// included.
	Attempts int `json:"attempts"`
	// NextAt is when a pending row is due (again); while a delivery is
	// under way, when its lease runs out.
	NextAt      time.Time  `json:"next_at"`
	LastError   string     `json:"last_error,omitempty"`
	DeliveredAt *time.Time `json:"delivered_at,omitempty"`
}

const outboxCols = `id, target, event, instance_id, payload, created_at, status, attempts, next_at, last_error, coalesce(delivered_at, '')`

func scanOutbox(sc interface{ Scan(...any) error }) (*OutboxRow, error) {
	var r OutboxRow
	var payload, created, next, delivered string
	if err := sc.Scan(&r.ID, &r.Target, &r.Event, &r.InstanceID, &payload, &created, &r.Status, &r.Attempts, &next, &r.LastError, &delivered); err != nil {
		return nil, err
	}
	r.Payload = []byte(payload)
	r.CreatedAt, _ = time.Parse(timeFormat, created)
	r.NextAt, _ = time.Parse(timeFormat, next)
	if delivered != "" {
		t, _ := time.Parse(timeFormat, delivered)
		r.DeliveredAt = &t
	}
	return &r, nil
}

// ClaimOptions say which outbox rows [Store.ClaimOutbox] claims.
type ClaimOptions struct {
	// IDs, when set, claims only these rows (those a write of this
	// process just enqueued); else any due row of Targets, oldest due
	// first.
	IDs []string
	// Targets are the URLs of the targets the claimer can deliver to;
	// rows of others are left to a process that can. None claims nothing.
	Targets []string
	// Limit bounds the rows claimed without IDs (default 16).
	Limit int
	// Lease is how long the claimer has to deliver and record: until
	// then no other claims the rows; after, they are due again.
	Lease time.Duration
}

// qmarks is n comma-separated ?.
func qmarks(n int) string { return strings.TrimSuffix(strings.Repeat("?,", n), ",") }

// ClaimOutbox claims due pending rows for delivery: one statement that
// counts the attempt and moves each row's next_at a lease ahead, so that
// no other process claims it meanwhile (on PostgreSQL a second claimer
// waits for the first's row lock, then finds the row no longer due), and
// that a claimer that dies leaves it due again when the lease runs out,
// to be sent again under the same id.
func (s *Store) ClaimOutbox(ctx context.Context, o ClaimOptions) ([]*OutboxRow, error) {
	if len(o.Targets) == 0 {
		return nil, nil
	}
	now := s.stamp()
	lease := o.Lease
	if lease <= 0 {
		lease = time.Minute
	}
	args := []any{now.Add(lease).Format(timeFormat), OutboxPending, now.Format(timeFormat)}
	var sel string
	if len(o.IDs) > 0 {
		sel = `id IN (` + qmarks(len(o.IDs)) + `) AND target IN (` + qmarks(len(o.Targets)) + `)`
		for _, id := range o.IDs {
			args = append(args, id)
		}
		for _, t := range o.Targets {
			args = append(args, t)
		}
	} else {
		limit := o.Limit
		if limit <= 0 {
			limit = 16
		}
		sel = `id IN (SELECT id FROM notify_outbox WHERE status = ? AND next_at <= ? AND target IN (` + qmarks(len(o.Targets)) + `) ORDER BY next_at LIMIT ?)`
		args = append(args, OutboxPending, now.Format(timeFormat))
		for _, t := range o.Targets {
			args = append(args, t)
		}
		args = append(args, limit)
	}
	rows, err := s.db.QueryContext(ctx, `UPDATE notify_outbox SET attempts = attempts + 1, next_at = ?
		WHERE status = ? AND next_at <= ? AND `+sel+` RETURNING `+outboxCols, args...)
	if err != nil {
		return nil, s.dbError(err)
	}
	defer rows.Close()
	var out []*OutboxRow
	for rows.Next() { // to the end (see insertEvent)
		r, err := scanOutbox(rows)
		if err != nil {
			return nil, s.dbError(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbError(err)
	}
	return out, nil
}

// OutboxDue reports whether a pending row of targets is due: a read, cheap
// enough to ask every few seconds before claiming.
func (s *Store) OutboxDue(ctx context.Context, targets []string) (bool, error) {
	if len(targets) == 0 {
		return false, nil
	}
	args := []any{OutboxPending, s.stamp().Format(timeFormat)}
	for _, t := range targets {
		args = append(args, t)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM notify_outbox WHERE status = ? AND next_at <= ? AND target IN (`+qmarks(len(targets))+`) LIMIT 1`, args...)
	if err != nil {
		return false, s.dbError(err)
	}
	defer rows.Close()
	due := rows.Next()
	return due, s.dbError0(rows.Err())
}

// dbError0 is [Store.dbError] of a possibly nil error.
func (s *Store) dbError0(err error) error {
	if err == nil {
		return nil
	}
	return s.dbError(err)
}

// OutboxDelivered records a row delivered (the receiver answered 2xx).
func (s *Store) OutboxDelivered(ctx context.Context, id string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE notify_outbox SET status = ?, delivered_at = ?, last_error = '' WHERE id = ? AND status = ?`,
		OutboxDelivered, s.stamp().Format(timeFormat), id, OutboxPending)
	return s.dbError0(err)
}

// OutboxRetry records a failed attempt of a pending row, which is due
// again at next.
func (s *Store) OutboxRetry(ctx context.Context, id string, next time.Time, lastError string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE notify_outbox SET next_at = ?, last_error = ? WHERE id = ? AND status = ?`,
		next.UTC().Format(timeFormat), lastError, id, OutboxPending)
	return s.dbError0(err)
}

// OutboxGiveUp records a pending row failed for good: it will not be sent
// again.
func (s *Store) OutboxGiveUp(ctx context.Context, id, lastError string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE notify_outbox SET status = ?, last_error = ? WHERE id = ? AND status = ?`,
		OutboxFailed, lastError, id, OutboxPending)
	return s.dbError0(err)
}

// OutboxSupersede marks pending row r superseded, never to be sent, when
// it is a question's notification and the question is no longer open: it
// was answered, expired or was cancelled (or its instance deleted) while
// the row waited for a retry or its turn. Sent then, it would ask for an
// answer already given, after the answered notification. It returns why
// (the row's last error), or "" when r is to be sent.
func (s *Store) OutboxSupersede(ctx context.Context, r *OutboxRow) (string, error) {
	if r.Event != NotifyQuestion {
		return "", nil
	}
	var n Notification
	if err := json.Unmarshal(r.Payload, &n); err != nil || n.Question == nil {
		return "", nil
	}
	var status string
	err := s.db.QueryRowContext(ctx, `SELECT status FROM questions WHERE id = ?`, n.Question.ID).Scan(&status)
	var why string
	switch {
	case errors.Is(err, sql.ErrNoRows):
		why = "not sent: the question's instance was deleted first"
	case err != nil:
		return "", s.dbError(err)
	case status == QuestionOpen:
		return "", nil
	case status == QuestionExpired:
		why = "not sent: the question expired unanswered first"
	default:
		why = "not sent: the question was " + status + " first"
	}
	_, err = s.db.ExecContext(ctx, `UPDATE notify_outbox SET status = ?, last_error = ? WHERE id = ? AND status = ?`,
		OutboxSuperseded, why, r.ID, OutboxPending)
	if err != nil {
		return "", s.dbError(err)
	}
	return why, nil
}

// ExpireOutbox gives up the pending rows created before cutoff that are
// due (not under way): rows no process could deliver (none has their
// target in its configuration, or its secret), or whose retries outlived
// the bound. why is their error when they have none.
func (s *Store) ExpireOutbox(ctx context.Context, cutoff time.Time, why string) (int, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE notify_outbox SET status = ?, last_error = CASE WHEN last_error = '' THEN ? ELSE last_error END
		WHERE status = ? AND created_at < ? AND next_at <= ?`,
		OutboxFailed, why, OutboxPending, cutoff.UTC().Format(timeFormat), s.stamp().Format(timeFormat))
	if err != nil {
		return 0, s.dbError(err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// PruneOutbox deletes the delivered, failed and superseded rows created
// before cutoff.
func (s *Store) PruneOutbox(ctx context.Context, cutoff time.Time) (int, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM notify_outbox WHERE status <> ? AND created_at < ?`, OutboxPending, cutoff.UTC().Format(timeFormat))
	if err != nil {
		return 0, s.dbError(err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// Outbox returns the outbox's rows, newest first; limit > 0 keeps the
// newest limit.
func (s *Store) Outbox(ctx context.Context, limit int) ([]*OutboxRow, error) {
	q, args := `SELECT `+outboxCols+` FROM notify_outbox ORDER BY id DESC`, []any{}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.dbError(err)
	}
	defer rows.Close()
	out := []*OutboxRow{}
	for rows.Next() {
		r, err := scanOutbox(rows)
		if err != nil {
			return nil, s.dbError(err)
		}
		out = append(out, r)
	}
	return out, s.dbError0(rows.Err())
}
