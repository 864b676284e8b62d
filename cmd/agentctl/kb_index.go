package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/agentctl/agentctl/mcpserver/kb"
	"github.com/spf13/cobra"
)

// KBIndexOptions are the inputs of `kb index`.
type KBIndexOptions struct {
	IO       *IOStreams
	StateDir func() string

	Dir      string
	MaxBytes int64 // --max; 0: the default
	Check    bool  // --check
	Output   string
}

// NewCmdKBIndex is `agentctl kb index DIR`; runF replaces [kbIndexRun] in tests.
func NewCmdKBIndex(f *Factory, runF func(context.Context, *KBIndexOptions) error) *cobra.Command {
	opts := &KBIndexOptions{IO: f.IOStreams, StateDir: func() string { return f.Config.StateDir() }}
	cmd := &cobra.Command{
		Use:   "index DIR",
		Short: "Build or bring up to date a knowledge base's search index",
		Long: `Build the search index of the knowledge-base folder DIR, or make sure it is up to
date: every file is read again and compared with what is indexed (a content hash), so
an edit that kept a file's size and times (cp -p, rsync -t) is found too; only the
files that changed are indexed again. Anything in the index's place that is not a
usable index (a folder, another file, a damaged database) is moved or copied aside,
named on stderr, and the index is rebuilt. Every
instance and process that mounts DIR uses this index; building it ahead of time
(in a CI image, say) makes their first search fast. A progress bar is shown when
stderr is a terminal.

Concepts larger than --max, files and folders this user may not read, and files
named *.md whose names no concept id can have (x.md.md, a space at an end) are not
indexed: kb index counts them (too_large, unreadable, misnamed) and names the first
few on stderr.

A damaged index database (a disk error, a copy cut short) is built again from the
folder where kb index or a search meets the damage. --check also reads every page
of the index first (PRAGMA quick_check: about 0.3 s at 10,000 concepts), to find
damage no search has met yet; in a CI image's build, say.

An index records the largest concept size it indexed (--max, as the mount
option max=); a mount with a larger max= does not take it as up to date and
brings it up to date on its first search. So give kb index the max= of the
folder's mounts (the largest, when they differ).

Processes update an index one at a time: while another process is building or
updating it, kb index waits for it (and says so on stderr after a moment).`,
		Example: `  agentctl kb index ~/notes
  agentctl kb index ./docs -o json
  agentctl kb index --max 4194304 ./handbook   # for --kb handbook=./handbook,max=4194304`,
		Args: exactArgs(1, "a knowledge-base folder"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Output); err != nil {
				return err
			}
			opts.Dir = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return kbIndexRun(cmd.Context(), opts)
		},
	}
	addMaxFlag(cmd, &opts.MaxBytes, "index")
	cmd.Flags().BoolVar(&opts.Check, "check", false, "also read every page of the index database, and build it again if damaged")
	addOutputFlag(cmd, &opts.Output, opts.IO)
	return cmd
}

func kbIndexRun(ctx context.Context, opts *KBIndexOptions) error {
	base, err := openKB(opts.Dir, opts.StateDir(), kb.Options{MaxBytes: opts.MaxBytes})
	if err != nil {
		return err
	}
	defer base.Close()
	iopts := kb.IndexOptions{Check: opts.Check, Waiting: func() {
		opts.IO.Narrate("Waiting for another process that is building or updating the search index of %s (%s); Ctrl-C stops waiting.", opts.Dir, base.IndexFile())
	}}
	var bar *progressBar
	if opts.IO.stderrTTY {
		bar = &progressBar{w: opts.IO.ErrOut, label: "indexing " + opts.Dir}
		iopts.Progress = bar.update
	}
	st, err := base.Index(ctx, iopts)
	// The bar's line ends before anything else is written: on a terminal
	// stdout and stderr share it.
	bar.finish()
	if err != nil {
		return err
	}
	if st.Damaged != "" {
		opts.IO.Narrate("The search index %s was damaged (%s); it was built again from the folder.", st.Path, st.Damaged)
	}
	if st.TooLarge > 0 {
		opts.IO.Narrate("Warning: %s larger than %d bytes (--max, the mount option max=) not indexed, so searches do not find them: %s.",
			countOf(st.TooLarge, "concept is", "concepts are"), st.MaxBytes, namedPaths(st.TooLargePaths, st.TooLarge))
	}
	if st.Unreadable > 0 {
		opts.IO.Narrate("Warning: %s this user may not read (their permissions), so not indexed: %s.",
			countOf(st.Unreadable, "file or folder", "files or folders"), namedPaths(st.UnreadablePaths, st.Unreadable))
	}
	if st.Misnamed > 0 {
		quoted := make([]string, len(st.MisnamedPaths))
		for i, p := range st.MisnamedPaths {
			quoted[i] = strconv.Quote(p) // odd names, spaces at an end among them
		}
		const why = "(a name that starts or ends with a space, is not in Unicode NFC, has a control character or a backslash, or ends in .md.md)"
		if st.Misnamed == 1 {
			opts.IO.Narrate("Warning: 1 file named *.md is not a concept, since no concept id names it %s: %s. Rename it to make it a concept.", why, quoted[0])
		} else {
			opts.IO.Narrate("Warning: %d files named *.md are not concepts, since no concept id names them %s: %s. Rename them to make them concepts.", st.Misnamed, why, namedPaths(quoted, st.Misnamed))
		}
	}
	if opts.Output == formatJSON {
		return opts.IO.PrintJSON(st)
	}
	return opts.IO.PrintFields([][2]string{
		{"concepts", strconv.Itoa(st.Concepts)},
		{"read", strconv.Itoa(st.Read)},
		{"removed", strconv.Itoa(st.Removed)},
		{"max_bytes", strconv.FormatInt(st.MaxBytes, 10)},
		{"too_large", strconv.Itoa(st.TooLarge)},
		{"unreadable", strconv.Itoa(st.Unreadable)},
		{"misnamed", strconv.Itoa(st.Misnamed)},
		{"path", st.Path},
	})
}

// countOf is "1 concept is" or "3 concepts are".
func countOf(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// namedPaths lists paths, the first of n, saying how many more there are.
func namedPaths(paths []string, n int) string {
	shown := make([]string, len(paths))
	for i, p := range paths {
		// A name with a character a terminal would act on or hide, or
		// spaces at an end, is shown quoted.
		shown[i] = p
		if strings.IndexFunc(p, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 || strings.TrimSpace(p) != p {
			shown[i] = strconv.Quote(p)
		}
	}
	s := strings.Join(shown, ", ")
	if more := n - len(paths); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// progressBar draws "label [=====     ] done/total" on one terminal line,
// at most every 100ms.
type progressBar struct {
	w      io.Writer
	label  string
	last   time.Time
	drawn  bool
	latest [2]int
}

func (p *progressBar) update(done, total int) {
	p.latest = [2]int{done, total}
	if total == 0 || done < total && time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	const width = 30
	fill := width * done / total
	fmt.Fprintf(p.w, "\r%s [%s%s] %d/%d", p.label, strings.Repeat("=", fill), strings.Repeat(" ", width-fill), done, total)
	p.drawn = true
}

// finish ends the bar's line, if it drew one; nil is no bar.
func (p *progressBar) finish() {
	if p != nil && p.drawn {
		fmt.Fprintln(p.w)
	}
}
