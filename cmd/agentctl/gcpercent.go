package main

import "runtime/debug"

// longRunningGCPercent is the garbage collector's target (GOGC) of
// agentctl's long-running processes, serve and mcp serve, unless GOGC sets
// another. go-sdk decodes every MCP message with a new JSON decoder and its
// own buffer (≈ 0.4–0.9 MB of short-lived allocations per request over
// streamable HTTP) against a live heap of a few MB, so at Go's default of
// 100 the collector ran every few requests and took about a third of the
// daemon's CPU, more than a smaller program's since each cycle also scans
// this binary's larger globals. At 200 the heap may grow to three times
// what is live (at least 8 MB) before a collection, instead of two.
const longRunningGCPercent = 200

// tuneGC sets [longRunningGCPercent] for a long-running command, unless
// the GOGC environment variable (read through getenv; nil reads none) set
// the target, which Go's runtime has applied. It returns what puts the
// target back, for the command's end: tests run commands in their own
// process.
func tuneGC(getenv func(string) string) (restore func()) {
	if getenv != nil && getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(longRunningGCPercent)
	return func() { debug.SetGCPercent(old) }
}
