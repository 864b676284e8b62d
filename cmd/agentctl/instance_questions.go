package main

import (
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
		Use:               "questions INSTANCE",
		Short:             "List the questions an instance is waiting on (--all: every question)",
		Args:              exactArgs(1, "an instance id, id prefix or label"),
		ValidArgsFunction: completeInstances(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Output); err != nil {
				return err
			}
			opts.Instance = args[0]
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
