package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/spf13/cobra"
)

// InstanceQuestionsOptions are the inputs of `instance questions`.
type InstanceQuestionsOptions struct {
	IO    *IOStreams
	Store storeOpener

	Instance string
	All      bool
	Output   string
	Quiet    bool
	// Wait waits for an open question before listing (--wait).
	Wait bool
	// Timeout ends --wait with exit 5 when no question is open by then
	// (0: wait until interrupted).
	Timeout time.Duration
	// Poll is how often --wait looks; 0 is [instance.DefaultPollInterval].
	Poll time.Duration
}

// NewCmdInstanceQuestions is `agentctl instance questions`; runF replaces
// [instanceQuestionsRun] in tests.
func NewCmdInstanceQuestions(f *Factory, runF func(context.Context, *InstanceQuestionsOptions) error) *cobra.Command {
	opts := &InstanceQuestionsOptions{IO: f.IOStreams, Store: f.Store}
	cmd := &cobra.Command{
		Use:   "questions [INSTANCE]",
		Short: "List the questions waiting for an answer: an instance's, or every instance's",
		Long: `List the questions an agent asked with ask_user_question that wait for an
answer, oldest first. With an instance, that instance's (--all: its answered,
expired and cancelled ones too). Without one, every open question in the
store, of every instance and, in a store that many hosts share
(--store postgres://...), of every host: the inbox of the person on call.
Answer one with ` + "`agentctl instance answer INSTANCE QUESTION TEXT`" + `, from any host.

On a terminal the table shows the question, its choices and its id, wrapping
long text to the terminal's width; the instance is named by its label, else by
the shortest prefix of its id that commands take. -o wide adds every column
whole (ASKED, ANSWER). Piped, the output is tab-separated values without a
header: ID, STATUS, ASKED, QUESTION, CHOICES, ANSWER for one instance, and
INSTANCE (label, else the whole id), [HOST,] ID, ASKED, QUESTION, CHOICES for
the inbox. -q prints the question ids alone, one a line; the inbox's -o json
names each question's instance ("instance_id"), for a script that answers them.
The agent's text is shown with its control characters (escape sequences, CR,
BEL, bidirectional controls) written as escapes (\x1b), so that none acts on
the terminal; -o json keeps it exact.

--wait waits until there is an open question (the instance's, or, without one,
any instance's), then lists as without it: a script, or a person, that starts a
headless run in the background waits so for the agent to ask. If the instance is
deleted meanwhile, it ends with exit 3; with --timeout D, when no question is
open after D, it ends with exit 5 (see 'agentctl help exit-codes').`,
		Example: `  agentctl instance questions
  agentctl instance questions fix-login --all
  agentctl instance questions fix-login -q
  agentctl instance questions fix-login --wait
  agentctl instance questions --wait --timeout 10m -o json
  agentctl instance questions --jq '.[] | "\(.instance_id) \(.id) \(.question)"'`,
		Args:              rangeArgs(0, 1, "an instance id, id prefix or label"),
		ValidArgsFunction: completeInstances(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkQuiet(opts.Quiet, opts.Output); err != nil {
				return err
			}
			if len(args) == 1 {
				opts.Instance = args[0]
			} else if opts.All {
				return usageErrorf("--all lists one instance's questions; name the instance (agentctl instance questions INSTANCE --all)")
			}
			switch {
			case opts.Timeout < 0:
				return usageErrorf("invalid --timeout %s: use a positive duration, or 0 to wait until interrupted", opts.Timeout)
			case cmd.Flags().Changed("timeout") && !opts.Wait:
				return usageErrorf("--timeout bounds --wait: add --wait, or leave --timeout out")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return instanceQuestionsRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.All, "all", false, "include answered, expired and cancelled questions")
	cmd.Flags().BoolVar(&opts.Wait, "wait", false, "wait until a question is open, then list")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 0, "with --wait, give up after this long, exit 5 (0: wait until interrupted)")
	addOutputFlag(cmd, &opts.Output, opts.IO, formatWide)
	addQuietFlag(cmd, &opts.Quiet, "question ids")
	return cmd
}

func instanceQuestionsRun(ctx context.Context, opts *InstanceQuestionsOptions) error {
	if opts.Instance == "" {
		return inboxRun(ctx, opts)
	}
	return withInstance(ctx, opts.Store, opts.Instance, func(st *instance.Store, r *instance.Record) error {
		if opts.Wait {
			err := waitForQuestion(ctx, opts.Poll, opts.Timeout, "for instance "+r.ID, narrateOutage(opts.IO, st), func(ctx context.Context) (int, error) { return openQuestionCount(ctx, st, r.ID) })
			if err != nil {
				return err
			}
		}
		qs, err := st.Questions(ctx, r.ID, opts.All)
		if err != nil {
			return err
		}
		switch {
		case opts.Quiet:
			return printQuestionIDs(opts.IO, len(qs), func(i int) string { return qs[i].ID })
		case opts.Output == formatJSON:
			return opts.IO.PrintJSON(qs)
		}
		rows := make([][]string, len(qs))
		for i, q := range qs {
			rows[i] = []string{q.ID, q.Status, q.AskedAt.Format(time.RFC3339), TerminalLines(q.Text), displayChoices(q.Choices), TerminalLines(q.Answer)}
		}
		if !opts.IO.IsStdoutTTY() {
			return opts.IO.PrintTSV(rows)
		}
		return opts.IO.DrawTable([]tableColumn{
			{header: "ID"}, {header: "STATUS"}, {header: "ASKED", hide: 2},
			{header: "QUESTION", wrap: true}, {header: "CHOICES", wrap: true}, {header: "ANSWER", hide: 1, wrap: true},
		}, rows, opts.Output == formatWide)
	})
}

// openQuestionCount counts instance id's open questions, for --wait; its
// error says the instance was deleted meanwhile (a deleted instance has no
// questions, and will ask none).
func openQuestionCount(ctx context.Context, st *instance.Store, id string) (int, error) {
	n, err := st.OpenQuestions(ctx, id)
	if err != nil || n > 0 {
		return n, err
	}
	if _, err := st.Get(ctx, id); errors.Is(err, instance.ErrNotFound) {
		return 0, deletedMeanwhile(id, "it will ask no question")
	}
	return 0, nil
}

// errNoQuestion is the cause of --wait's context when --timeout passes.
var errNoQuestion = errors.New("no question within the timeout")

// waitForQuestion calls count every poll (default
// [instance.DefaultPollInterval]) until it counts an open question, fails,
// or ctx ends; after timeout (when above 0) it fails with exit 5, saying
// where (such as "for instance ID") no question was open.
func waitForQuestion(ctx context.Context, poll, timeout time.Duration, where string, outage func(error), count func(context.Context) (int, error)) error {
	if poll <= 0 {
		poll = instance.DefaultPollInterval
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errNoQuestion)
		defer cancel()
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	down := false // the store did not answer the last count
	for {
		n, err := count(ctx)
		if n > 0 {
			return nil
		}
		if errors.Is(err, instance.ErrUnavailable) && ctx.Err() == nil {
			// Waited out, as instance wait does (a PostgreSQL restart).
			if !down {
				outage(err)
			}
			down, err = true, nil
		} else if err == nil && down {
			outage(nil)
			down = false
		}
		if err == nil {
			select {
			case <-ctx.Done():
				err = context.Cause(ctx)
			case <-t.C:
				continue
			}
		}
		if errors.Is(context.Cause(ctx), errNoQuestion) {
			return &exitError{code: ExitTimeout, err: fmt.Errorf("no question was open %s within %s", where, timeout)}
		}
		return err
	}
}

// displayChoices is a question's choices as the table and TSV show them:
// each made harmless to print ([TerminalLines]: the text comes from the
// model, and a choice "yes\x1b[1A" must not look like "yes"), joined
// with " | ". -o json keeps them exact.
func displayChoices(choices []string) string {
	shown := make([]string, len(choices))
	for i, c := range choices {
		shown[i] = TerminalLines(c)
	}
	return strings.Join(shown, " | ")
}

// printQuestionIDs prints n question ids, one a line (-q).
func printQuestionIDs(io *IOStreams, n int, id func(int) string) error {
	var b strings.Builder
	for i := range n {
		b.WriteString(id(i))
		b.WriteByte('\n')
	}
	_, err := io.Out.Write([]byte(b.String()))
	return err
}

// inboxRun is `instance questions` without an instance: every open
// question in the store, oldest first. A state directory without a
// database yet (no instance was ever created) has none: the list is
// empty, as `instance list`'s is, and --wait waits for the database too.
func inboxRun(ctx context.Context, opts *InstanceQuestionsOptions) (err error) {
	var st *instance.Store // nil while there is no database
	defer func() {
		if st != nil {
			err = st.Explain(err)
			st.Close()
		}
	}()
	open := func(ctx context.Context) error {
		if st != nil {
			return nil
		}
		s, err := opts.Store(ctx, false)
		if _, none := errors.AsType[*noStateError](err); none {
			return nil
		}
		st = s
		return err
	}
	if err := open(ctx); err != nil {
		return err
	}
	if opts.Wait {
		outage := func(err error) {
			if st != nil {
				narrateOutage(opts.IO, st)(err)
			}
		}
		err := waitForQuestion(ctx, opts.Poll, opts.Timeout, "in the store (any instance)", outage, func(ctx context.Context) (int, error) {
			if err := open(ctx); err != nil || st == nil {
				return 0, err
			}
			waiting, err := st.Inbox(ctx, 1)
			return len(waiting), err
		})
		if err != nil {
			return err
		}
	}
	qs := []*instance.InboxQuestion{}
	if st != nil {
		if qs, err = st.Inbox(ctx, 0); err != nil {
			return err
		}
	}
	switch {
	case opts.Quiet:
		return printQuestionIDs(opts.IO, len(qs), func(i int) string { return qs[i].ID })
	case opts.Output == formatJSON:
		return opts.IO.PrintJSON(qs)
	}
	hosts := st != nil && st.Kind() != "sqlite"
	tty, wide := opts.IO.IsStdoutTTY(), opts.Output == formatWide
	var short map[string]string
	if tty && !wide && st != nil {
		ids := make([]string, 0, len(qs))
		for _, q := range qs {
			if q.InstanceName == "" {
				ids = append(ids, q.InstanceID)
			}
		}
		short = shortIDs(ctx, st, ids)
	}
	rows := make([][]string, len(qs))
	for i, q := range qs {
		rows[i] = []string{cmp.Or(q.InstanceName, short[q.InstanceID], q.InstanceID)}
		if hosts {
			rows[i] = append(rows[i], orDash(q.Host))
		}
		rows[i] = append(rows[i], q.ID, q.AskedAt.Format(time.RFC3339), TerminalLines(q.Text), displayChoices(q.Choices))
	}
	if !tty {
		return opts.IO.PrintTSV(rows)
	}
	cols := []tableColumn{{header: "INSTANCE"}, {header: "HOST", hide: 1}, {header: "ID"}, {header: "ASKED", hide: 2},
		{header: "QUESTION", wrap: true}, {header: "CHOICES", wrap: true}}
	if !hosts {
		cols = slices.Delete(cols, 1, 2)
	}
	return opts.IO.DrawTable(cols, rows, wide)
}
