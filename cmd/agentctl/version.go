package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/spf13/cobra"
)

// Set at build time: go build -ldflags "-X main.version=v1.2.0 -X
// main.commit=$(git rev-parse HEAD)" (the Makefile does). The commit is
// only used when the build has no VCS information of its own.
var (
	version = "dev"
	commit  = ""
)

// buildVersion says which agentctl this is. `version -o json` prints it;
// its field names are a contract.
type buildVersion struct {
	Version  string `json:"version"`  // the release, or "dev"
	Commit   string `json:"commit"`   // the full commit hash, or ""
	Modified bool   `json:"modified"` // built from a checkout with changes
	Go       string `json:"go"`       // the Go version it was built with
}

// readBuildVersion is the version of a build: version as given with
// -ldflags, the commit and modified state from the build's VCS settings when
// it was built from a checkout (else the commit given with -ldflags), and
// the Go version.
func readBuildVersion(bi *debug.BuildInfo, version, commit string) buildVersion {
	v := buildVersion{Version: version, Commit: commit, Go: runtime.Version()}
	if v.Version == "" {
		v.Version = "dev"
	}
	if bi == nil {
		return v
	}
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the version as `agentctl version` prints it:
// agentctl v1.2.0 (commit 0123456789ab, go1.26.8), or for a build of a
// checkout with changes, agentctl dev (commit 0123456789ab, modified, go1.26.8).
func (v buildVersion) String() string {
	c := v.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if c == "" {
		c = "unknown"
	}
	parts := []string{"commit " + c}
	if v.Modified {
		parts = append(parts, "modified")
	}
	parts = append(parts, v.Go)
	return fmt.Sprintf("agentctl %s (%s)", v.Version, strings.Join(parts, ", "))
}

// thisVersion is this binary's version, read once (the root command's
// --version and `version` both want it, in every run).
var thisVersion = sync.OnceValue(func() buildVersion {
	bi, _ := debug.ReadBuildInfo()
	return readBuildVersion(bi, version, commit)
})

// VersionOptions are the inputs of `version`.
type VersionOptions struct {
	IO      *IOStreams
	Version buildVersion

	Output string
}

// NewCmdVersion is `agentctl version`; runF replaces [versionRun] in tests.
func NewCmdVersion(f *Factory, runF func(*VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{IO: f.IOStreams, Version: thisVersion()}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print agentctl's version",
		Long: `Print agentctl's version, the commit it was built from and the Go version. A build
that was not given a release version says "dev"; one built from a checkout with
uncommitted changes says "modified". -o json prints the same as an object with the
fields version, commit, modified and go.`,
		Args: noArgs,
		// The version is what one asks for to make sense of a broken
		// setup: a config file that does not load is no reason to refuse it.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			_ = f.Config.load(cmd.Flags())
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(opts.Output); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return versionRun(opts)
		},
	}
	addOutputFlag(cmd, &opts.Output, opts.IO)
	return markQuick(cmd)
}

func versionRun(opts *VersionOptions) error {
	if opts.Output == formatJSON {
		return opts.IO.PrintJSON(opts.Version)
	}
	_, err := fmt.Fprintln(opts.IO.Out, opts.Version)
	return err
}
