package main

import (
	"log/slog"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver/httpserve"
)

// newTokenChecker is the checker of instance tokens that `serve` and `mcp
// serve --http` use: the store, which keeps each instance's token as a hash
// ([instance.Store.CheckToken]).
func newTokenChecker(st *instance.Store, _ *slog.Logger, _ func(string) string) httpserve.TokenChecker {
	return st
}
