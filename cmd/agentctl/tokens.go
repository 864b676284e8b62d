package main

import (
	"log/slog"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver/httpserve"
)

// newTokenChecker is the checker of instance tokens that `serve` and `mcp
// serve --http` use: the store, which keeps each instance's token as a hash
// ([instance.Store.CheckToken]), behind a cache of the tokens it accepted
// for [tokenCacheTTL], so that a rotated token or a deleted instance's is
// refused within that time, as a deleted instance's sessions end within
// the daemon's poll of the store.
func newTokenChecker(st *instance.Store, _ *slog.Logger, _ func(string) string) httpserve.TokenChecker {
	return httpserve.CachedTokens(st, tokenCacheTTL)
}

// tokenCacheTTL is how long an accepted token is trusted without asking
// the store again.
const tokenCacheTTL = time.Second
