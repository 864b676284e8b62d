package main

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/spf13/cobra"
)

// InstanceListOptions are the inputs of `instance list`.
type InstanceListOptions struct {
	IO    *IOStreams
	Store storeOpener
	Now   func() time.Time

	Output string
	Limit  int
	Agent  string
	Status string
	Since  string
	Host   string
	Here   bool
	// HostName is this host's name (--here), as the store records it.
	HostName func() string
}

// NewCmdInstanceList is `agentctl instance list`; runF replaces
// [instanceListRun] in tests.
func NewCmdInstanceList(f *Factory, runF func(context.Context, *InstanceListOptions) error) *cobra.Command {
	opts := &InstanceListOptions{IO: f.IOStreams, Store: f.Store, Now: f.Now, HostName: f.Config.HostName}
	statuses := instance.ProgressStatuses()
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List instances, oldest first",
		Long: `List instances, oldest first, with the number of questions each has
open (asked with ask_user_question and not yet answered; see
` + "`agentctl instance questions`" + `) and the status each last reported.

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
  agentctl instance list --here --status waiting
  agentctl instance list -o json | jq -r '.[].id'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(opts.Output); err != nil {
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
	addOutputFlag(cmd, &opts.Output)
	cmd.Flags().IntVarP(&opts.Limit, "limit", "L", 0, "show only the `N` most recent matching instances (0: all)")
	cmd.Flags().StringVar(&opts.Agent, "agent", "", "show only instances of this agent `ID`")
	cmd.Flags().StringVar(&opts.Status, "status", "", "show only instances whose latest report has this `STATUS`: "+strings.Join(statuses, ", "))
	cmd.Flags().StringVar(&opts.Since, "since", "", "show only instances created since `WHEN`: a duration ago (90m, 24h) or a date (2026-01-31, RFC 3339)")
	cmd.Flags().StringVar(&opts.Host, "host", "", "show only instances whose files are on host `NAME` (see HOST)")
	cmd.Flags().BoolVar(&opts.Here, "here", false, "show only this host's instances")
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(statuses, cobra.ShellCompDirectiveNoFileComp))
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
	table := &tableLister{io: opts.IO}
	var out listPrinter = table
	if opts.Output == formatJSON {
		out = &jsonLister{w: newJSONArrayWriter(opts.IO.Out)}
	}
	err = withStore(ctx, opts.Store, func(st *instance.Store) error {
		// A store of one host's has no use for the column.
		table.hosts = st.Kind() != "sqlite"
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
		}
		return nil
	})
	if _, ok := errors.AsType[*noStateError](err); err != nil && !ok {
		return err
	}
	return out.flush()
}

// listPrinter prints the instances of a listing as they come.
type listPrinter interface {
	add(*instance.Listed) error
	flush() error
}

// jsonLister streams the records as one JSON array.
type jsonLister struct{ w *jsonArrayWriter }

func (j *jsonLister) add(l *instance.Listed) error {
	return j.w.Write(instance.Listed{Record: l.Redacted(), Status: l.Status, OpenQuestions: l.OpenQuestions})
}
func (j *jsonLister) flush() error { return j.w.Close() }

// tableLister collects the rows: a table is fitted to its widest cell, so
// it is printed whole (the rows are small; the records are not kept).
type tableLister struct {
	io    *IOStreams
	rows  [][]string
	hosts bool // a HOST column
}

func (t *tableLister) add(l *instance.Listed) error {
	r := l.Record
	row := []string{r.ID, orDash(r.Name), r.Agent}
	if t.hosts {
		row = append(row, orDash(r.Host))
	}
	t.rows = append(t.rows, append(row, string(r.Capabilities.ToolNames.Namespacing),
		r.ServerName, r.CreatedAt.Format(time.RFC3339), r.Workspace, strconv.Itoa(l.OpenQuestions), orDash(l.Status)))
	return nil
}

func (t *tableLister) flush() error {
	// STATUS stays last, so that a script reading it as the last column
	// reads it still; QUESTIONS (the count of open questions) came in
	// just before it.
	head := []string{"ID", "NAME", "AGENT"}
	if t.hosts {
		head = append(head, "HOST")
	}
	return t.io.PrintTable(append(head, "NAMESPACING", "SERVER", "CREATED", "WORKSPACE", "QUESTIONS", "STATUS"), t.rows)
}
