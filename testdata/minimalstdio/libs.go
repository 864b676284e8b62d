//go:build libs

package main

// Built with -tags libs (BenchmarkServeStartup's libraries floor), the
// program also links the libraries agentctl links besides go-sdk, and so
// starts as a program of agentctl's size does.
import (
	_ "github.com/agentctl/agentctl/testdata/minimallibs"
	_ "modernc.org/sqlite"
)
