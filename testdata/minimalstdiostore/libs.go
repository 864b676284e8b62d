//go:build libs

package main

// Built with -tags libs (BenchmarkServeStartup's fourth floor), the program
// also links the libraries agentctl links besides go-sdk and the SQLite
// driver, as testdata/minimalstdio's libs.go does: the least a program
// built with the project's libraries that serves an instance from its
// durable record pays before its first answer.
import (
	_ "github.com/BurntSushi/toml"
	_ "github.com/charmbracelet/lipgloss"
	_ "github.com/itchyny/gojq"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/viper"
)
