package httpserve

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// credentials remember which bearer token each session and each request
// in flight came with, so that a token that stops being valid (rotated,
// revoked) ends what it opened: [Handler.Tokens] lists the tokens in use,
// [Handler.Revoke] ends what one opened. Its owner checks them again
// ([Recheck]), every second for the daemon, since a token checked once when
// a session began would otherwise keep the session, and its GET stream of
// the server's messages, for as long as the client keeps it open.
type credentials struct {
	mu sync.Mutex
	// sessions are the stateful sessions by id, with the tokens that
	// opened or used them.
	sessions map[string]*sessionCreds
	// requests are the HTTP requests in flight that carry a token (a
	// session's GET stream, a stateless subscriptions/listen stream, a
	// call).
	requests map[*requestCreds]struct{}
}

type sessionCreds struct {
	tokens map[string]struct{}
	// ended is done once a token of the session was revoked; its calls
	// end with its cause.
	ended context.Context
	end   context.CancelCauseFunc
}

type requestCreds struct {
	token  string
	cancel context.CancelCauseFunc
}

// bindSession records that session id came with token.
func (c *credentials) bindSession(id, token string) *sessionCreds {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sessions == nil {
		c.sessions = map[string]*sessionCreds{}
	}
	s := c.sessions[id]
	if s == nil {
		s = &sessionCreds{tokens: map[string]struct{}{}}
		s.ended, s.end = context.WithCancelCause(context.Background())
		c.sessions[id] = s
	}
	s.tokens[token] = struct{}{}
	return s
}

// session is session id's record, nil when it has none.
func (c *credentials) session(id string) *sessionCreds {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[id]
}

// track serves r with a context Revoke can cancel when it carries a
// token; done forgets it.
func (c *credentials) track(r *http.Request) (_ *http.Request, token string, done func()) {
	token, ok := BearerToken(r)
	if !ok {
		return r, "", func() {}
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	rc := &requestCreds{token: token, cancel: cancel}
	c.mu.Lock()
	if c.requests == nil {
		c.requests = map[*requestCreds]struct{}{}
	}
	c.requests[rc] = struct{}{}
	c.mu.Unlock()
	return r.WithContext(ctx), token, func() {
		c.mu.Lock()
		delete(c.requests, rc)
		c.mu.Unlock()
		cancel(nil)
	}
}

// Tokens returns the bearer tokens the handler's open sessions and
// requests in flight came with, each once: the tokens to check again. It
// forgets the sessions that ended.
func (h *Handler) Tokens() []string {
	open := map[string]bool{}
	for ss := range h.server.Sessions() {
		open[ss.ID()] = true
	}
	c := &h.creds
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	add := func(t string) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for id, s := range c.sessions {
		if !open[id] {
			delete(c.sessions, id)
			continue
		}
		if s.ended.Err() != nil {
			continue
		}
		for t := range s.tokens {
			add(t)
		}
	}
	for r := range c.requests {
		add(r.token)
	}
	return out
}

// Revoke ends what token opened: every session that came with it is
// closed (its calls in flight answered with a JSON-RPC error, code
// [CodeClosing], saying cause; its GET stream ends) and every request in
// flight that carries it is cancelled (a stateless subscriptions/listen
// stream, a call). It reports how many sessions and requests it ended.
// Requests that carry the token later are the token checker's to refuse.
func (h *Handler) Revoke(token string, cause error) (sessions, requests int) {
	c := &h.creds
	var ids []string
	var cancels []context.CancelCauseFunc
	c.mu.Lock()
	for id, s := range c.sessions {
		if _, ok := s.tokens[token]; ok && s.ended.Err() == nil {
			s.end(cause)
			ids = append(ids, id)
		}
	}
	for r := range c.requests {
		if r.token == token {
			cancels = append(cancels, r.cancel)
		}
	}
	c.mu.Unlock()
	for _, cancel := range cancels {
		cancel(tokenRevoked{cause})
	}
	if len(ids) == 0 {
		return 0, len(cancels)
	}
	ended := map[string]bool{}
	for _, id := range ids {
		ended[id] = true
	}
	for ss := range h.server.Sessions() {
		if ended[ss.ID()] {
			// Close waits for the session's calls, which end now
			// (see bound).
			go func() { _ = ss.Close() }()
		}
	}
	return len(ids), len(cancels)
}

// sessionEnded binds an initialize to the token it came with, and says,
// for a request of a session whose token was revoked, why it ended (nil
// otherwise, and for a stateless request): see [Handler.Revoke].
func (h *Handler) sessionEnded(method string, req mcp.Request) (*sessionCreds, error) {
	ss := req.GetSession()
	if ss == nil || ss.ID() == "" {
		return nil, nil
	}
	var s *sessionCreds
	if method == "initialize" {
		if extra := req.GetExtra(); extra != nil && extra.Header != nil {
			if token, ok := BearerToken(&http.Request{Header: extra.Header}); ok {
				s = h.creds.bindSession(ss.ID(), token)
			}
		}
	} else {
		s = h.creds.session(ss.ID())
	}
	if s == nil {
		return nil, nil
	}
	if cause := context.Cause(s.ended); cause != nil {
		return s, sessionEndedError(cause)
	}
	return s, nil
}

// tokenRevoked is the cause a request [Handler.Revoke] cancelled ends
// with: a call's answer, if it can still be written, says so (see bound)
// rather than passing on the tool error its cancelled context made.
type tokenRevoked struct{ cause error }

func (e tokenRevoked) Error() string { return e.cause.Error() }
func (e tokenRevoked) Unwrap() error { return e.cause }

func sessionEndedError(cause error) error {
	return &jsonrpc.Error{Code: CodeClosing, Message: "the session was ended: " + cause.Error()}
}

// Recheck checks token as c does, but without a cache: [CachedTokens]
// asks its checker again, and forgets an acceptance the checker no
// longer gives, so that the token is refused from then on.
func Recheck(ctx context.Context, c TokenChecker, instanceID, token string) (bool, error) {
	if tc, ok := c.(*tokenCache); ok {
		return tc.recheck(ctx, instanceID, token)
	}
	return c.CheckToken(ctx, instanceID, token)
}

func (t *tokenCache) recheck(ctx context.Context, instanceID, token string) (bool, error) {
	ok, err := t.c.CheckToken(ctx, instanceID, token)
	if err != nil || ok {
		return ok, err
	}
	h := sha256.Sum256([]byte(token))
	t.mu.Lock()
	if e, found := t.ok[instanceID]; found && subtle.ConstantTimeCompare(e.hash[:], h[:]) == 1 {
		delete(t.ok, instanceID)
	}
	t.mu.Unlock()
	return false, nil
}
