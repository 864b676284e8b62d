//go:build libs

package main

// Built with -tags libs (BenchmarkServeStartup's fourth floor), the
// program also links the libraries agentctl links besides go-sdk and the
// SQLite driver: the least a program built with the project's libraries
// that serves an instance from its durable record pays before its first
// answer.
import _ "github.com/agentctl/agentctl/testdata/minimallibs"
