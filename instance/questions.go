package instance

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"golang.org/x/text/unicode/norm"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Questions and progress events: what the endpoint's built-in tools store
// and the CLI reads (instance questions, answer, events, wait).

// AddQuestion stores an open question for the instance.
func (s *Store) AddQuestion(ctx context.Context, instanceID, text string, choices []string) (*Question, error) {
	if choices == nil {
		choices = []string{}
	}
	q := &Question{ID: s.newID(s.now()), InstanceID: instanceID, Text: text, Choices: choices, Status: QuestionOpen, AskedAt: s.stamp()}
	cj, _ := json.Marshal(choices)
	// A trigger gives the question its instance's label, agent and host
	// (for the inbox), whichever agentctl inserts it.
	const insert = `INSERT INTO questions (id, instance_id, question, choices, status, asked_at) VALUES (?, ?, ?, ?, ?, ?)`
	args := []any{q.ID, instanceID, text, string(cj), q.Status, q.AskedAt.Format(timeFormat)}
	n := s.notifyFor(NotifyQuestion)
	if n == nil {
		if _, err := s.db.ExecContext(ctx, insert, args...); err != nil {
			return nil, s.orDeleted(ctx, instanceID, err)
		}
		return q, nil
	}
	// The question and its notifications commit together.
	var ids []string
	err := s.inTx(ctx, instanceID, func(tx *dbTx) (err error) {
		if _, err := tx.ExecContext(ctx, insert, args...); err != nil {
			return err
		}
		ids, err = s.enqueue(ctx, tx, n, instanceID, []string{NotifyQuestion}, func(b *Notification) { b.Question = notificationQuestion(q) })
		return err
	})
	if err != nil {
		return nil, s.orDeleted(ctx, instanceID, err)
	}
	n.enqueued(s, ids)
	return q, nil
}

// questionInstanceBackfill gives every question a copy of its instance's
// label, agent and host: the migration that added them. From then on a
// trigger (questions_instance) sets them at each insert, whichever code
// makes it (AddQuestion, a copy, an endpoint of an older agentctl still
// serving); nothing changes the three after create.
const questionInstanceBackfill = `UPDATE questions SET (instance_name, agent, host) =
	(SELECT i.name, i.agent, i.host FROM instances i WHERE i.id = questions.instance_id)
	WHERE EXISTS (SELECT 1 FROM instances i WHERE i.id = questions.instance_id)`

const questionCols = `id, instance_id, question, choices, status, asked_at, coalesce(answer, ''), coalesce(answered_at, '')`

func scanQuestion(sc interface{ Scan(...any) error }) (*Question, error) {
	var q Question
	var choices, asked, answered string
	if err := sc.Scan(&q.ID, &q.InstanceID, &q.Text, &choices, &q.Status, &asked, &q.Answer, &answered); err != nil {
		return nil, err
	}
	fillQuestion(&q, choices, asked, answered)
	return &q, nil
}

// fillQuestion sets q's choices and times from their stored text.
func fillQuestion(q *Question, choices, asked, answered string) {
	_ = json.Unmarshal([]byte(choices), &q.Choices)
	q.AskedAt, _ = time.Parse(timeFormat, asked)
	if answered != "" {
		t, _ := time.Parse(timeFormat, answered)
		q.AnsweredAt = &t
	}
}

