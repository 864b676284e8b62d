package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/cmd/internal/provision"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/instance/launch"
	"github.com/agentctl/agentctl/mcpserver"
	"github.com/spf13/cobra"
)

// InstanceRunOptions are the inputs of `instance run`.
type InstanceRunOptions struct {
	IO         *IOStreams
	Store      storeOpener
	Definition func(id string) (*agents.Definition, error)
	Executable func() (string, error)

	Instance   string
	Prompt     string
	PromptFile string
	hasPrompt  bool
	ClientArgs []string
	DryRun     bool
	Output     string
}

// NewCmdInstanceRun is `agentctl instance run`; runF replaces
// [runInstance] in tests.
func NewCmdInstanceRun(f *Factory, runF func(context.Context, *InstanceRunOptions) error) *cobra.Command {
	opts := &InstanceRunOptions{IO: f.IOStreams, Store: f.Store, Definition: f.Definition, Executable: f.Executable}
	cmd := &cobra.Command{
		Use:   "run INSTANCE [--prompt TEXT | --prompt-file FILE] [-- CLIENT-ARGS...]",
		Short: "Start the instance's client with its MCP endpoint, headless or interactive",
		Long: `Run starts the instance's client program in the instance's workspace, told about the
instance's MCP configuration the way its agent definition's [run] recipe says (a flag,
an environment variable, a -c override), with your environment passed through (API
keys, base URLs) and AGENTCTL_INSTANCE set to the instance id.

With --prompt (or --prompt-file, "-" for stdin) the client runs headless: it gets the
prompt, may use the endpoint's tools without a person confirming each call (the
recipe's "unattended" arguments), and exits. Its output goes to your stdout and
stderr and is copied to run.log in the instance directory ('agentctl instance logs').
Without a prompt, from a terminal, the client runs interactively on your terminal.
Arguments after -- go to the client as they are. A prompt that begins with '-' is
passed with a leading space, so that no client takes it for a flag.

The instance's status follows the run: "running" while the client runs, then "done"
(exit code 0) or "failed" (any other code, or interrupted), unless the model reported
"done" or "failed" itself with report_progress. 'agentctl instance wait' and
'instance list' see it. One run per instance at a time.

Each run gets an id, told on stderr as the client starts ("agentctl: run ID of
instance ... started"); with -o json, that line and one when the client has ended
(status, exit code) are JSON objects on stderr, stdout staying the client's. The
id is in 'instance show' (last_run) and in the events recorded during the run;
'agentctl instance wait INSTANCE --run ID' waits for that run.

SIGINT, SIGTERM, SIGHUP and SIGQUIT are passed on to the client (SIGHUP not when run
was started with nohup: both outlive the session); run waits for it and
exits with the client's exit code (128+N when signal N ended it), 127 when the
client's program is not installed, or 126 when it is but cannot be started (then
the run is recorded as failed, as one that never began). If agentctl itself is killed (SIGKILL, the OOM
killer, a CI runner's hard stop), the client is sent SIGTERM (on Linux); while it,
or a process of its process group, still runs, another run of the instance is
refused, naming it. The next 'instance wait' or 'instance events --follow' finds
the run lost: it ends what is left of the client (SIGTERM, then SIGKILL after 10 s)
and records the run as "failed", its exit code unknown.

--dry-run prints what would run: the command line, the working directory and the
environment variables set, with secrets hidden, and starts nothing; -o json prints
that plan as JSON.`,
		Example: `  agentctl instance run fix-login --prompt 'Fix the failing login test'
  agentctl instance run "$id" --prompt-file task.md -- --model claude-opus-4
  agentctl instance run "$id" --prompt 'say hi' --dry-run -o json
  agentctl instance run "$id"            # interactive, on this terminal`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("%s needs an instance id, id prefix or label (got 0 arguments)", cmd.CommandPath())
			}
			return nil
		},
		ValidArgsFunction: completeInstances(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Output); err != nil {
				return err
			}
			dash := cmd.ArgsLenAtDash()
			if dash < 0 {
				dash = len(args)
			}
			if dash != 1 {
				return usageErrorf("%s needs one instance (an id, id prefix or label) before --; put the client's arguments after --, got %q", cmd.CommandPath(), args[:dash])
			}
			opts.Instance, opts.ClientArgs = args[0], args[dash:]
			pf := cmd.Flags().Changed("prompt-file")
			if cmd.Flags().Changed("prompt") && pf {
				return usageErrorf("give --prompt or --prompt-file, not both")
			}
			opts.hasPrompt = cmd.Flags().Changed("prompt") || pf
			if pf {
				if opts.PromptFile == "" {
					return usageErrorf("--prompt-file is empty; give the file that holds the prompt, or - to read it from stdin")
				}
				p, err := readPromptFile(opts.PromptFile, opts.IO.In)
				if err != nil {
					return err
				}
				opts.Prompt = p
			}
			if opts.hasPrompt && strings.TrimSpace(opts.Prompt) == "" {
				return usageErrorf("the prompt is empty; give the task with --prompt TEXT or --prompt-file FILE")
			}
			if !opts.hasPrompt && !opts.IO.stdinTTY && !opts.DryRun {
				return usageErrorf("no prompt, and stdin is not a terminal: give --prompt TEXT or --prompt-file FILE (- reads stdin) for a headless run, or run from a terminal for an interactive one")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runInstance(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Prompt, "prompt", "p", "", "run headless with this `TEXT` as the prompt")
	cmd.Flags().StringVar(&opts.PromptFile, "prompt-file", "", "run headless with the prompt read from `FILE` (- for stdin)")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print the command line, directory and environment, and start nothing")
	addOutputFlag(cmd, &opts.Output, opts.IO)
	return cmd
}

