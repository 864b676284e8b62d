//go:build libs

package main

// Built with -tags libs (BenchmarkServeStartup's third floor), the program
// also links the libraries agentctl links besides go-sdk, and so starts as
// a program of agentctl's size does: the command line and settings
// (cobra, viper), the definitions (BurntSushi/toml), the terminal
// (lipgloss), --jq (gojq), and the two stores' drivers.
import (
	_ "github.com/BurntSushi/toml"
	_ "github.com/charmbracelet/lipgloss"
	_ "github.com/itchyny/gojq"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/viper"
	_ "modernc.org/sqlite"
)
