package httpserve

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"sync"
	"time"
)

// CachedTokens is a [TokenChecker] that remembers, for ttl, the tokens c
// accepted, so that a session's every request does not cost a look-up in
// the store (a database query, several times the cost of the call it
// guards). Only acceptances are kept, by the token's SHA-256 compared in
// constant time: a new token is asked of c at once, a wrong one every time.
// A token that stops being valid (rotated, its instance deleted) is
// refused within ttl.
func CachedTokens(c TokenChecker, ttl time.Duration) TokenChecker {
	return &tokenCache{c: c, ttl: ttl, now: time.Now, ok: map[string]cachedToken{}}
}

type tokenCache struct {
	c   TokenChecker
	ttl time.Duration
	now func() time.Time

	mu sync.RWMutex           // read-locked by every request: they do not queue
	ok map[string]cachedToken // by instance id
}

type cachedToken struct {
	hash  [sha256.Size]byte
	until time.Time
}

// maxCachedTokens bounds the cache; when full it starts again empty.
const maxCachedTokens = 4096

// CheckToken answers from the cache while an acceptance is fresh, else
// asks the checker.
func (t *tokenCache) CheckToken(ctx context.Context, instanceID, token string) (bool, error) {
	h := sha256.Sum256([]byte(token))
	now := t.now()
	t.mu.RLock()
	e, found := t.ok[instanceID]
	t.mu.RUnlock()
	if found && now.Before(e.until) && subtle.ConstantTimeCompare(e.hash[:], h[:]) == 1 {
		return true, nil
	}
	ok, err := t.c.CheckToken(ctx, instanceID, token)
	if err != nil || !ok {
		return ok, err
	}
	t.mu.Lock()
	if len(t.ok) >= maxCachedTokens {
		clear(t.ok)
	}
	t.ok[instanceID] = cachedToken{hash: h, until: now.Add(t.ttl)}
	t.mu.Unlock()
	return true, nil
}
