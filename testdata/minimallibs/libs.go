// Package minimallibs links the libraries agentctl links besides go-sdk
// and the SQLite driver, for the floors of BenchmarkServeStartup built
// with -tags libs (testdata/minimalstdio, testdata/minimalstdiostore):
// the command line and settings (cobra, viper), the definitions
// (BurntSushi/toml), the terminal (lipgloss), --jq (gojq), and the
// PostgreSQL store's driver.
package minimallibs

import (
	_ "github.com/BurntSushi/toml"
	_ "github.com/charmbracelet/lipgloss"
	_ "github.com/itchyny/gojq"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/viper"
)
