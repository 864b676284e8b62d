package instance

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Operators: the people who use the web page of `agentctl serve`. An
// operator logs in with an operator token (never an instance's token),
// which opens a session; the store keeps the tokens and the sessions as
// SHA-256 hashes only (migration 7's operator_tokens and ui_sessions), so
// that reading the database gives no way in.

// OperatorTokenPrefix starts every operator token, so that one is told
// from an instance's ([TokenPrefix]) at a glance and by secret scanners.
const OperatorTokenPrefix = "agtop_"

// DefaultSessionTTL is how long a web page session lasts.
const DefaultSessionTTL = 24 * time.Hour

// ErrNotAuthorized is what a wrong, revoked or unknown operator token or
// session gets: which of those it was is not told.
var ErrNotAuthorized = errors.New("not authorized: the operator token or session is wrong, revoked or expired")

// operatorLock is the key that serialises the writers of operator tokens,
// so that two daemons starting at once on a new shared store make one
// first token, not two.
const operatorLock = "operators"

// OperatorToken is what the store knows of an operator token: never the
// token itself.
type OperatorToken struct {
	ID        string     `json:"id"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// NewOperatorToken makes an operator token: [OperatorTokenPrefix] and 32
// bytes from crypto/rand in unpadded base64url, safe in a URL.
func NewOperatorToken() (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make an operator token: %w", err)
	}
	return OperatorTokenPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// EnsureOperatorToken makes an operator token when the store has none in
// force (none made yet, or all revoked) and returns it; when one is in
// force it returns "" (the store cannot give it back: it has its hash
// only). Concurrent callers make one token between them.
func (s *Store) EnsureOperatorToken(ctx context.Context) (string, error) {
	var token string
	err := s.operatorTx(ctx, func(tx *dbTx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM operator_tokens WHERE revoked_at IS NULL`).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		var err error
		token, _, err = s.insertOperatorToken(ctx, tx)
		return err
	})
	return token, err
}

// CreateOperatorToken makes a new operator token and returns it with its
// id. With revokeOthers every other token in force is revoked in the same
// transaction, and their sessions end: the browsers logged in with them
// must log in again.
func (s *Store) CreateOperatorToken(ctx context.Context, revokeOthers bool) (token string, t *OperatorToken, revoked int, err error) {
	err = s.operatorTx(ctx, func(tx *dbTx) error {
		if revokeOthers {
			var err error
			if revoked, err = revokeOperatorTokens(ctx, tx, s.stamp()); err != nil {
				return err
			}
		}
		var err error
		token, t, err = s.insertOperatorToken(ctx, tx)
		return err
	})
	if err != nil {
		return "", nil, 0, err
	}
	return token, t, revoked, nil
}

// RevokeOperatorTokens revokes every operator token in force and ends
// their sessions; it returns how many it revoked.
func (s *Store) RevokeOperatorTokens(ctx context.Context) (int, error) {
	var n int
	err := s.operatorTx(ctx, func(tx *dbTx) (err error) {
		n, err = revokeOperatorTokens(ctx, tx, s.stamp())
		return err
	})
	return n, err
}

func revokeOperatorTokens(ctx context.Context, tx *dbTx, now time.Time) (int, error) {
	if _, err := tx.ExecContext(ctx, `DELETE FROM ui_sessions WHERE token_id IN (SELECT id FROM operator_tokens WHERE revoked_at IS NULL)`); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `UPDATE operator_tokens SET revoked_at = ? WHERE revoked_at IS NULL`, now.Format(timeFormat))
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// OperatorTokens lists the operator tokens, revoked ones included, oldest
// first.
func (s *Store) OperatorTokens(ctx context.Context) ([]OperatorToken, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, created_at, coalesce(revoked_at, '') FROM operator_tokens ORDER BY id`)
	if err != nil {
		return nil, s.dbError(err)
	}
	defer rows.Close()
	out := []OperatorToken{}
	for rows.Next() {
		var t OperatorToken
		var created, revoked string
		if err := rows.Scan(&t.ID, &created, &revoked); err != nil {
			return nil, s.dbError(err)
		}
		t.CreatedAt, _ = time.Parse(timeFormat, created)
		if revoked != "" {
			r, _ := time.Parse(timeFormat, revoked)
			t.RevokedAt = &r
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbError(err)
	}
	return out, nil
}

// CheckOperatorToken returns the id of the operator token token is, if it
// is in force; else [ErrNotAuthorized]. The token is looked up by its hash
// (a unique index), then the hashes are compared in constant time.
func (s *Store) CheckOperatorToken(ctx context.Context, token string) (string, error) {
	if !strings.HasPrefix(token, OperatorTokenPrefix) {
		return "", ErrNotAuthorized
	}
	h := hashToken(token)
	var id string
	var stored []byte
	err := s.db.QueryRowContext(ctx, `SELECT id, hash FROM operator_tokens WHERE hash = ? AND revoked_at IS NULL`, h).Scan(&id, &stored)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrNotAuthorized
	}
	if err != nil {
		return "", s.dbError(err)
	}
	if subtle.ConstantTimeCompare(h, stored) != 1 {
		return "", ErrNotAuthorized
	}
	return id, nil
}

// UISession is a web page session: the operator token that opened it, the
// CSRF token every form of the session carries, and its times.
type UISession struct {
	TokenID   string
	CSRF      string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// CreateUISession checks the operator token and opens a session of ttl (0:
// [DefaultSessionTTL]) for it. It returns the session's id, which is the
// cookie's value and is kept only as its hash, and the session.
// Sessions that have expired are deleted meanwhile.
func (s *Store) CreateUISession(ctx context.Context, token string, ttl time.Duration) (string, *UISession, error) {
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	tokenID, err := s.CheckOperatorToken(ctx, token)
	if err != nil {
		return "", nil, err
	}
	id, err := randomText()
	if err != nil {
		return "", nil, err
	}
	csrf, err := randomText()
	if err != nil {
		return "", nil, err
	}
	now := s.stamp()
	sess := &UISession{TokenID: tokenID, CSRF: csrf, CreatedAt: now, ExpiresAt: now.Add(ttl)}
	err = s.operatorTx(ctx, func(tx *dbTx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM ui_sessions WHERE expires_at <= ?`, now.Format(timeFormat)); err != nil {
			return err
		}
		// The token may have been revoked since it was checked; revoking
		// takes the operators' lock too, so it cannot happen from here on.
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM operator_tokens WHERE id = ? AND revoked_at IS NULL`, tokenID).Scan(&n); err != nil {
			return err
		}
		if n != 1 {
			return ErrNotAuthorized
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO ui_sessions (hash, token_id, csrf, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`,
			hashToken(id), tokenID, csrf, now.Format(timeFormat), sess.ExpiresAt.Format(timeFormat))
		return err
	})
	if err != nil {
		return "", nil, err
	}
	return id, sess, nil
}

