package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"

	"github.com/agentctl/agentctl/mcpserver/kb"
	"github.com/spf13/cobra"
)

// NewCmdKB is `agentctl kb`, the group of the knowledge-base commands.
func NewCmdKB(f *Factory, line cmdLine) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kb",
		Short: "Knowledge bases: their shared search index, from the shell",
		Long: `Knowledge bases are folders of Markdown files that instances mount. Their search
index is a database per folder under the state directory (kb/), shared by every
instance and process that mounts the folder and kept up to date with it.`,
	}
	line.add(cmd,
		sub{[]string{"index"}, func(cmdLine) *cobra.Command { return NewCmdKBIndex(f, nil) }},
		sub{[]string{"search"}, func(cmdLine) *cobra.Command { return NewCmdKBSearch(f, nil) }})
	return cmd
}

// kbIndexDir is where the search indexes live: <state directory>/kb.
func kbIndexDir(stateDir string) string { return filepath.Join(stateDir, "kb") }

// openKB opens the folder dir as a knowledge base with the shared index
// under stateDir. A folder that is missing, or not a folder, is reported as
// not found (exit 3); an empty dir is a usage error (exit 2), not the
// current directory: a script's unset variable would index wherever it runs.
func openKB(dir, stateDir string, opts kb.Options) (*kb.Base, error) {
	if dir == "" {
		return nil, usageErrorf("the knowledge-base folder is empty; pass the folder of Markdown files (. for this one)")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	opts.IndexDir = kbIndexDir(stateDir)
	base, err := kb.Open(filepath.Base(abs), abs, opts)
	if err != nil {
		return nil, kbOpenError(dir, err)
	}
	return base, nil
}

// kbOpenError says why the knowledge-base folder dir did not open, with
// its exit code: not there (3), not readable (4), else not a folder of
// Markdown files (3).
func kbOpenError(dir string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &exitError{code: ExitNotFound, err: fmt.Errorf("knowledge base folder %s does not exist; pass the folder of Markdown files an instance mounts", dir)}
	case errors.Is(err, fs.ErrPermission):
		return &exitError{code: ExitInvalid, err: fmt.Errorf("%w; you may not read the knowledge base folder %s: run as a user who may, or give yours read access (chmod, setfacl)", err, dir)}
	}
	return &exitError{code: ExitNotFound, err: fmt.Errorf("%w; pass the folder of Markdown files an instance mounts", err)}
}

// addMaxFlag adds --max BYTES to a kb command: the largest concept it
// indexes and searches, as the mount option max= says it for a mount of
// the folder (--kb NAME=DIR,max=BYTES, max_bytes in [[kbs]]). An index
// records the limit it was brought up to date with, and a mount with a
// larger one does not take it as fresh; so a prebuilt index needs the max=
// of the mounts it is built for.
func addMaxFlag(cmd *cobra.Command, target *int64, verb string) {
	cmd.Flags().Var(&maxBytesValue{target}, "max", fmt.Sprintf("%s concepts up to BYTES, as the mount option max= (give the max= of the folder's mounts; default %d)", verb, kb.DefaultMaxBytes))
}

// maxBytesValue is the value of --max: 0 until given.
type maxBytesValue struct{ n *int64 }

func (v *maxBytesValue) String() string {
	if v.n == nil || *v.n == 0 {
		return ""
	}
	return strconv.FormatInt(*v.n, 10)
}

func (v *maxBytesValue) Type() string { return "BYTES" }

// Set parses BYTES as the mount option max= does, so that --max and max=
// never take different values.
func (v *maxBytesValue) Set(s string) error {
	n, ok := parseMaxBytes(s)
	if !ok {
		return errors.New("give a positive number of bytes, at most 1 GiB (1073741824), as the mount option max= takes")
	}
	*v.n = n
	return nil
}
