//go:build agentctl_testtoken

package main

import (
	"log/slog"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver/httpserve"
)

// newTokenChecker, in the binary the tests build (-tags
// agentctl_testtoken), accepts the token in AGENTCTL_TEST_TOKEN for every
// instance, until instance tokens live in the store.
func newTokenChecker(_ *instance.Store, _ *slog.Logger, getenv func(string) string) httpserve.TokenChecker {
	return httpserve.StaticToken(getenv("AGENTCTL_TEST_TOKEN"))
}
