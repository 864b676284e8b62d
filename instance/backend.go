package instance

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
)

// A backend is the database under a [Store]: SQLite (a file in the state
// directory, the default) or PostgreSQL (one database that many hosts
// share). The store's statements are written once, in the SQL the two
// share, with ? placeholders; a backend connects, migrates, rebinds the
// placeholders, spells the few expressions that differ, serialises the
// writers of one key, classifies its errors and, where it can, wakes
// waiters when something changes instead of leaving them to poll.
type backend interface {
	// Kind is "sqlite" or "postgres".
	Kind() string
	// Name names the database in messages: a path, or a URL without its
	// password.
	Name() string
	// rebind turns the ? and ?N placeholders of q into the backend's.
	rebind(q string) string
	// lockKey serialises, until tx ends, the transactions that take the same
	// key: what SQLite's one writer gives for free.
	lockKey(ctx context.Context, tx *sql.Tx, key string) error
	// jsonText is the SQL expression of the text at path (dotted) in the
	// JSON document col; NULL when missing or null.
	jsonText(col, path string) string
	// jsonSet is the SQL expression of document col with path (one key)
	// set to the JSON document in the placeholder that follows.
	jsonSet(col, key string) string
	// isUnique reports a unique-constraint violation.
	isUnique(err error) bool
	// isUnavailable reports an error of a database that could not be
	// reached, or whose connection was lost.
	isUnavailable(err error) bool
	// notify wakes the waiters of channel and payload (see
	// [Store.WatchEvents]) once ex's transaction commits, or at once
	// outside one; a backend without notifications does nothing.
	notify(ctx context.Context, ex execer, channel, payload string) error
	// notifying is statement q, which ends RETURNING columns of distinct
	// names, one of them id, made to notify channel with each returned
	// row's id as payload, in the same round trip; it still yields the
	// returned rows.
	notifying(q, channel string) string
	// failed is told of every error of a statement: a backend may drop
	// connections a server restart left dead, so the next try gets a
	// live one.
	failed(err error)
	// watch returns a channel that receives when channel's payload may
	// have changed (notified, or anything committed where the backend
	// cannot say what), or when a change may have gone unseen (after a
	// reconnection), and a function that stops the watch ([watchSet]).
	watch(ctx context.Context, channel, payload string) (<-chan struct{}, func())
}

// Notification channels.
const (
	chanEvents  = "agentctl_events"  // payload: the instance id
	chanAnswers = "agentctl_answers" // payload: the question id
	chanLogs    = "agentctl_logs"    // payload: the instance id
	chanRecords = "agentctl_records" // payload: the instance id
)

// db is the store's database: database/sql with the backend's driver,
// every statement rebound for the backend. Only the Context methods are
// used; the embedded ones are the backend's own business (SQLite's
// checkpoints and VACUUM).
type db struct {
	*sql.DB
	be backend
}

// execer runs a statement: a [*sql.DB] or [*sql.Tx].
type execer interface {
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
}

func (d *db) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	res, err := d.DB.ExecContext(ctx, d.be.rebind(q), args...)
	if err != nil {
		d.be.failed(err)
	}
	return res, err
}

func (d *db) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	rows, err := d.DB.QueryContext(ctx, d.be.rebind(q), args...)
	if err != nil {
		d.be.failed(err)
	}
	return rows, err
}

func (d *db) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return d.DB.QueryRowContext(ctx, d.be.rebind(q), args...)
}

// BeginTx begins a write transaction (SQLite: BEGIN IMMEDIATE).
func (d *db) BeginTx(ctx context.Context) (*dbTx, error) {
	tx, err := d.DB.BeginTx(ctx, nil)
	if err != nil {
		d.be.failed(err)
		return nil, err
	}
	return &dbTx{Tx: tx, be: d.be}, nil
}

// dbTx is a transaction of a [db].
type dbTx struct {
	*sql.Tx
	be backend
}

func (t *dbTx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	res, err := t.Tx.ExecContext(ctx, t.be.rebind(q), args...)
	if err != nil {
		t.be.failed(err)
	}
	return res, err
}

func (t *dbTx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	rows, err := t.Tx.QueryContext(ctx, t.be.rebind(q), args...)
	if err != nil {
		t.be.failed(err)
	}
	return rows, err
}

func (t *dbTx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return t.Tx.QueryRowContext(ctx, t.be.rebind(q), args...)
}

// lock serialises this transaction with the others that lock key (see
// [backend.lockKey]).
func (t *dbTx) lock(ctx context.Context, key string) error { return t.be.lockKey(ctx, t.Tx, key) }

