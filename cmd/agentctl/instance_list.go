package main

import (
	"bufio"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/instance"
	"github.com/spf13/cobra"
)

// InstanceListOptions are the inputs of `instance list`.
type InstanceListOptions struct {
	IO    *IOStreams
	Store storeOpener
	Now   func() time.Time

	Output string
	Quiet  bool
	Limit  int
	Agent  string
	Status string
	Since  string
	Host   string
	Here   bool
	// HostName is this host's name (--here), as the store records it.
	HostName func() string
	// Catalog tells, when --agent matches nothing, whether that agent is
	// defined at all.
	Catalog func() (*agents.Catalog, error)
}

// NewCmdInstanceList is `agentctl instance list`; runF replaces
// [instanceListRun] in tests.
func NewCmdInstanceList(f *Factory, runF func(context.Context, *InstanceListOptions) error) *cobra.Command {
	opts := &InstanceListOptions{IO: f.IOStreams, Store: f.Store, Now: f.Now, HostName: f.Config.HostName, Catalog: f.Catalog}
	statuses := instance.ProgressStatuses()
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List instances, oldest first",
		Long: `List instances, oldest first, with the number of questions each has
open (asked with ask_user_question and not yet answered; see
` + "`agentctl instance questions`" + `) and the status each last reported.

On a terminal the table always shows each instance's LABEL (--name; "-" for
none), the shortest prefix of its ID that commands take, AGENT, STATUS and
QUESTIONS, and HOST (in a store hosts share), CREATED, WORKSPACE, SERVER and
NAMESPACING as the width allows (-o wide: every column, the ids whole).
Piped, tab-separated values without a header, in an order of their own that
scripts rely on: ID (whole), LABEL, AGENT, [HOST,] NAMESPACING, SERVER,
CREATED, WORKSPACE, QUESTIONS, STATUS (the last). -q prints the ids alone,
one a line.

The filters run in the state database, so a listing costs what it prints,
however many instances the store holds. --limit keeps the most recent N of
the instances the other filters select (still printed oldest first, as
` + "`tail -n`" + ` would). -o json streams an array of instance records, each with
"open_questions" (a number) and a "status" member once the instance has
reported progress.

In a store that many hosts share (--store postgres://...), the listing is
the fleet's, with each instance's HOST: the host that holds its directory,
client files and run logs. --host NAME and --here keep one host's.`,
		Example: `  agentctl instance list
  agentctl instance list --limit 20 --agent claude-code
  agentctl instance list --status blocked --since 24h
  agentctl instance list --here --status running
  agentctl instance list -o wide
  agentctl instance list -q --status done | xargs -n1 agentctl instance delete
  agentctl instance list --jq '.[] | select(.open_questions > 0) | .id'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkQuiet(opts.Quiet, opts.Output); err != nil {
				return err
			}
			if opts.Limit < 0 {
				return usageErrorf("invalid --limit %d: use a positive number, or 0 for no limit", opts.Limit)
			}
			if opts.Status != "" && !slices.Contains(statuses, opts.Status) {
				return usageErrorf("invalid --status %q: use one of %s", opts.Status, strings.Join(statuses, ", "))
			}
			if _, err := parseSince(opts.Since, opts.Now); err != nil {
				return err
			}
			if opts.Here && opts.Host != "" {
				return usageErrorf("--here and --host both name a host; pass one of them")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return instanceListRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output, opts.IO, formatWide)
	addQuietFlag(cmd, &opts.Quiet, "instance ids")
	cmd.Flags().IntVarP(&opts.Limit, "limit", "L", 0, "show only the `N` most recent matching instances (0: all)")
	cmd.Flags().StringVar(&opts.Agent, "agent", "", "show only instances of this agent `ID`")
	cmd.Flags().StringVar(&opts.Status, "status", "", "show only instances whose latest report has this `STATUS`: "+strings.Join(statuses, ", "))
	cmd.Flags().StringVar(&opts.Since, "since", "", "show only instances created since `WHEN`: a duration ago (90m, 24h) or a date (2026-01-31, RFC 3339)")
	cmd.Flags().StringVar(&opts.Host, "host", "", "show only instances whose files are on host `NAME` (see HOST)")
	cmd.Flags().BoolVar(&opts.Here, "here", false, "show only this host's instances")
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(statuses, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("agent", completeAgentIDs(f))
	return markQuick(cmd)
}

// parseSince reads --since: a duration back from now, or a date or time.
func parseSince(s string, now func() time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now().Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, usageErrorf("invalid --since %q: use a duration ago (90m, 24h) or a date (2026-01-31, 2026-01-31T15:04, RFC 3339)", s)
}

func instanceListRun(ctx context.Context, opts *InstanceListOptions) error {
	since, err := parseSince(opts.Since, opts.Now)
	if err != nil {
		return err
	}
	lo := instance.ListOptions{Limit: opts.Limit, Agent: opts.Agent, Status: opts.Status, Since: since, Host: opts.Host}
	if opts.Here {
		lo.Host = opts.HostName()
	}
	var out listPrinter
	switch {
	case opts.Quiet:
		out = &idLister{w: bufio.NewWriter(opts.IO.Out)}
	case opts.Output == formatJSON:
		out = &jsonLister{w: opts.IO.JSONArray()}
	default:
		out = &tableLister{io: opts.IO, wide: opts.Output == formatWide}
	}
	listed := 0
	err = withStore(ctx, opts.Store, func(st *instance.Store) error {
		for l, err := range st.Records(ctx, lo) {
			// A broken record is a warning, not a failure (exit 0): the
			// list of the others is still right, and the warning says how
			// to remove it.
			if ce, ok := errors.AsType[*instance.CorruptRecordError](err); ok {
				opts.IO.Narrate("warning: %v", ce)
				continue
			}
			if err != nil {
				return err
			}
			if err := out.add(l); err != nil {
				return err
			}
			listed++
		}
		if t, ok := out.(*tableLister); ok {
			t.complete(ctx, st)
		}
		return nil
	})
	if _, ok := errors.AsType[*noStateError](err); err != nil && !ok {
		return err
	}
	if listed == 0 && opts.Agent != "" && opts.Catalog != nil {
		// A mistyped --agent lists nothing, as an agent without instances
		// does: say which it is (still exit 0: a script's empty list).
		if cat, cerr := opts.Catalog(); cerr == nil {
			if _, lerr := cat.Lookup(opts.Agent); errors.Is(lerr, agents.ErrUnknownAgent) {
				opts.IO.Narrate("warning: --agent %q: %v", opts.Agent, lerr)
			}
		}
	}
	return out.flush()
}

// listPrinter prints the instances of a listing as they come.
type listPrinter interface {
	add(*instance.Listed) error
	flush() error
}

// jsonLister streams the records as one JSON array.
type jsonLister struct{ w jsonArray }

func (j *jsonLister) add(l *instance.Listed) error {
	return j.w.Write(instance.Listed{Record: l.Redacted(), Status: l.Status, OpenQuestions: l.OpenQuestions})
}
func (j *jsonLister) flush() error { return j.w.Close() }

// idLister prints the ids alone (-q), as they come.
type idLister struct{ w *bufio.Writer }

func (q *idLister) add(l *instance.Listed) error {
	q.w.WriteString(l.ID)
	return q.w.WriteByte('\n')
}
func (q *idLister) flush() error { return q.w.Flush() }

// tableLister collects the rows: a table is fitted to its widest cell, so
// it is printed whole (the rows are small; the records are not kept).
type tableLister struct {
	io    *IOStreams
	wide  bool
	rows  []listRow
	hosts bool // a HOST column
	// short is each id's shortest unique prefix, on a terminal (not wide).
	short map[string]string
}

// listRow is what a row of the table shows of an instance.
type listRow struct {
	id, name, agent, host, namespacing, server, created, workspace, questions, status string
}

func (t *tableLister) add(l *instance.Listed) error {
	r := l.Record
	t.rows = append(t.rows, listRow{
		id: r.ID, name: orDash(r.Name), agent: r.Agent, host: orDash(r.Host),
		namespacing: string(r.Capabilities.ToolNames.Namespacing), server: r.ServerName,
		created: r.CreatedAt.Format(time.RFC3339), workspace: r.Workspace,
		questions: strconv.Itoa(l.OpenQuestions), status: orDash(l.Status),
	})
	return nil
}

// complete notes, once the listing is read, what the table needs of the
// store: whether it is shared by hosts (a store of one host's has no use
// for a HOST column) and, for a terminal, the ids' shortest unique
// prefixes.
func (t *tableLister) complete(ctx context.Context, st *instance.Store) {
	t.hosts = st.Kind() != "sqlite"
	if t.io.IsStdoutTTY() && !t.wide {
		ids := make([]string, len(t.rows))
		for i, r := range t.rows {
			ids[i] = r.id
		}
		t.short = shortIDs(ctx, st, ids)
	}
}

func (t *tableLister) flush() error {
	if !t.io.IsStdoutTTY() {
		return t.io.PrintTSV(t.pipedRows())
	}
	// A label longer than the terminal has room for wraps (at its
	// hyphens, dots and underscores first), the last thing that gives.
	cols := []tableColumn{
		{header: "LABEL", wrap: true}, {header: "ID"}, {header: "AGENT"}, {header: "HOST", hide: 1},
		{header: "STATUS"}, {header: "QUESTIONS"}, {header: "CREATED", hide: 2},
		{header: "WORKSPACE", hide: 3, wrap: true}, {header: "SERVER", hide: 4}, {header: "NAMESPACING", hide: 5},
	}
	if !t.hosts {
		cols = slices.Delete(cols, 3, 4)
	}
	rows := make([][]string, len(t.rows))
	for i, r := range t.rows {
		id := r.id
		if s, ok := t.short[id]; ok {
			id = s
		}
		row := []string{r.name, id, r.agent}
		if t.hosts {
			row = append(row, r.host)
		}
		rows[i] = append(row, r.status, r.questions, r.created, r.workspace, r.server, r.namespacing)
	}
	return t.io.DrawTable(cols, rows, t.wide)
}

// pipedRows are the rows as tab-separated values have them, for scripts:
// the columns and whole ids they always had. STATUS stays last, so that a
// script reading it as the last column reads it still; QUESTIONS (the
// count of open questions) came in just before it.
func (t *tableLister) pipedRows() [][]string {
	rows := make([][]string, len(t.rows))
	for i, r := range t.rows {
		row := []string{r.id, r.name, r.agent}
		if t.hosts {
			row = append(row, r.host)
		}
		rows[i] = append(row, r.namespacing, r.server, r.created, r.workspace, r.questions, r.status)
	}
	return rows
}
