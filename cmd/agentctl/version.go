package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// VersionOptions are the inputs of `version`.
type VersionOptions struct {
	IO *IOStreams
}

// NewCmdVersion is `agentctl version`; runF replaces [versionRun] in tests.
func NewCmdVersion(f *Factory, runF func(*VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{IO: f.IOStreams}
	return &cobra.Command{
		Use: "version", Short: "Print agentctl's version", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return versionRun(opts)
		},
	}
}

func versionRun(opts *VersionOptions) error {
	_, err := fmt.Fprintln(opts.IO.Out, version)
	return err
}