func readPromptFile(name string, stdin io.Reader) (string, error) {
	var b []byte
	var err error
	if name == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return "", &instance.InvalidError{Msg: fmt.Sprintf("read the prompt: %v", err)}
	}
	return string(b), nil
}

func runInstance(ctx context.Context, opts *InstanceRunOptions) error {
	return withInstance(ctx, opts.Store, opts.Instance, func(st *instance.Store, r *instance.Record) error {
		mode := launch.Interactive
		if opts.hasPrompt {
			mode = launch.Headless
		}
		if err := rebuildHere(st, r, opts.Definition, opts.Executable); err != nil {
			return err
		}
		if r.Transport.Kind != instance.TransportHTTP && !opts.DryRun {
			// The client starts the endpoint, which must find the store.
			if err := st.EndpointPasswordProblem(instance.StoreURL(os.Getenv(settingFor(keyStore).Env))); err != nil {
				return err
			}
		}
		// A client that rewrites the file it is handed gets a private copy.
		if def, err := opts.Definition(r.Agent); err == nil && def.Run.RewritesConfig && !opts.DryRun {
			c, remove, err := instance.PrivateRunCopy(r)
			if err != nil {
				return err
			}
			defer remove()
			r = c
		}
		plan, err := planRun(st, r, opts.Definition, opts.Executable, launch.Options{Mode: mode, Prompt: opts.Prompt, ClientArgs: opts.ClientArgs, Preview: opts.DryRun})
		if err != nil {
			return err
		}
		for _, w := range plan.Warnings {
			opts.IO.Narrate("%s", w)
		}
		if opts.DryRun {
			if err := plan.CheckDir(); err != nil {
				opts.IO.Narrate("warning: %v", err)
			}
			return printPlan(opts.IO, plan.Redacted(), opts.Output)
		}
		return runClient(ctx, opts.IO, st, r, plan, opts.Output == formatJSON)
	})
}

// planRun builds the plan of one run of r's client.
func planRun(st *instance.Store, r *instance.Record, definition func(string) (*agents.Definition, error), executable func() (string, error), o launch.Options) (*launch.Plan, error) {
	def, err := definition(r.Agent)
	if err != nil {
		return nil, fmt.Errorf("instance %s was made for agent %q: %w", r.ID, r.Agent, err)
	}
	exe, err := executable()
	if err != nil {
		return nil, err
	}
	o.Entry = st.EndpointEntry(r, exe)
	qt := time.Duration(r.QuestionTimeout)
	if qt == 0 {
		qt = mcpserver.DefaultQuestionTimeout
	}
	o.ToolTimeout = instance.ClientToolTimeout(def, qt)
	o.Warning = instance.RunToolTimeoutWarning(def, qt)
	// A client that reads MCP servers only from its own files finds the
	// endpoint once `instance connect` has put it there, in either scope.
	o.WorkspaceConfigured = func() (string, string, bool) {
		path, ok := instance.Connected(r, instance.ConnectOptions{Scope: instance.ScopeWorkspace})
		if ok {
			return path, "", true
		}
		user, ok := instance.Connected(r, instance.ConnectOptions{Scope: instance.ScopeUser})
		if !ok && path == "" && user != "" {
			// No workspace file to connect: the user's is the one.
			return user, string(instance.ScopeUser), false
		}
		return path, "", ok
	}
	o.ConfigRefusal = func() string { return instance.RootOwnedRefusal(r.MCPConfigPath) }
	p, err := launch.New(def, r, o)
	var nr *launch.NotRunnableError
	if errors.As(err, &nr) {
		return nil, &instance.InvalidError{Msg: err.Error()}
	}
	return p, err
}