// Question returns one question of an instance.
func (s *Store) Question(ctx context.Context, instanceID, id string) (*Question, error) {
	q, err := scanQuestion(s.db.QueryRowContext(ctx, `SELECT `+questionCols+` FROM questions WHERE instance_id = ? AND id = ?`, instanceID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &NotFoundError{What: "question", Ref: id, Hint: "see `agentctl instance questions " + instanceID + "`"}
	}
	if err != nil {
		return nil, s.dbError(err)
	}
	return q, nil
}

// Questions returns an instance's questions, oldest first; only the open ones
// unless all is set.
func (s *Store) Questions(ctx context.Context, instanceID string, all bool) ([]*Question, error) {
	q, args := `SELECT `+questionCols+` FROM questions WHERE instance_id = ?`, []any{instanceID}
	if !all {
		q += ` AND status = ?`
		args = append(args, QuestionOpen)
	}
	rows, err := s.db.QueryContext(ctx, q+` ORDER BY id`, args...)
	if err != nil {
		return nil, s.dbError(err)
	}
	defer rows.Close()
	out := []*Question{}
	for rows.Next() {
		qq, err := scanQuestion(rows)
		if err != nil {
			return nil, s.dbError(err)
		}
		out = append(out, qq)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbError(err)
	}
	return out, nil
}

// OpenQuestions counts an instance's open questions, whichever endpoint
// asked them.
func (s *Store) OpenQuestions(ctx context.Context, instanceID string) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM questions WHERE instance_id = ? AND status = ?`, instanceID, QuestionOpen).Scan(&n); err != nil {
		return 0, s.dbError(err)
	}
	return n, nil
}

// Inbox returns every open question in the store, of every instance and
// host, oldest first: the inbox of the person on call. It reads the
// questions_open index (status, id) and the questions alone, which carry
// their instance's label, agent and host: its cost is that of the open
// questions, whatever the number of instances, and a new process's
// backend does not touch the instances' pages (half of the inbox's time
// on PostgreSQL when it did). limit > 0 keeps the oldest limit.
func (s *Store) Inbox(ctx context.Context, limit int) ([]*InboxQuestion, error) {
	q := `SELECT ` + questionCols + `, coalesce(instance_name, ''), agent, host FROM questions WHERE status = ? ORDER BY id`
	args := []any{QuestionOpen}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.dbError(err)
	}
	defer rows.Close()
	out := []*InboxQuestion{}
	for rows.Next() {
		var iq InboxQuestion
		var choices, asked, answered string
		qq := &iq.Question
		if err := rows.Scan(&qq.ID, &qq.InstanceID, &qq.Text, &choices, &qq.Status, &asked, &qq.Answer, &answered,
			&iq.InstanceName, &iq.Agent, &iq.Host); err != nil {
			return nil, s.dbError(err)
		}
		fillQuestion(qq, choices, asked, answered)
		out = append(out, &iq)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbError(err)
	}
	return out, nil
}

// InboxQuestion is an open question as [Store.Inbox] lists it: with the
// label, agent and host of its instance.
type InboxQuestion struct {
	Question
	InstanceName string `json:"instance_name"`
	Agent        string `json:"agent"`
	Host         string `json:"host,omitempty"`
}

// AnswerRef answers question questionID of the instance ref names (an id,
// id prefix or label, as [Store.Get] takes them) as [Store.Answer] does. The
// common case, ref an id or label and the question open and without choices
// (or other set), is one statement: on a store across a network, one round
// trip instead of three. That statement reads the question's row only, not
// the instance's record, so a question of an instance whose record cannot be
// decoded is answered too (Get refuses such a record). Anything else, and a
// store that notifies people of answers, takes [Store.Get] and
// [Store.Answer], which also name what is wrong: a question with choices
// costs the declined statement more than before.
func (s *Store) AnswerRef(ctx context.Context, ref, questionID, answer string, other bool) (*Question, error) {
	if err := checkAnswer(answer); err != nil {
		return nil, err
	}
	if ref != "" && questionID != "" && s.notifyFor(NotifyAnswered) == nil {
		if q, err := s.answerDirect(ctx, ref, questionID, answer, other); q != nil || err != nil {
			return q, err
		}
	}
	r, err := s.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	return s.Answer(ctx, r.ID, questionID, answer, other)
}

// checkAnswer refuses an answer with nothing in it (empty or white space),
// which would tell the waiting agent nothing: a script's unset variable,
// most likely.
func checkAnswer(answer string) error {
	if strings.TrimSpace(answer) == "" {
		return invalidf("the answer is empty; pass the text to send to the agent (an empty answer tells it nothing)")
	}
	return nil
}

// answerDirect is [Store.AnswerRef]'s one statement; nil, nil when it
// answered nothing.
func (s *Store) answerDirect(ctx context.Context, ref, questionID, answer string, other bool) (*Question, error) {
	cond := ` AND choices = '[]'`
	if other {
		cond = ""
	}
	// An id is the question's instance_id (no label looks like an id, see
	// ValidateLabel): the instances table is not read at all.
	inst := `instance_id = ?`
	if !isID(ref) {
		inst = `instance_id = (SELECT id FROM instances WHERE name = ?)`
	}
	now := s.stamp()
	// Like Answer's, the statement wakes the waiting ask_user_question.
	update := s.db.be.notifying(`UPDATE questions SET status = ?, answer = ?, answered_at = ?
		WHERE id = ? AND status = ?`+cond+` AND `+inst+`
		RETURNING id, instance_id, question, choices, status, asked_at, answer, answered_at`, chanAnswers)
	rows, err := s.db.QueryContext(ctx, update, QuestionAnswered, answer, now.Format(timeFormat), questionID, QuestionOpen, ref)
	if err != nil {
		return nil, s.dbError(err)
	}
	var q *Question
	for rows.Next() {
		if q, err = scanQuestion(rows); err != nil {
			break
		}
	}
	if err := errors.Join(err, rows.Err(), rows.Close()); err != nil {
		return nil, s.dbError(err)
	}
	return q, nil
}

// Answer answers an open question. With an empty questionID the instance must
// have exactly one open question, which is answered. A question asked with
// choices takes one of them (matched regardless of case, and stored as the
// choice is written); anything else is refused naming the choices, unless
// other is set (free text, which the agent is then told as given). An
// answer of nothing but white space is refused ([ErrInvalid]).
func (s *Store) Answer(ctx context.Context, instanceID, questionID, answer string, other bool) (*Question, error) {
	if err := checkAnswer(answer); err != nil {
		return nil, err
	}
	if questionID == "" {
		open, err := s.Questions(ctx, instanceID, false)
		if err != nil {
			return nil, err
		}
		switch len(open) {
		case 0:
			return nil, &NotFoundError{What: "open question for instance", Ref: instanceID, Hint: "nothing is waiting for an answer"}
		case 1:
			questionID = open[0].ID
		default:
			ids := make([]string, len(open))
			for i, q := range open {
				ids[i] = q.ID
			}
			return nil, &AmbiguousError{What: "an answer without a question id to instance", Ref: instanceID, Matches: ids,
				Has:  fmt.Sprintf("it has %d open questions,", len(ids)),
				Hint: "give the id of the one to answer (agentctl instance answer INSTANCE QUESTION-ID TEXT; agentctl instance questions INSTANCE lists them)"}
		}
	}
	q, err := s.Question(ctx, instanceID, questionID)
	if err != nil {
		return nil, err
	}
	if q.Status != QuestionOpen {
		return nil, &InvalidError{Msg: fmt.Sprintf("question %s is %s, not open; it cannot be answered any more", q.ID, q.Status)}
	}
	if len(q.Choices) > 0 && !other {
		choice, several := matchChoice(q.Choices, answer)
		if choice == "" {
			quote := func(cs []string) string {
				quoted := make([]string, len(cs))
				for i, c := range cs {
					quoted[i] = strconv.Quote(c)
				}
				return strings.Join(quoted, ", ")
			}
			if len(several) > 1 {
				return nil, &InvalidError{Msg: fmt.Sprintf("question %s (%q): %q matches %d of its choices but for letter case (%s); give one exactly as written",
					q.ID, q.Text, answer, len(several), quote(several))}
			}
			return nil, &InvalidError{Msg: fmt.Sprintf("question %s (%q) takes one of its choices: %s; %q is none of them (pass --other to send it as free text)",
				q.ID, q.Text, quote(q.Choices), answer)}
		}
		answer = choice
	}
	now := s.stamp()
	// The statement also wakes the waiting ask_user_question at once, on
	// any host (see [Store.WatchAnswer]): one round trip. Its rows are
	// read to their end (see insertEvent).
	update := s.db.be.notifying(`UPDATE questions SET status = ?, answer = ?, answered_at = ? WHERE id = ? AND status = ? RETURNING id`, chanAnswers)
	args := []any{QuestionAnswered, answer, now.Format(timeFormat), q.ID, QuestionOpen}
	answered := func(rows *sql.Rows, err error) (int, error) {
		if err != nil {
			return 0, s.dbError(err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return 0, s.dbError(err)
		}
		return n, nil
	}
	var got int
	var ids []string
	nt := s.notifyFor(NotifyAnswered)
	if nt == nil {
		got, err = answered(s.db.QueryContext(ctx, update, args...))
	} else {
		// The answer and its notifications commit together.
		err = s.inTx(ctx, instanceID, func(tx *dbTx) error {
			var err error
			if got, err = answered(tx.QueryContext(ctx, update, args...)); err != nil || got == 0 {
				return err
			}
			a := *q
			a.Status, a.Answer, a.AnsweredAt = QuestionAnswered, answer, &now
			ids, err = s.enqueue(ctx, tx, nt, q.InstanceID, []string{NotifyAnswered}, func(b *Notification) { b.Question = notificationQuestion(&a) })
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	if got == 0 {
		return nil, &InvalidError{Msg: fmt.Sprintf("question %s was closed while answering; it cannot be answered any more", q.ID)}
	}
	nt.enqueued(s, ids)
	q.Status, q.Answer, q.AnsweredAt = QuestionAnswered, answer, &now
	return q, nil
}

// closeQuestion gives an open question status ([QuestionExpired] or
// [QuestionCancelled]). It reports false if the question was no longer open
// (an answer won the race), and an error matching [ErrDeleted] if the
// instance was deleted.
func (s *Store) closeQuestion(ctx context.Context, instanceID, questionID, status string) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE questions SET status = ? WHERE instance_id = ? AND id = ? AND status = ?`, status, instanceID, questionID, QuestionOpen)
	if err != nil {
		return false, s.orDeleted(ctx, instanceID, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return true, nil
	}
	return false, s.orDeleted(ctx, instanceID, nil)
}

