package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

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
// not found (exit 3).
func openKB(dir, stateDir string, opts kb.Options) (*kb.Base, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	opts.IndexDir = kbIndexDir(stateDir)
	base, err := kb.Open(filepath.Base(abs), abs, opts)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &exitError{code: ExitNotFound, err: fmt.Errorf("knowledge base folder %s does not exist; pass the folder of Markdown files an instance mounts", dir)}
	case err != nil:
		return nil, &exitError{code: ExitNotFound, err: fmt.Errorf("%w; pass the folder of Markdown files an instance mounts", err)}
	}
	return base, nil
}