// UISession returns the session whose id (the cookie's value) is id, if it
// has not expired and its operator token is in force; else
// [ErrNotAuthorized].
func (s *Store) UISession(ctx context.Context, id string) (*UISession, error) {
	if id == "" {
		return nil, ErrNotAuthorized
	}
	var sess UISession
	var created, expires string
	err := s.db.QueryRowContext(ctx, `SELECT u.token_id, u.csrf, u.created_at, u.expires_at FROM ui_sessions u
		JOIN operator_tokens t ON t.id = u.token_id WHERE u.hash = ? AND t.revoked_at IS NULL`, hashToken(id)).
		Scan(&sess.TokenID, &sess.CSRF, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotAuthorized
	}
	if err != nil {
		return nil, s.dbError(err)
	}
	sess.CreatedAt, _ = time.Parse(timeFormat, created)
	sess.ExpiresAt, _ = time.Parse(timeFormat, expires)
	if !s.stamp().Before(sess.ExpiresAt) {
		return nil, ErrNotAuthorized
	}
	return &sess, nil
}

// DeleteUISession ends the session whose id is id (a log out); ending one
// that does not exist is no error.
func (s *Store) DeleteUISession(ctx context.Context, id string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM ui_sessions WHERE hash = ?`, hashToken(id))
	if err != nil {
		return s.dbError(err)
	}
	return nil
}

// LastActivity returns, for each of the instances ids names, the time of
// the latest thing it did that the store recorded: its latest event, or
// the latest question it asked or had answered ("" ids and unknown ones
// are left out; the record's own times, its creation and its last run,
// are the caller's to add). Each instance costs an index look-up or two,
// whatever the number of its events.
func (s *Store) LastActivity(ctx context.Context, ids []string) (map[string]time.Time, error) {
	out := make(map[string]time.Time, len(ids))
	const batch = 500
	for len(ids) > 0 {
		n := min(len(ids), batch)
		part := ids[:n]
		ids = ids[n:]
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		q := `SELECT i.id,
			coalesce((SELECT e.at FROM events e WHERE e.instance_id = i.id ORDER BY e.seq DESC LIMIT 1), ''),
			coalesce((SELECT max(q.asked_at) FROM questions q WHERE q.instance_id = i.id), ''),
			coalesce((SELECT max(q.answered_at) FROM questions q WHERE q.instance_id = i.id), '')
			FROM instances i WHERE i.id IN (?` + strings.Repeat(", ?", n-1) + `)`
		rows, err := s.db.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, s.dbError(err)
		}
		for rows.Next() {
			var id string
			var times [3]string
			if err := rows.Scan(&id, &times[0], &times[1], &times[2]); err != nil {
				rows.Close()
				return nil, s.dbError(err)
			}
			var latest time.Time
			for _, ts := range times {
				if t, err := time.Parse(timeFormat, ts); err == nil && t.After(latest) {
					latest = t
				}
			}
			if !latest.IsZero() {
				out[id] = latest
			}
		}
		err = errors.Join(rows.Err(), rows.Close())
		if err != nil {
			return nil, s.dbError(err)
		}
	}
	return out, nil
}

// operatorTx runs fn in a write transaction holding the operators' lock.
func (s *Store) operatorTx(ctx context.Context, fn func(*dbTx) error) error {
	tx, err := s.db.BeginTx(ctx)
	if err != nil {
		return s.dbError(err)
	}
	defer tx.Rollback()
	if err := tx.lock(ctx, operatorLock); err != nil {
		return s.dbError(err)
	}
	if err := fn(tx); err != nil {
		if errors.Is(err, ErrNotAuthorized) {
			return err
		}
		return s.dbError(err)
	}
	if err := tx.Commit(); err != nil {
		return s.dbError(err)
	}
	return nil
}

// insertOperatorToken makes a token and stores its hash.
func (s *Store) insertOperatorToken(ctx context.Context, tx *dbTx) (string, *OperatorToken, error) {
	token, err := NewOperatorToken()
	if err != nil {
		return "", nil, err
	}
	now := s.stamp()
	t := &OperatorToken{ID: s.newID(now), CreatedAt: now}
	if _, err := tx.ExecContext(ctx, `INSERT INTO operator_tokens (id, hash, created_at) VALUES (?, ?, ?)`,
		t.ID, hashToken(token), now.Format(timeFormat)); err != nil {
		return "", nil, err
	}
	return token, t, nil
}

// randomText is 32 random bytes in unpadded base64url: a session id or a
// CSRF token.
func randomText() (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make a session: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