// ExpireQuestion marks an open question [QuestionExpired]: it got no answer
// in time. It reports false if the question was no longer open (an answer
// won the race), and an error matching [ErrDeleted] if the instance was
// deleted.
func (s *Store) ExpireQuestion(ctx context.Context, instanceID, questionID string) (bool, error) {
	return s.closeQuestion(ctx, instanceID, questionID, QuestionExpired)
}

// CancelQuestion marks an open question [QuestionCancelled]: its call was
// cancelled or its endpoint stopped. It reports false and errors as
// [Store.ExpireQuestion] does.
func (s *Store) CancelQuestion(ctx context.Context, instanceID, questionID string) (bool, error) {
	return s.closeQuestion(ctx, instanceID, questionID, QuestionCancelled)
}

// AddEvent records a progress event and returns it with its sequence number.
func (s *Store) AddEvent(ctx context.Context, e Event) (*Event, error) {
	e.At = s.stamp()
	var seq int64
	var run string
	var n *Notify
	if e.Status == StatusFailed {
		n = s.notifyFor(NotifyFailed)
	}
	var ids []string
	err := s.inTx(ctx, e.InstanceID, func(tx *dbTx) (err error) {
		seq, run, err = insertEvent(ctx, tx, e.At, e.InstanceID, e)
		if err != nil || n == nil {
			return err
		}
		// The model reported a failure: its notification commits with it.
		ids, err = s.enqueue(ctx, tx, n, e.InstanceID, []string{NotifyFailed}, func(b *Notification) {
			b.Progress = &NotificationProgress{Seq: seq, Tool: e.Tool, Status: e.Status, Message: e.Message}
			if run != "" {
				b.Run = &NotificationRun{ID: run}
			}
		})
		return err
	})
	if err != nil {
		return nil, s.orDeleted(ctx, e.InstanceID, err)
	}
	n.enqueued(s, ids)
	e.Seq, e.RunID = seq, run
	return &e, nil
}