// notify wakes channel's waiters of payload once t commits.
func (t *dbTx) notify(ctx context.Context, channel, payload string) error {
	return t.be.notify(ctx, t.Tx, channel, payload)
}

// StoreURL is where the state database is: "" or a path or sqlite:PATH
// for SQLite in the state directory (the default) or at PATH, or a
// postgres:// (postgresql://) URL.
type StoreURL string

// parseStore says which backend u names and where.
func parseStore(u StoreURL, stateDir string) (kind, where string, err error) {
	s := strings.TrimSpace(string(u))
	switch {
	case s == "":
		return "sqlite", filepath.Join(stateDir, DBFile), nil
	case strings.HasPrefix(s, "postgres://"), strings.HasPrefix(s, "postgresql://"):
		if _, err := url.Parse(s); err != nil {
			return "", "", invalidf("store URL: %s; write it as postgres://USER@HOST:PORT/DATABASE", RedactStore(s))
		}
		return "postgres", s, nil
	case strings.HasPrefix(s, "sqlite:"):
		s = strings.TrimPrefix(s, "sqlite:")
		s = strings.TrimPrefix(s, "//")
		if s == "" {
			return "", "", invalidf("store %q names no file; write sqlite:PATH", string(u))
		}
		return "sqlite", s, nil
	case strings.Contains(s, "://"):
		scheme, _, _ := strings.Cut(s, "://")
		return "", "", invalidf("store %q: unknown kind %q; use a path, sqlite:PATH or postgres://USER@HOST/DATABASE", RedactStore(s), scheme)
	case strings.HasPrefix(s, "postgres:"), strings.HasPrefix(s, "postgresql:"):
		return "", "", invalidf("store %q is not a URL: write postgres://USER@HOST:PORT/DATABASE", RedactStore(s))
	case keywordDSN().MatchString(s):
		// Not echoed: such a string may hold password=...
		return "", "", invalidf("the store is a PostgreSQL connection string of key=value words, which agentctl does not take (it would be a SQLite file of that name): " +
			"write it as a URL, postgres://USER@HOST:PORT/DATABASE?sslmode=..., with the password in PGPASSWORD or ~/.pgpass")
	default:
		return "sqlite", s, nil
	}
}

