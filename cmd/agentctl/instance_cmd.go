package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/spf13/cobra"
)

func (a *App) newInstanceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "instance",
		Aliases: []string{"instances", "i"},
		Short:   "Create, inspect and talk to agent instances",
		Long: `An instance is one provisioned agent: a durable record that snapshots its client's
capabilities, and a directory holding the client's native MCP configuration, which
starts 'agentctl mcp serve --instance ID'. Commands that take an instance accept its
id, a unique prefix of the id, or its label (--name).`,
	}
	cmd.AddCommand(a.newInstanceCreateCmd(), a.newInstanceListCmd(), a.newInstanceShowCmd(), a.newInstanceDeleteCmd(),
		a.newInstanceAnswerCmd(), a.newInstanceQuestionsCmd(), a.newInstanceEventsCmd(), a.newInstanceWaitCmd(),
		a.newInstanceMountCmd())
	return cmd
}

// withInstance opens the store and resolves ref (an id, a unique id prefix
// or a label) for one command.
func (a *App) withInstance(ctx context.Context, ref string, fn func(*instance.Store, *instance.Record) error) error {
	err := a.withStore(ctx, func(st *instance.Store) error {
		r, err := st.Get(ctx, ref)
		if err != nil {
			return err
		}
		return fn(st, r)
	})
	if errors.Is(err, errNoState) {
		return &instance.NotFoundError{What: "instance", Ref: ref, Hint: "no instance was ever created in " + a.StateDir()}
	}
	return err
}

// errNoState: the state directory has no database yet. Commands that only
// read do not create one.
var errNoState = errors.New("no state database yet")

// withStore opens the existing store for one command; errNoState if none.
func (a *App) withStore(ctx context.Context, fn func(*instance.Store) error) error {
	if _, err := os.Stat(filepath.Join(a.StateDir(), instance.DBFile)); errors.Is(err, os.ErrNotExist) {
		return errNoState
	}
	return a.withNewStore(ctx, fn)
}

// withNewStore opens the store for one command, creating it if needed.
func (a *App) withNewStore(ctx context.Context, fn func(*instance.Store) error) error {
	st, err := a.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(st)
}

