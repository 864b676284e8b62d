package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
)

// Argument validators that report usage errors.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		// tools list/lint take the instance as a flag, where the instance
		// commands take it as an argument.
		if f := cmd.Flags().Lookup("instance"); f != nil && !f.Changed && len(args) == 1 {
			ref := args[0]
			if strings.ContainsFunc(ref, func(r rune) bool {
				return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("-_.", r)
			}) {
				ref = strconv.Quote(ref)
			}
			return usageErrorf("%s takes no arguments, got %q; for an instance, use --instance %s", cmd.CommandPath(), args, ref)
		}
		return usageErrorf("%s takes no arguments, got %q", cmd.CommandPath(), args)
	}
	return nil
}

func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("%s needs %s (got %s)", cmd.CommandPath(), what, countArgs(len(args)))
		}
		return nil
	}
}

func rangeArgs(lo, hi int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			return usageErrorf("%s needs %s (got %s)", cmd.CommandPath(), what, countArgs(len(args)))
		}
		return nil
	}
}

// orDash is s, or "-" for an empty s.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// countArgs says how many arguments there are.
func countArgs(n int) string {
	if n == 1 {
		return "1 argument"
	}
	return fmt.Sprintf("%d arguments", n)
}
