package instance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/testkit"
)

// operatorBackends runs check on a fresh store of each backend, SQLite and
// PostgreSQL (which fails, never skips, without PostgreSQL's programs).
func operatorBackends(t *testing.T, check func(t *testing.T, st *Store, clock *confClock)) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var u StoreURL
			if kind == "postgres" {
				u = StoreURL(testkit.SharedPostgres(t).NewDatabase(t))
			}
			clock := newConfClock()
			st := confOpen(t, t.TempDir(), u, WithClock(clock.now))
			check(t, st, clock)
		})
	}
}

// TestOperatorTokenStoredAsHashOnly: the store keeps an operator token's
// SHA-256 and nothing from which the token could be read; the token opens
// a session, and a wrong one, or an instance's, does not.
func TestOperatorTokenStoredAsHashOnly(t *testing.T) {
	t.Parallel()
	operatorBackends(t, func(t *testing.T, st *Store, _ *confClock) {
		ctx := context.Background()
		tok, err := st.EnsureOperatorToken(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(tok, OperatorTokenPrefix) || len(tok) != len(OperatorTokenPrefix)+43 {
			t.Fatalf("EnsureOperatorToken made %q, want %s and 43 base64url characters", tok, OperatorTokenPrefix)
		}
		again, err := st.EnsureOperatorToken(ctx)
		if err != nil || again != "" {
			t.Fatalf("EnsureOperatorToken with a token in force: %q, %v; want none made", again, err)
		}
		rows, err := st.db.QueryContext(ctx, `SELECT id, hash, created_at, coalesce(revoked_at, '') FROM operator_tokens`)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			n++
			var id, created, revoked string
			var hash []byte
			if err := rows.Scan(&id, &hash, &created, &revoked); err != nil {
				t.Fatal(err)
			}
			want := sha256.Sum256([]byte(tok))
			if !bytes.Equal(hash, want[:]) {
				t.Errorf("the stored hash is not the token's SHA-256")
			}
			for _, col := range []string{id, string(hash), created, revoked} {
				if strings.Contains(col, tok) || strings.Contains(col, strings.TrimPrefix(tok, OperatorTokenPrefix)) {
					t.Errorf("a column holds the token: %q", col)
				}
			}
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("%d operator tokens stored, want 1", n)
		}
		if _, err := st.CheckOperatorToken(ctx, tok); err != nil {
			t.Errorf("CheckOperatorToken(the token): %v", err)
		}
		instTok, _ := NewToken()
		last := "A"
		if strings.HasSuffix(tok, last) {
			last = "B"
		}
		for _, bad := range []string{"", tok + "x", tok[:len(tok)-1] + last, OperatorTokenPrefix, instTok, strings.Replace(tok, OperatorTokenPrefix, TokenPrefix, 1)} {
			if _, err := st.CheckOperatorToken(ctx, bad); !errors.Is(err, ErrNotAuthorized) {
				t.Errorf("CheckOperatorToken(%q): %v, want ErrNotAuthorized", bad, err)
			}
			if _, _, err := st.CreateUISession(ctx, bad, 0); !errors.Is(err, ErrNotAuthorized) {
				t.Errorf("CreateUISession(%q): %v, want ErrNotAuthorized", bad, err)
			}
		}
		id, sess, err := st.CreateUISession(ctx, tok, 0)
		if err != nil {
			t.Fatal(err)
		}
		var stored int
		if err := st.db.QueryRowContext(ctx, `SELECT count(*) FROM ui_sessions WHERE hash = ?`, hashToken(id)).Scan(&stored); err != nil || stored != 1 {
			t.Fatalf("the session's hash is stored %d times (%v), want once", stored, err)
		}
		var raw int
		if err := st.db.QueryRowContext(ctx, `SELECT count(*) FROM ui_sessions WHERE hash = ?`, []byte(id)).Scan(&raw); err != nil || raw != 0 {
			t.Errorf("the session id itself is stored (%d, %v)", raw, err)
		}
		if sess.CSRF == "" || sess.CSRF == id || len(sess.CSRF) < 40 {
			t.Errorf("CSRF token %q: want 32 random bytes of its own", sess.CSRF)
		}
		got, err := st.UISession(ctx, id)
		if err != nil || got.CSRF != sess.CSRF {
			t.Fatalf("UISession: %+v, %v; want the session", got, err)
		}
		if _, err := st.UISession(ctx, id+"x"); !errors.Is(err, ErrNotAuthorized) {
			t.Errorf("UISession(wrong id): %v, want ErrNotAuthorized", err)
		}
		if err := st.DeleteUISession(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := st.UISession(ctx, id); !errors.Is(err, ErrNotAuthorized) {
			t.Errorf("UISession after log out: %v, want ErrNotAuthorized", err)
		}
	})
}

// TestOperatorTokenRevoked: a revoked token opens no session, and the
// sessions it opened end with it; --new-token's revokeOthers keeps only
// the new one.
func TestOperatorTokenRevoked(t *testing.T) {
	t.Parallel()
	operatorBackends(t, func(t *testing.T, st *Store, _ *confClock) {
		ctx := context.Background()
		first, err := st.EnsureOperatorToken(ctx)
		if err != nil {
			t.Fatal(err)
		}
		second, _, revoked, err := st.CreateOperatorToken(ctx, false)
		if err != nil || revoked != 0 {
			t.Fatalf("CreateOperatorToken: %d revoked, %v", revoked, err)
		}
		s1, _, err := st.CreateUISession(ctx, first, 0)
		if err != nil {
			t.Fatal(err)
		}
		s2, _, err := st.CreateUISession(ctx, second, 0)
		if err != nil {
			t.Fatal(err)
		}
		third, t3, revoked, err := st.CreateOperatorToken(ctx, true)
		if err != nil || revoked != 2 {
			t.Fatalf("CreateOperatorToken(revoke others): %d revoked, %v; want 2", revoked, err)
		}
		for _, tok := range []string{first, second} {
			if _, err := st.CheckOperatorToken(ctx, tok); !errors.Is(err, ErrNotAuthorized) {
				t.Errorf("a revoked token is accepted: %v", err)
			}
			if _, _, err := st.CreateUISession(ctx, tok, 0); !errors.Is(err, ErrNotAuthorized) {
				t.Errorf("a revoked token opens a session: %v", err)
			}
		}
		for _, s := range []string{s1, s2} {
			if _, err := st.UISession(ctx, s); !errors.Is(err, ErrNotAuthorized) {
				t.Errorf("a revoked token's session goes on: %v", err)
			}
		}
		if id, err := st.CheckOperatorToken(ctx, third); err != nil || id != t3.ID {
			t.Errorf("the new token: %q, %v; want %s", id, err, t3.ID)
		}
		toks, err := st.OperatorTokens(ctx)
		if err != nil || len(toks) != 3 || toks[0].RevokedAt == nil || toks[1].RevokedAt == nil || toks[2].RevokedAt != nil {
			t.Errorf("OperatorTokens: %+v, %v; want two revoked and the new one", toks, err)
		}
		// Every token revoked: the next daemon makes one again.
		if n, err := st.RevokeOperatorTokens(ctx); err != nil || n != 1 {
			t.Fatalf("RevokeOperatorTokens: %d, %v", n, err)
		}
		if tok, err := st.EnsureOperatorToken(ctx); err != nil || tok == "" {
			t.Errorf("EnsureOperatorToken with every token revoked: %q, %v; want a new one", tok, err)
		}
	})
}

// TestOperatorSessionExpiry: a session ends at its expiry, whatever the
// cookie says, and an expired one is deleted by the next log in.
func TestOperatorSessionExpiry(t *testing.T) {
	t.Parallel()
	operatorBackends(t, func(t *testing.T, st *Store, clock *confClock) {
		ctx := context.Background()
		tok, err := st.EnsureOperatorToken(ctx)
		if err != nil {
			t.Fatal(err)
		}
		id, sess, err := st.CreateUISession(ctx, tok, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if d := sess.ExpiresAt.Sub(sess.CreatedAt); d != time.Hour {
			t.Errorf("session of %v, want 1h", d)
		}
		clock.advance(59 * time.Minute)
		if _, err := st.UISession(ctx, id); err != nil {
			t.Fatalf("a session before its expiry: %v", err)
		}
		clock.advance(time.Minute)
		if _, err := st.UISession(ctx, id); !errors.Is(err, ErrNotAuthorized) {
			t.Fatalf("a session at its expiry: %v, want ErrNotAuthorized", err)
		}
		if _, _, err := st.CreateUISession(ctx, tok, 0); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := st.db.QueryRowContext(ctx, `SELECT count(*) FROM ui_sessions WHERE hash = ?`, hashToken(id)).Scan(&n); err != nil || n != 0 {
			t.Errorf("the expired session is still stored (%d, %v) after another log in", n, err)
		}
	})
}

// TestOperatorFirstTokenOnce: daemons starting at once on a new store make
// one first token between them.
func TestOperatorFirstTokenOnce(t *testing.T) {
	t.Parallel()
	operatorBackends(t, func(t *testing.T, st *Store, _ *confClock) {
		ctx := context.Background()
		var wg sync.WaitGroup
		var mu sync.Mutex
		made := 0
		for range 8 {
			wg.Go(func() {
				tok, err := st.EnsureOperatorToken(ctx)
				if err != nil {
					t.Error(err)
				}
				if tok != "" {
					mu.Lock()
					made++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if made != 1 {
			t.Errorf("%d first tokens made, want 1", made)
		}
	})
}

// TestOperatorLastActivity: an instance's latest event or question is its
// activity; an instance that did nothing has none.
func TestOperatorLastActivity(t *testing.T) {
	t.Parallel()
	operatorBackends(t, func(t *testing.T, st *Store, clock *confClock) {
		ctx := context.Background()
		a := confCreate(t, st, "auggie", "", nil)
		b := confCreate(t, st, "auggie", "", nil)
		idle := confCreate(t, st, "auggie", "", nil)
		clock.advance(time.Minute)
		if _, err := st.AddEvent(ctx, Event{InstanceID: a.ID, Tool: "t", Status: StatusRunning, Message: "m"}); err != nil {
			t.Fatal(err)
		}
		evAt := clock.now()
		clock.advance(time.Minute)
		q, err := st.AddQuestion(ctx, b.ID, "q?", nil)
		if err != nil {
			t.Fatal(err)
		}
		clock.advance(time.Minute)
		if _, err := st.Answer(ctx, b.ID, q.ID, "yes", false); err != nil {
			t.Fatal(err)
		}
		ansAt := clock.now()
		got, err := st.LastActivity(ctx, []string{a.ID, b.ID, idle.ID, "nosuch"})
		if err != nil {
			t.Fatal(err)
		}
		if !got[a.ID].Equal(evAt) || !got[b.ID].Equal(ansAt) || len(got) != 2 {
			t.Errorf("LastActivity: %v; want %s at %v, %s at %v and nothing else", got, a.ID, evAt, b.ID, ansAt)
		}
	})
}
