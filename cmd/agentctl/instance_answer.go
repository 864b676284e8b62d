package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/instance/launch"
	"github.com/spf13/cobra"
)

// InstanceAnswerOptions are the inputs of `instance answer`.
type InstanceAnswerOptions struct {
	IO    *IOStreams
	Store storeOpener

	Instance string
	Question string // "": the instance's one open question
	Text     string
	// Other sends Text as free text to a question asked with choices.
	Other  bool
	Output string
}

// NewCmdInstanceAnswer is `agentctl instance answer`; runF replaces
// [instanceAnswerRun] in tests.
func NewCmdInstanceAnswer(f *Factory, runF func(context.Context, *InstanceAnswerOptions) error) *cobra.Command {
	opts := &InstanceAnswerOptions{IO: f.IOStreams, Store: f.Store}
	cmd := &cobra.Command{
		Use:   "answer INSTANCE [QUESTION-ID] TEXT",
		Short: "Answer a question that ask_user_question is waiting on",
		Long: `Answer a question that the agent asked with ask_user_question and that agentctl keeps
(every question of a headless run; see 'agentctl instance create --help'). Without
QUESTION-ID the instance must have exactly one open question. The waiting tool call
returns the answer at once. TEXT is one argument: quote an answer of several
words. An empty TEXT, or an empty QUESTION-ID given as one, is refused. The
question answered is echoed on stderr (its first line, cut at 200 characters).

A question asked with choices takes one of them (any case); another answer is
refused with the choices listed, and --other sends it anyway as free text.`,
		Example: `  agentctl instance questions fix-login
  agentctl instance answer fix-login "Use the staging database"
  agentctl instance answer fix-login 01jq3z... "yes"
  agentctl instance answer fix-login --other "neither: use a fresh database"`,
		Args:              rangeArgs(2, 3, "an instance, an optional question id, and the answer text"),
		ValidArgsFunction: completeOpenQuestions(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Output); err != nil {
				return err
			}
			opts.Instance, opts.Text = args[0], args[len(args)-1]
			if len(args) == 3 {
				if args[1] == "" {
					// Not "the one open question": an unset variable in a
					// script would answer whichever question is open.
					return usageErrorf("QUESTION-ID is empty; leave it out to answer the instance's only open question, or pass one from 'agentctl instance questions %s'", args[0])
				}
				opts.Question = args[1]
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return instanceAnswerRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Other, "other", false, "send TEXT even if it is none of the question's choices (free text)")
	addOutputFlag(cmd, &opts.Output, opts.IO)
	return cmd
}

func instanceAnswerRun(ctx context.Context, opts *InstanceAnswerOptions) error {
	err := withStore(ctx, opts.Store, func(st *instance.Store) error {
		q, err := st.AnswerRef(ctx, opts.Instance, opts.Question, opts.Text, opts.Other)
		if err != nil {
			return unquotedAnswer(err, opts)
		}
		opts.IO.Narrate("Answered question %s: %s", q.ID, questionGist(q.Text))
		if opts.Output == formatJSON {
			return opts.IO.PrintJSON(q)
		}
		_, err = fmt.Fprintln(opts.IO.Out, q.ID)
		return err
	})
	return noInstance(err, opts.Instance)
}

// unquotedAnswer is err, but for a question not found when a QUESTION-ID
// was given that does not look like one (a question id is 26 letters and
// digits): most likely an answer of several words typed unquoted
// (`answer fix-login use staging`), so the error shows the command quoted.
func unquotedAnswer(err error, opts *InstanceAnswerOptions) error {
	nf, ok := errors.AsType[*instance.NotFoundError](err)
	if !ok || nf.What != "question" || nf.Ref != opts.Question || opts.Question == "" || looksLikeQuestionID(opts.Question) {
		return err
	}
	words := []string{"agentctl", "instance", "answer", launch.ShellQuote(opts.Instance)}
	if opts.Other {
		words = append(words, "--other")
	}
	words = append(words, launch.ShellQuote(opts.Question+" "+opts.Text))
	hint := fmt.Sprintf("to answer %q, quote it: %s", opts.Question+" "+opts.Text, strings.Join(words, " "))
	if nf.Hint != "" {
		hint += "; or " + nf.Hint
	}
	return &instance.NotFoundError{What: nf.What, Ref: nf.Ref, Deleted: nf.Deleted, Hint: hint}
}

// looksLikeQuestionID reports whether s has the shape of a question id:
// 26 letters and digits.
func looksLikeQuestionID(s string) bool {
	if len(s) != 26 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// maxGist is the most of a question's text `answer` echoes, in characters.
const maxGist = 200

// questionGist is what `answer` echoes of the question it answered: its
// first line, at most [maxGist] characters, quoted, with "…" after it when
// there is more (a question may be megabytes long).
func questionGist(text string) string {
	line, _, more := strings.Cut(text, "\n")
	if utf8.RuneCountInString(line) > maxGist {
		line = string([]rune(line)[:maxGist])
		more = true
	}
	gist := strconv.Quote(line)
	if more {
		gist += "…"
	}
	return gist
}
