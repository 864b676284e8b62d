package instance

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// TokenPrefix starts every instance token, so that one is recognisable in a
// file (and by secret scanners) and [Store.RotateToken] can find it.
const TokenPrefix = "agt_"

// tokenBytes is how much randomness a token carries.
const tokenBytes = 32

// tokenRE matches a token as [NewToken] makes it: the prefix and 32 bytes in
// unpadded base64url (43 characters).
var tokenRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(TokenPrefix + `[A-Za-z0-9_-]{43}`) })

// NewToken makes an instance's bearer token: [TokenPrefix] and 32 bytes from
// crypto/rand in unpadded base64url, safe in a URL, a header and a file.
func NewToken() (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make the instance's token: %w", err)
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// hashToken is what the store keeps of a token: its SHA-256. A token is 256
// random bits, so a fast hash is enough; a password hash (bcrypt, argon2)
// defends guessable secrets, which a token is not.
func hashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// BearerHeader is the Authorization header value that carries token.
func BearerHeader(token string) string { return "Bearer " + token }

// CheckToken reports whether token is instance id's bearer token. The
// comparison of the hashes is constant-time. An unknown instance, or one
// made before instances had tokens (give it one with `agentctl instance
// token rotate ID`), is false with no error; an error is the database's.
func (s *Store) CheckToken(ctx context.Context, instanceID, token string) (bool, error) {
	var stored []byte
	err := s.db.QueryRowContext(ctx, `SELECT hash FROM instance_tokens WHERE instance_id = ?`, instanceID).Scan(&stored)
	if errors.Is(err, sql.ErrNoRows) {
		// Compare anyway, so an unknown instance costs what a known one does.
		subtle.ConstantTimeCompare(hashToken(token), make([]byte, sha256.Size))
		return false, nil
	}
	if err != nil {
		return false, s.dbError(err)
	}
	return subtle.ConstantTimeCompare(hashToken(token), stored) == 1, nil
}

// setTokenHash stores token's hash as instance id's, replacing any.
func setTokenHash(ctx context.Context, tx *dbTx, id, token string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO instance_tokens (instance_id, hash) VALUES (?, ?)
		ON CONFLICT (instance_id) DO UPDATE SET hash = excluded.hash`, id, hashToken(token))
	return err
}

// Rotation is what [Store.RotateToken] did.
type Rotation struct {
	// Record is the instance's record.
	Record *Record
	// Token is the new token: shown once, stored nowhere but as a hash
	// and in the files listed in Rewritten.
	Token string
	// Rewritten are the instance's own files that held the old token and
	// now hold the new one (absolute paths).
	Rewritten []string
	// Stale are files `instance connect` wrote that still hold the old
	// token: connect again to update them.
	Stale []string
}

// RotateToken gives the instance ref names a new token: its hash replaces
// the old one in the store, and every file of the instance's directory that
// held a token (its client configuration, for an HTTP instance) is
// rewritten with the new one, mode 0600. The old token stops working at
// once. Files that `instance connect` wrote are not changed; they are
// listed in [Rotation.Stale]. getenv (default os.Getenv) finds those
// files, as [ConnectOptions.Getenv] does.
func (s *Store) RotateToken(ctx context.Context, ref string, getenv func(string) string) (*Rotation, error) {
	r, err := s.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	token, err := NewToken()
	if err != nil {
		return nil, err
	}
	rot := &Rotation{Record: r, Token: token}
	var rewritten map[string][]byte
	err = s.inTx(ctx, r.ID, func(tx *dbTx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM instances WHERE id = ?`, r.ID).Scan(&n); err != nil {
			return s.dbError(err)
		}
		if n == 0 {
			return deletedError(r.ID)
		}
		if err := setTokenHash(ctx, tx, r.ID, token); err != nil {
			return s.dbError(err)
		}
		// The files change before the commit, and go back if it fails.
		rewritten, err = replaceTokens(r, token)
		return err
	})
	if err != nil {
		for path, old := range rewritten {
			_ = writeAtomic(path, old, 0o600)
		}
		return nil, err
	}
	for _, f := range r.Files {
		if _, ok := rewritten[filepath.Join(r.Dir, f)]; ok {
			rot.Rewritten = append(rot.Rewritten, filepath.Join(r.Dir, f))
		}
	}
	for _, scope := range []string{ScopeWorkspace, ScopeUser} {
		path, ok := Connected(r, ConnectOptions{Scope: scope, Getenv: getenv})
		if !ok {
			continue
		}
		if data, err := os.ReadFile(path); err == nil && tokenRE().Match(data) && !strings.Contains(string(data), token) {
			rot.Stale = append(rot.Stale, path)
		}
	}
	return rot, nil
}

// replaceTokens writes token in place of every token in r's own files, and
// returns the previous contents of the files it changed, by path.
func replaceTokens(r *Record, token string) (map[string][]byte, error) {
	old := map[string][]byte{}
	for _, f := range r.Files {
		path := filepath.Join(r.Dir, f)
		data, err := os.ReadFile(path)
		if err != nil || !tokenRE().Match(data) {
			continue
		}
		next := tokenRE().ReplaceAll(data, []byte(token))
		if err := writeAtomic(path, next, 0o600); err != nil {
			return old, fmt.Errorf("rewrite %s with the new token: %w", path, err)
		}
		old[path] = data
	}
	return old, nil
}