// keywordDSN matches libpq's keyword/value connection strings (host=x
// dbname=y); a path that starts so is given as sqlite:PATH.
var keywordDSN = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(host|hostaddr|port|dbname|user|password|sslmode|service|application_name|connect_timeout|options)\s*=`)
})

// secretParams are the URL parameters that hold a secret: the password,
// and the passphrase of a TLS client key.
var secretParams = []string{"password", "sslpassword"}

// dropSecrets is the raw query q without its secretParams, however they
// are written (escaped or not, valid escapes or not).
func dropSecrets(q string) string {
	var kept []string
	for _, kv := range strings.Split(q, "&") {
		k, _, _ := strings.Cut(kv, "=")
		if uk, err := url.QueryUnescape(k); err == nil {
			k = uk
		}
		if !slices.Contains(secretParams, strings.ToLower(strings.TrimSpace(k))) {
			kept = append(kept, kv)
		}
	}
	return strings.Join(kept, "&")
}

// secretValues are the secrets the store URL s carries, as written and
// unescaped: its password and its secretParams.
func secretValues(s string) []string {
	var out []string
	add := func(v string) {
		if v != "" {
			out = append(out, v)
			if esc := url.QueryEscape(v); esc != v {
				out = append(out, esc)
			}
		}
	}
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			add(pw)
		}
	}
	_, q, _ := strings.Cut(s, "?")
	for _, kv := range strings.Split(q, "&") {
		k, v, _ := strings.Cut(kv, "=")
		if uk, err := url.QueryUnescape(k); err == nil {
			k = uk
		}
		if slices.Contains(secretParams, strings.ToLower(strings.TrimSpace(k))) {
			add(v)
			if uv, err := url.QueryUnescape(v); err == nil {
				add(uv)
			}
		}
	}
	return out
}

// RedactStore is a store URL as messages show it: without its password.
func RedactStore(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" {
		if base, q, ok := strings.Cut(s, "?"); ok {
			s = base + "?" + dropSecrets(q)
		}
		if i := strings.Index(s, "://"); i >= 0 {
			if j := strings.LastIndex(s, "@"); j > i {
				return s[:i+3] + "…" + s[j:]
			}
		}
		return s
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.User(u.User.Username())
		}
	}
	if u.RawQuery != "" {
		u.RawQuery = dropSecrets(u.RawQuery)
	}
	return u.String()
}

// rebindDollar turns ? and ?N placeholders into $N (PostgreSQL), outside
// quoted literals and identifiers. The store's statements are constants
// (or built from constants), so the answers are remembered.
func rebindDollar(q string) string {
	if v, ok := rebound.Load(q); ok {
		return v.(string)
	}
	var b strings.Builder
	b.Grow(len(q) + 8)
	n := 0
	var quote byte
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
			b.WriteByte(c)
		case c == '\'' || c == '"':
			quote = c
			b.WriteByte(c)
		case c == '?':
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			if j > i+1 {
				b.WriteString("$" + q[i+1:j])
				i = j - 1
			} else {
				n++
				b.WriteString("$" + strconv.Itoa(n))
			}
		default:
			b.WriteByte(c)
		}
	}
	out := b.String()
	rebound.Store(q, out)
	return out
}

var rebound sync.Map // statement → rebound statement

// Explain is err as a command reports it: an error of a store that could
// not be reached names the store (without its password) and matches
// [ErrUnavailable], wherever in the command it came from.
func (s *Store) Explain(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	if s.db.be.isUnavailable(err) {
		return storeError(s.db.be, err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && !strings.Contains(err.Error(), s.db.be.Name()) {
		return storeError(s.db.be, err) // the server's own words: say which store
	}
	return err
}

// storeError names the database in an error from it; one of a database
// that could not be reached also matches [ErrUnavailable].
func storeError(be backend, err error) error {
	if be.Kind() == "sqlite" && isBusy(err) {
		return fmt.Errorf("%s store %s stayed locked by another agentctl longer than agentctl waits (a gc compacting it, a store migrate into it): %w (%w); nothing was changed: try again once that is done",
			be.Kind(), be.Name(), err, ErrUnavailable)
	}
	if be.isUnavailable(err) {
		return fmt.Errorf("%s store %s: %w (%w)", be.Kind(), be.Name(), err, ErrUnavailable)
	}
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "25006" {
		return fmt.Errorf("%s store %s: %w; the database takes no changes (a standby, or default_transaction_read_only): point the store at the primary", be.Kind(), be.Name(), err)
	}
	return fmt.Errorf("%s store %s: %w", be.Kind(), be.Name(), err)
}

// WatchEvents returns a channel that receives soon after instance id
// records an event, on any host, and a function that ends the watch. A
// receive means "read again", not "there is one": the channel also
// receives after the store reconnects, when events may have gone
// unannounced. On PostgreSQL it is LISTEN/NOTIFY; on SQLite it receives
// after any commit to the store (SQLite does not say what changed; at most
// once per [SQLiteWatchInterval]). A follower reads after it begins the
// watch (what came before is not announced), and polls as well, in case
// a wake is lost.
func (s *Store) WatchEvents(ctx context.Context, id string) (<-chan struct{}, func()) {
	return s.db.be.watch(ctx, chanEvents, id)
}

// WatchRecord is [Store.WatchEvents] for changes of instance id's record
// ([Store.UpdateInstance]: its mounts, a restart asked for).
func (s *Store) WatchRecord(ctx context.Context, id string) (<-chan struct{}, func()) {
	return s.db.be.watch(ctx, chanRecords, id)
}

// WatchAnswer is [Store.WatchEvents] for the answer to question qid.
func (s *Store) WatchAnswer(ctx context.Context, qid string) (<-chan struct{}, func()) {
	return s.db.be.watch(ctx, chanAnswers, qid)
}

// SQLitePath is the SQLite file u names for the state directory
// stateDir, and false when u names another kind of store.
func (u StoreURL) SQLitePath(stateDir string) (string, bool) {
	kind, where, err := parseStore(u, stateDir)
	return where, err == nil && kind == "sqlite"
}

// SameDatabase reports whether u and v name the same PostgreSQL database
// as the same user, whatever their passwords.
func (u StoreURL) SameDatabase(v StoreURL) bool {
	a, err1 := url.Parse(string(u))
	b, err2 := url.Parse(string(v))
	if err1 != nil || err2 != nil || a.Scheme == "" || !strings.HasPrefix(a.Scheme, "postgres") || !strings.HasPrefix(b.Scheme, "postgres") {
		return false
	}
	return a.Host == b.Host && a.Path == b.Path && a.User.Username() == b.User.Username()
}