func (a *App) newInstanceCreateCmd() *cobra.Command {
	var (
		output, agent, name, workspace, instructions string
		skills                                       []string
		mounts                                       mountFlags
		noTrust                                      bool
	)
	cmd := &cobra.Command{
		Use:   "create --agent ID",
		Short: "Provision an instance for a client and write its MCP configuration",
		Long: `Create resolves the agent definition, snapshots its capabilities into a new instance
record and writes the client's native MCP configuration into the instance's
directory, so that the client starts this endpoint under the key --server-name:

  auggie       mcp.json               auggie --mcp-config FILE
  claude-code  .mcp.json              claude --mcp-config FILE
  codex        codex-home/config.toml CODEX_HOME=DIR/codex-home codex
  gemini       .gemini/settings.json  (with "trust": true unless --no-trust)

The configuration names this agentctl binary by absolute path and passes the state
directory explicitly, so it works from any working directory. Create is
all-or-nothing: on error nothing is left behind.

With -o table the new id is printed on stdout (and a summary on stderr), so
  id=$(agentctl instance create --agent auggie)
works in scripts; -o json prints the whole record.`,
		Example: `  agentctl instance create --agent auggie --workspace .
  id=$(agentctl instance create --agent claude-code --name fix-login -o json | jq -r .id)
  agentctl instance create --agent gemini --server-name tools --question-timeout 30m`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(output); err != nil {
				return err
			}
			if agent == "" {
				return usageErrorf("--agent is required; see `agentctl agents list` for the ids")
			}
			timeout, err := time.ParseDuration(a.v.GetString("question_timeout"))
			if err != nil || timeout <= 0 {
				return a.invalidSetting(cmd, "question_timeout", "use a positive duration such as 10m or 90s")
			}
			if cmd.Flags().Changed("server-name") && a.v.GetString("server_name") == "" {
				return instance.ValidateServerName("")
			}
			cat, err := a.Catalog()
			if err != nil {
				return err
			}
			def, err := cat.Lookup(agent)
			if err != nil {
				return err
			}
			exe, err := a.Executable()
			if err != nil {
				return fmt.Errorf("find the agentctl executable: %w", err)
			}
			mode, err := a.prefixMode(cmd.Flags())
			if err != nil {
				return err
			}
			confs, err := a.configuredMounts(mounts, true)
			if err != nil {
				return err
			}
			server := a.v.GetString("server_name")
			if err := instance.ValidateServerName(server); err != nil {
				return err
			}
			planned, tools, err := planMounts(server, def.Capabilities.ToolNames, mode, confs)
			if err != nil {
				return err
			}
			templates, origins, err := readTemplates(instructions, skills)
			if err != nil {
				return err
			}
			return a.withNewStore(cmd.Context(), func(st *instance.Store) error {
				rec, err := st.CreateInstance(cmd.Context(), instance.CreateOptions{
					Definition: def, Name: name, Workspace: workspace,
					ServerName: server, QuestionTimeout: timeout, Executable: exe, NoTrust: noTrust,
					ToolPrefixMode: string(mode), Mounts: planned,
					Files: func(rec *instance.Record) (map[string][]byte, error) {
						return renderFiles(rec, planned, tools, templates, origins)
					},
				})
				if err != nil {
					return err
				}
				for _, m := range planned {
					if m.PrefixOrigin == mount.OriginDerived {
						a.IO.Narrate("%s", m.Announcement())
					}
				}
				a.IO.Narrate("Created instance %s for %s (server name %q).", rec.ID, rec.Agent, rec.ServerName)
				a.IO.Narrate("Client configuration: %s", rec.MCPConfigPath)
				if output == formatJSON {
					return a.IO.PrintJSON(rec.Redacted())
				}
				_, err = fmt.Fprintln(a.IO.Out, rec.ID)
				return err
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&agent, "agent", "", "agent id (required; see `agentctl agents list`)")
	f.StringVar(&name, "name", "", "a label for the instance, unique; usable wherever an id is")
	f.StringVar(&workspace, "workspace", ".", "the directory the agent works in")
	f.String("server-name", instance.DefaultServerName, "the key S the endpoint is injected under (env AGENTCTL_SERVER_NAME)")
	f.String("question-timeout", instance.DefaultQuestionTimeout.String(), "how long ask_user_question waits for an answer (env AGENTCTL_QUESTION_TIMEOUT)")
	f.BoolVar(&noTrust, "no-trust", false, `do not mark the server "trust": true for Gemini CLI and Qwen Code (their headless runs then ignore its tools)`)
	mounts.register(f)
	f.String("tool-prefix-mode", string(mount.PrefixModeMountName), "how mounts without an explicit prefix get one: mount-name or off (env AGENTCTL_TOOL_PREFIX_MODE)")
	f.StringVar(&instructions, "instructions", "", "instructions template written as instructions.md; {{tool:NAME}} and {{tool:MOUNT/NAME}} expand to this instance's tool names")
	f.StringArrayVar(&skills, "skill", nil, "skill file written under skills/, with {{tool:...}} expanded (repeatable)")
	_ = cmd.MarkFlagFilename("instructions")
	_ = cmd.MarkFlagFilename("skill")
	_ = cmd.RegisterFlagCompletionFunc("tool-prefix-mode", cobra.FixedCompletions([]string{"mount-name", "off"}, cobra.ShellCompDirectiveNoFileComp))
	addOutputFlag(cmd, &output)
	_ = cmd.RegisterFlagCompletionFunc("agent", a.completeAgentIDs)
	_ = cmd.MarkFlagDirname("workspace")
	return cmd
}

func (a *App) newInstanceListCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List instances, oldest first",
		Example: `  agentctl instance list
  agentctl instance list -o json | jq -r '.[].id'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(output); err != nil {
				return err
			}
			recs := []*instance.Record{}
			err := a.withStore(cmd.Context(), func(st *instance.Store) error {
				var err error
				recs, err = st.List(cmd.Context())
				return err
			})
			if err != nil && !errors.Is(err, errNoState) {
				return err
			}
			if output == formatJSON {
				for i, r := range recs {
					recs[i] = r.Redacted()
				}
				return a.IO.PrintJSON(recs)
			}
			rows := make([][]string, len(recs))
			for i, r := range recs {
				rows[i] = []string{r.ID, orDash(r.Name), r.Agent, string(r.Capabilities.ToolNames.Namespacing),
					r.ServerName, r.CreatedAt.Format(time.RFC3339), r.Workspace}
			}
			return a.IO.PrintTable([]string{"ID", "NAME", "AGENT", "NAMESPACING", "SERVER", "CREATED", "WORKSPACE"}, rows)
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

func (a *App) newInstanceShowCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:               "show INSTANCE",
		Short:             "Show an instance record",
		Long:              "Show an instance record. The JSON (-o json) is a contract: fields are added, never renamed.",
		Example:           `  agentctl instance show fix-login -o json | jq .capabilities.tool_names`,
		Args:              exactArgs(1, "an instance id, id prefix or label"),
		ValidArgsFunction: a.completeInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(output); err != nil {
				return err
			}
			return a.withInstance(cmd.Context(), args[0], func(st *instance.Store, r *instance.Record) error {
				if output == formatJSON {
					return a.IO.PrintJSON(r.Redacted())
				}
				tn := r.Capabilities.ToolNames
				ex := exampleName(tn, r.ServerName)
				fields := [][2]string{
					{"id", r.ID}, {"name", orDash(r.Name)}, {"agent", r.Agent},
					{"created", r.CreatedAt.Format(time.RFC3339)}, {"server name", r.ServerName},
					{"namespacing", string(tn.Namespacing)}, {"template", tn.Template},
					{"workspace", r.Workspace}, {"transport", r.Transport.Kind},
					{"question timeout", time.Duration(r.QuestionTimeout).String()},
					{"directory", r.Dir}, {"mcp config", r.MCPConfigPath},
					{"example", fmt.Sprintf("%s is sent as %s; the model sees %s", ex.Canonical, ex.Transport, ex.ModelSees)},
				}
				fields = append(fields, [2]string{"tool prefix mode", r.ToolPrefixMode})
				for _, m := range r.Redacted().Mounts {
					fields = append(fields, [2]string{"mount", describeMount(m)})
				}
				for _, f := range r.Files {
					fields = append(fields, [2]string{"file", filepath.Join(r.Dir, f)})
				}
				return a.IO.PrintFields(fields)
			})
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

func (a *App) newInstanceDeleteCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:               "delete INSTANCE",
		Aliases:           []string{"rm"},
		Short:             "Delete an instance: its record, questions, events and directory",
		Args:              exactArgs(1, "an instance id, id prefix or label"),
		ValidArgsFunction: a.completeInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(output); err != nil {
				return err
			}
			return a.withInstance(cmd.Context(), args[0], func(st *instance.Store, r *instance.Record) error {
				r, err := st.Delete(cmd.Context(), r.ID)
				if err != nil {
					return err
				}
				a.IO.Narrate("Deleted instance %s and %s.", r.ID, r.Dir)
				if output == formatJSON {
					return a.IO.PrintJSON(r.Redacted())
				}
				_, err = fmt.Fprintln(a.IO.Out, r.ID)
				return err
			})
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

func (a *App) newInstanceAnswerCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "answer INSTANCE [QUESTION-ID] TEXT",
		Short: "Answer a question that ask_user_question is waiting on",
		Long: `Answer a question that the agent asked with ask_user_question while its client did not
support MCP elicitation. Without QUESTION-ID the instance must have exactly one open
question. The waiting tool call returns the answer at once.`,
		Example: `  agentctl instance questions fix-login
  agentctl instance answer fix-login "Use the staging database"
  agentctl instance answer fix-login 01jq3z... "yes"`,
		Args:              rangeArgs(2, 3, "an instance, an optional question id, and the answer text"),
		ValidArgsFunction: a.completeInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(output); err != nil {
				return err
			}
			qid, text := "", args[len(args)-1]
			if len(args) == 3 {
				qid = args[1]
			}
			return a.withInstance(cmd.Context(), args[0], func(st *instance.Store, r *instance.Record) error {
				q, err := st.Answer(cmd.Context(), r.ID, qid, text)
				if err != nil {
					return err
				}
				a.IO.Narrate("Answered question %s: %q", q.ID, q.Text)
				if output == formatJSON {
					return a.IO.PrintJSON(q)
				}
				_, err = fmt.Fprintln(a.IO.Out, q.ID)
				return err
			})
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

func (a *App) newInstanceQuestionsCmd() *cobra.Command {
	var (
		output string
		all    bool
	)
	cmd := &cobra.Command{
		Use:               "questions INSTANCE",
		Short:             "List the questions an instance is waiting on (--all: every question)",
		Args:              exactArgs(1, "an instance id, id prefix or label"),
		ValidArgsFunction: a.completeInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(output); err != nil {
				return err
			}
			return a.withInstance(cmd.Context(), args[0], func(st *instance.Store, r *instance.Record) error {
				qs, err := st.Questions(cmd.Context(), r.ID, all)
				if err != nil {
					return err
				}
				if output == formatJSON {
					return a.IO.PrintJSON(qs)
				}
				rows := make([][]string, len(qs))
				for i, q := range qs {
					rows[i] = []string{q.ID, q.Status, q.AskedAt.Format(time.RFC3339), q.Text, strings.Join(q.Choices, " | "), q.Answer}
				}
				return a.IO.PrintTable([]string{"ID", "STATUS", "ASKED", "QUESTION", "CHOICES", "ANSWER"}, rows)
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "include answered, expired and cancelled questions")
	addOutputFlag(cmd, &output)
	return cmd
}

func (a *App) printEvents(output string, evs []*instance.Event) error {
	for _, e := range evs {
		if output == formatJSON {
			if err := a.IO.PrintJSONLine(e); err != nil {
				return err
			}
			continue
		}
		pct := "-"
		if e.Percent != nil {
			pct = fmt.Sprintf("%g%%", *e.Percent)
		}
		// The message comes from the model: no tabs, newlines or escape
		// sequences into TSV or the terminal.
		msg := strings.Map(func(r rune) rune {
			if r < ' ' || r == 0x7f {
				return ' '
			}
			return r
		}, e.Message)
		var err error
		if a.IO.IsStdoutTTY() {
			_, err = fmt.Fprintf(a.IO.Out, "%4d  %s  %-7s  %5s  %s\n", e.Seq, e.At.Local().Format(time.TimeOnly), e.Status, pct, msg)
		} else {
			_, err = fmt.Fprintf(a.IO.Out, "%d\t%s\t%s\t%s\t%s\n", e.Seq, e.At.Format(time.RFC3339Nano), e.Status, pct, msg)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

const pollInterval = 200 * time.Millisecond

func (a *App) newInstanceEventsCmd() *cobra.Command {
	var (
		output string
		follow bool
	)
	cmd := &cobra.Command{
		Use:   "events INSTANCE",
		Short: "Show the progress events an instance reported (--follow to keep watching)",
		Long: `Show the progress events the agent recorded with report_progress, oldest first.
With -o json each event is one JSON object per line (JSON Lines), also with --follow.
--follow keeps printing new events until interrupted or the instance is deleted.`,
		Example: `  agentctl instance events fix-login
  agentctl instance events fix-login --follow -o json | jq -r .message`,
		Args:              exactArgs(1, "an instance id, id prefix or label"),
		ValidArgsFunction: a.completeInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(output); err != nil {
				return err
			}
			ctx := cmd.Context()
			return a.withInstance(ctx, args[0], func(st *instance.Store, r *instance.Record) error {
				var after int64
				for {
					evs, err := st.Events(ctx, r.ID, after)
					if err != nil {
						return err
					}
					if err := a.printEvents(output, evs); err != nil {
						return err
					}
					if len(evs) > 0 {
						after = evs[len(evs)-1].Seq
					}
					if !follow {
						return nil
					}
					select {
					case <-ctx.Done():
						return nil
					case <-time.After(pollInterval):
					}
					if ok, err := st.Exists(ctx, r.ID); err == nil && !ok {
						a.IO.Narrate("Instance %s was deleted.", r.ID)
						return nil
					}
				}
			})
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new events")
	addOutputFlag(cmd, &output)
	return cmd
}

func (a *App) newInstanceWaitCmd() *cobra.Command {
	var (
		status  string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "wait INSTANCE --status STATUS",
		Short: "Wait until the instance reports a status (for CI)",
		Long: `Wait until the agent reports the given status with report_progress. Exits 0 when it
is reached, 6 when the instance reports "failed" first, 5 when --timeout passes
(see 'agentctl help exit-codes'). Events reported before the wait started count.`,
		Example:           `  agentctl instance wait "$id" --status done --timeout 30m`,
		Args:              exactArgs(1, "an instance id, id prefix or label"),
		ValidArgsFunction: a.completeInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(instance.Statuses, status) {
				return usageErrorf("invalid --status %q: use one of %s", status, strings.Join(instance.Statuses, ", "))
			}
			if timeout < 0 {
				return usageErrorf("invalid --timeout %s: use a positive duration, or 0 to wait until interrupted", timeout)
			}
			// Resolve the instance before the clock starts, so a short
			// timeout is a timeout, never a failed open.
			return a.withInstance(cmd.Context(), args[0], func(st *instance.Store, r *instance.Record) error {
				ctx := cmd.Context()
				if timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, timeout)
					defer cancel()
				}
				var after int64
				for {
					evs, err := st.Events(ctx, r.ID, after)
					if err != nil && ctx.Err() == nil {
						return err
					}
					for _, e := range evs {
						after = e.Seq // seq is global and increasing, not per instance
						if e.Status == status {
							a.IO.Narrate("Instance %s reached %s: %s", r.ID, status, e.Message)
							return nil
						}
						if e.Status == instance.StatusFailed {
							return &exitError{code: ExitFailed, err: fmt.Errorf("instance %s reported failed: %s", r.ID, e.Message)}
						}
					}
					select {
					case <-ctx.Done():
						if errors.Is(ctx.Err(), context.DeadlineExceeded) {
							return &exitError{code: ExitTimeout, err: fmt.Errorf("instance %s did not reach %s within %s", r.ID, status, timeout)}
						}
						return ctx.Err()
					case <-time.After(pollInterval):
					}
					if ok, err := st.Exists(ctx, r.ID); err == nil && !ok {
						return &instance.NotFoundError{What: "instance", Ref: r.ID, Hint: "it was deleted while waiting"}
					}
				}
			})
		},
	}
	cmd.Flags().StringVar(&status, "status", instance.StatusDone, "the status to wait for: "+strings.Join(instance.Statuses, ", "))
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (0: wait until interrupted)")
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(instance.Statuses, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (a *App) completeInstances(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	_ = a.loadConfig(cmd)
	var out []string
	err := a.withStore(cmd.Context(), func(st *instance.Store) error {
		ids, err := st.IDs(cmd.Context())
		for id, label := range ids {
			out = append(out, id+"\t"+label)
			if label != "" {
				out = append(out, label+"\t"+id)
			}
		}
		return err
	})
	if err != nil && !errors.Is(err, errNoState) {
		return nil, cobra.ShellCompDirectiveError
	}
	slices.Sort(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}