// Events returns an instance's events with a sequence number above after.
func (s *Store) Events(ctx context.Context, instanceID string, after int64) ([]*Event, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, instance_id, at, tool, status, message, percent, run_id FROM events WHERE instance_id = ? AND seq > ? ORDER BY seq`, instanceID, after)
	if err != nil {
		return nil, s.dbError(err)
	}
	defer rows.Close()
	out := []*Event{}
	for rows.Next() {
		var e Event
		var at string
		var pct sql.NullFloat64
		if err := rows.Scan(&e.Seq, &e.InstanceID, &at, &e.Tool, &e.Status, &e.Message, &pct, &e.RunID); err != nil {
			return nil, s.dbError(err)
		}
		e.At, _ = time.Parse(timeFormat, at)
		if pct.Valid {
			p := pct.Float64
			e.Percent = &p
		}
		out = append(out, &e)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbError(err)
	}
	return out, nil
}

// Exists reports whether the instance still exists (for endpoints that
// outlive a delete).
func (s *Store) Exists(ctx context.Context, id string) (bool, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM instances WHERE id = ?`, id).Scan(&n); err != nil {
		return false, s.dbError(err)
	}
	return n == 1, nil
}

// orDeleted explains a failed write or an empty read for instance id: if
// the instance no longer exists (a foreign key failed, or its questions went
// with it) it returns an error matching [ErrDeleted], else err as it is. The
// happy path never pays for the look.
func (s *Store) orDeleted(ctx context.Context, id string, err error) error {
	if ok, xerr := s.Exists(ctx, id); xerr == nil && !ok {
		return deletedError(id)
	}
	return err
}