func printPlan(ios *IOStreams, p *launch.Plan, format string) error {
	if format == formatJSON {
		return ios.PrintJSON(p)
	}
	fields := [][2]string{{"agent", p.Agent}, {"mode", string(p.Mode)}, {"dir", p.Dir}}
	for _, e := range p.Env {
		fields = append(fields, [2]string{"env", e.Name + "=" + launch.ShellQuote(e.Value)})
	}
	fields = append(fields, [2]string{"command", p.CommandLine()})
	if p.Mode == launch.Headless {
		fields = append(fields, [2]string{"log", p.Log})
	}
	return ios.PrintFields(fields)
}

// runClient runs the plan as a recorded run ([launch.Run]) and tells its
// id on stderr as the client starts (stdout is the client's): a line of
// narration, or with asJSON a JSON object ([runStartJSON]), and another
// ([runEndJSON]) when it has ended.
func runClient(ctx context.Context, ios *IOStreams, st *instance.Store, r *instance.Record, plan *launch.Plan, asJSON bool) error {
	end, err := launch.Run(ctx, st, r, plan, launch.Streams{In: ios.In, Out: ios.Out, ErrOut: ios.ErrOut, InTerminal: ios.stdinTTY}, func(run instance.Run) {
		if asJSON {
			_ = ios.NarrateJSON(runStartJSON{Event: "started", InstanceID: r.ID, Instance: r.ID, Run: run, Log: plan.Log})
		} else {
			ios.Narrate("agentctl: run %s of instance %s: %s started (%s, pid %d)", run.ID, r.ID, plan.Program, plan.Mode, run.PID)
		}
	})
	var nf *launch.ProgramNotFoundError
	var se *launch.StartError
	switch {
	case errors.As(err, &nf):
		return &exitError{code: 127, err: err, client: true}
	case errors.As(err, &se):
		return &exitError{code: 126, err: err, client: true}
	case end == nil:
		return err
	case err != nil:
		ios.Narrate("agentctl: %v", err)
	}
	if asJSON {
		_ = ios.NarrateJSON(runEndJSON{Event: "ended", InstanceID: r.ID, Instance: r.ID, Run: end.Run, Status: end.Status, Message: end.Message})
	}
	if code := *end.Run.ExitCode; code != 0 {
		return &exitError{code: code, err: errSilent, client: true}
	}
	return nil
}

// runStartJSON is what `instance run -o json` prints on stderr as the
// client starts: the run's id, program, mode, pid and start.
type runStartJSON struct {
	Event string `json:"event"` // "started"
	// InstanceID names the instance as records, events and questions do;
	// Instance is the same, the name these lines had first (kept: fields
	// are added, never renamed).
	InstanceID string `json:"instance_id"`
	Instance   string `json:"instance"`
	instance.Run
	Log string `json:"log,omitempty"` // the headless run's log
}

// runEndJSON is what `instance run -o json` prints on stderr once the
// client has ended: last_run's fields and the status its end recorded
// (the model's own final report, if it made one, stands in the events).
type runEndJSON struct {
	Event      string `json:"event"` // "ended"
	InstanceID string `json:"instance_id"`
	Instance   string `json:"instance"` // as in runStartJSON
	instance.Run
	Status  string `json:"status"`
	Message string `json:"message"`
}

// rebuildHere makes on this host the files of an instance that another
// host created, when a store is shared (see [provision.Rebuild]).
func rebuildHere(st *instance.Store, r *instance.Record, definition func(string) (*agents.Definition, error), executable func() (string, error)) error {
	if !st.Foreign(r) {
		return nil
	}
	def, err := definition(r.Agent)
	if err != nil {
		return fmt.Errorf("instance %s was created on host %s; making its files here needs its agent definition: %w", r.ID, r.Host, err)
	}
	exe, err := executable()
	if err != nil {
		return err
	}
	return provision.Rebuild(st, r, def, exe)
}
