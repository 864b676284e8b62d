package main

import (
	"cmp"
	"context"
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
Answer one with ` + "`agentctl instance answer INSTANCE QUESTION TEXT`" + `, from any host.`,
		Example: `  agentctl instance questions
  agentctl instance questions fix-login --all
  agentctl instance questions -o json | jq -r '.[] | "\(.instance_id) \(.id) \(.question)"'`,
		Args:              rangeArgs(0, 1, "an instance id, id prefix or label"),
		ValidArgsFunction: completeInstances(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Output); err != nil {
				return err
			}
			if len(args) == 1 {
				opts.Instance = args[0]
			} else if opts.All {
				return usageErrorf("--all lists one instance's questions; name the instance (agentctl instance questions INSTANCE --all)")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return instanceQuestionsRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.All, "all", false, "include answered, expired and cancelled questions")
	addOutputFlag(cmd, &opts.Output)
	return cmd
}

func instanceQuestionsRun(ctx context.Context, opts *InstanceQuestionsOptions) error {
	if opts.Instance == "" {
		return inboxRun(ctx, opts)
	}
	return withInstance(ctx, opts.Store, opts.Instance, func(st *instance.Store, r *instance.Record) error {
		qs, err := st.Questions(ctx, r.ID, opts.All)
		if err != nil {
			return err
		}
		if opts.Output == formatJSON {
			return opts.IO.PrintJSON(qs)
		}
		rows := make([][]string, len(qs))
		for i, q := range qs {
			rows[i] = []string{q.ID, q.Status, q.AskedAt.Format(time.RFC3339), q.Text, strings.Join(q.Choices, " | "), q.Answer}
		}
		return opts.IO.PrintTable([]string{"ID", "STATUS", "ASKED", "QUESTION", "CHOICES", "ANSWER"}, rows)
	})
}

// inboxRun is `instance questions` without an instance: every open
// question in the store, oldest first.
func inboxRun(ctx context.Context, opts *InstanceQuestionsOptions) error {
	return withStore(ctx, opts.Store, func(st *instance.Store) error {
		qs, err := st.Inbox(ctx, 0)
		if err != nil {
			return err
		}
		if opts.Output == formatJSON {
			return opts.IO.PrintJSON(qs)
		}
		hosts := st.Kind() != "sqlite"
		head := []string{"INSTANCE", "ID", "ASKED", "QUESTION", "CHOICES"}
		if hosts {
			head = []string{"INSTANCE", "HOST", "ID", "ASKED", "QUESTION", "CHOICES"}
		}
		rows := make([][]string, len(qs))
		for i, q := range qs {
			rows[i] = []string{cmp.Or(q.InstanceName, q.InstanceID)}
			if hosts {
				rows[i] = append(rows[i], orDash(q.Host))
			}
			rows[i] = append(rows[i], q.ID, q.AskedAt.Format(time.RFC3339), q.Text, strings.Join(q.Choices, " | "))
		}
		return opts.IO.PrintTable(head, rows)
	})
}