// AskQuestion stores an open question and returns its id (for the endpoint).
// Like [Store.PollAnswer], [Store.ExpireQuestion] and [Store.RecordProgress]
// it returns an error matching [ErrDeleted] once the instance is deleted.
func (s *Store) AskQuestion(ctx context.Context, instanceID, text string, choices []string) (string, error) {
	q, err := s.AddQuestion(ctx, instanceID, text, choices)
	if err != nil {
		return "", err
	}
	return q.ID, nil
}

// PollAnswer reports a question's status (open, answered, expired or
// cancelled) and its answer once it has one (for the endpoint).
func (s *Store) PollAnswer(ctx context.Context, instanceID, questionID string) (answer, status string, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT status, coalesce(answer, '') FROM questions WHERE instance_id = ? AND id = ?`, instanceID, questionID).Scan(&status, &answer)
	if errors.Is(err, sql.ErrNoRows) {
		// Deleting an instance deletes its questions.
		return "", "", s.orDeleted(ctx, instanceID, &NotFoundError{What: "question", Ref: questionID, Hint: "see `agentctl instance questions " + instanceID + "`"})
	}
	if err != nil {
		return "", "", s.dbError(err)
	}
	return answer, status, nil
}

// RecordProgress stores a progress event (for the endpoint).
func (s *Store) RecordProgress(ctx context.Context, instanceID, tool, status, message string, percent *float64) (int64, error) {
	e, err := s.AddEvent(ctx, Event{InstanceID: instanceID, Tool: tool, Status: status, Message: message, Percent: percent})
	if err != nil {
		return 0, err
	}
	return e.Seq, nil
}

// matchChoice finds answer among choices: exactly, else regardless of case
// and surrounding space when that picks one choice.
func matchChoice(choices []string, answer string) (string, []string) {
	if slices.Contains(choices, answer) {
		return answer, nil
	}
	// As a person types it: spaces at the ends, letter case, line ends
	// (a browser's form sends CRLF for LF, and its HTML parser makes LF of
	// CRLF) and the Unicode form (a decomposed "é" from a macOS keyboard)
	// aside.
	fold := func(s string) string {
		s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
		return norm.NFC.String(strings.TrimSpace(s))
	}
	var found []string
	for _, c := range choices {
		if strings.EqualFold(fold(c), fold(answer)) {
			found = append(found, c)
		}
	}
	if len(found) == 1 {
		return found[0], nil
	}
	return "", found
}
