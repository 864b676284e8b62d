package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/mcpserver/kb"
	"github.com/spf13/cobra"
)

// KBSearchOptions are the inputs of `kb search`.
type KBSearchOptions struct {
	IO       *IOStreams
	StateDir func() string
	// RefreshInterval: see [Config.KBRefreshInterval].
	RefreshInterval func() (time.Duration, error)

	Dir      string
	Query    string
	Limit    int
	MaxBytes int64 // --max; 0: the default
	Output   string
}

// NewCmdKBSearch is `agentctl kb search DIR QUERY`; runF replaces [kbSearchRun] in tests.
func NewCmdKBSearch(f *Factory, runF func(context.Context, *KBSearchOptions) error) *cobra.Command {
	opts := &KBSearchOptions{IO: f.IOStreams, StateDir: func() string { return f.Config.StateDir() },
		RefreshInterval: func() (time.Duration, error) { return f.Config.KBRefreshInterval() }}
	cmd := &cobra.Command{
		Use:   "search DIR QUERY...",
		Short: "Search a knowledge base as its instances' concept_search does",
		Long: fmt.Sprintf(`Search the knowledge-base folder DIR for QUERY (the words after DIR), ranked as
the concept_search tool ranks them, through the same shared index. The index is
built first if there is none, and brought up to date first if no process has done
so within kb_refresh_interval (see 'agentctl kb index'), or did with a smaller
--max (the mount option max=) than this search's.

QUERY is words, and nothing else. A word is a run of letters and digits (case and
accents do not matter; longer than 64 bytes, it is left out). A concept matches if
it has any of the words, in its title or its text, stemmed (deploying finds
deploy); it ranks higher the more of them, and the rarer, it has, and a word in
its title counts 3 times. There are no operators: quotes, *, ^, :, parentheses
and AND, OR, NOT and NEAR are plain text ("NOT" is the word "not"). A query of
more than %d different words is searched for its %d rarest: words no concept has
are left out first, as they change nothing; the others left out are named on
stderr (in the JSON, "ignored"). A query of more than %d different words, or of
no words at all, is refused.

SCORE is the concept's BM25 for the whole query (FTS5's, higher is better),
rounded to 4 significant digits; results are ordered by it, equal scores by id.
It is the one score of a search: concept_search reports the same results, scores
and order for the same query over the same folder, however either is answered
(an index built in one go or kept up to date, stale or rebuilt, any --limit: the
first N results of a larger --limit are those of --limit N). Scores compare only
within one search.

A title or snippet is shown with its control characters (escape sequences, CR,
BEL, bidirectional controls) written as escapes (\x1b), so that none acts on
the terminal; -o json keeps them exact.

A query word that starts with "-" is taken for a flag: put -- before the query.`, kb.MaxQueryTerms, kb.MaxQueryTerms, kb.MaxQueryWords),
		Example: `  agentctl kb search ~/notes deploy rollback
  agentctl kb search ./docs "rate limits" --limit 3 -o json | jq -r '.results[].id'
  agentctl kb search --max 4194304 ./handbook onboarding   # as --kb handbook=./handbook,max=4194304
  agentctl kb search ./docs -- -race flag`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageErrorf("%s needs a knowledge-base folder and a query (got %s)", cmd.CommandPath(), countArgs(len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Output); err != nil {
				return err
			}
			if opts.Limit < 1 || opts.Limit > kb.MaxSearchLimit {
				return usageErrorf("invalid --limit %d: give 1 to %d", opts.Limit, kb.MaxSearchLimit)
			}
			opts.Dir, opts.Query = args[0], strings.Join(args[1:], " ")
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return kbSearchRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().IntVar(&opts.Limit, "limit", 10, "how many results at most (1 to 50)")
	addMaxFlag(cmd, &opts.MaxBytes, "search")
	addOutputFlag(cmd, &opts.Output, opts.IO)
	return cmd
}

func kbSearchRun(ctx context.Context, opts *KBSearchOptions) error {
	every, err := opts.RefreshInterval()
	if err != nil {
		return err
	}
	base, err := openKB(opts.Dir, opts.StateDir(), kb.Options{RefreshInterval: every, MaxBytes: opts.MaxBytes})
	if err != nil {
		return err
	}
	defer base.Close()
	// One search and out: the index is brought up to date first, not in
	// the background, when it is older than the refresh interval.
	if err := base.Refresh(ctx); err != nil {
		return err
	}
	out, err := base.Search(ctx, opts.Query, opts.Limit)
	if errors.Is(err, kb.ErrInvalidRequest) {
		return usageErrorf("%v", err)
	}
	if err != nil {
		return err
	}
	if len(out.Ignored) > 0 && opts.Output != formatJSON {
		opts.IO.Narrate("Note: the query has more than %d different words; searched for the %d rarest, not for: %s.",
			kb.MaxQueryTerms, kb.MaxQueryTerms, strings.Join(out.Ignored, ", "))
	}
	if opts.Output == formatJSON {
		return opts.IO.PrintJSON(out)
	}
	rows := make([][]string, len(out.Results))
	for i, r := range out.Results {
		// The score as reported (4 significant digits), the digits the
		// JSON has. Title and snippet are the files' text: an escape
		// sequence in them is shown, not acted on by the terminal.
		rows[i] = []string{r.ID, orDash(TerminalText(r.Title)), strconv.FormatFloat(r.Score, 'g', -1, 64), TerminalText(r.Snippet)}
	}
	return opts.IO.PrintTable([]string{"ID", "TITLE", "SCORE", "SNIPPET"}, rows)
}
