package main

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/cmd/internal/provision"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/spf13/cobra"
)

// InstanceCreateOptions are the inputs of `instance create`; the settings
// (server name, question timeout, prefix mode, the config file's mounts) are
// resolved by the command before the run.
type InstanceCreateOptions struct {
	IO         *IOStreams
	Catalog    func() (*agents.Catalog, error)
	Store      storeOpener
	Executable func() (string, error)

	Agent           string
	Name            string
	Workspace       string
	ServerName      string
	QuestionTimeout time.Duration
	NoTrust         bool
	AskVia          string
	PrefixMode      mount.PrefixMode
	Mounts          []mount.Mount
	Templates       []provision.TemplateFile
	Transport       string
	URL             string
	Output          string
}

// NewCmdInstanceCreate is `agentctl instance create`; runF replaces
// [instanceCreateRun] in tests.
func NewCmdInstanceCreate(f *Factory, runF func(context.Context, *InstanceCreateOptions) error) *cobra.Command {
	opts := &InstanceCreateOptions{IO: f.IOStreams, Catalog: f.Catalog, Store: f.Store, Executable: f.Executable}
	var (
		mounts       mountFlags
		instructions string
		skills       []string
	)
	cmd := &cobra.Command{
		Use:   "create --agent ID",
		Short: "Provision an instance for a client and write its MCP configuration",
		Long: `Create resolves the agent definition, snapshots its capabilities into a new instance
record and writes the client's native MCP configuration into the instance's
directory (mcp_config_path in the record: mcp.json for auggie, .mcp.json for
claude-code, .gemini/settings.json with "trust": true unless --no-trust, ...), so that
the client starts this endpoint under the key --server-name. Every client's tool-call
timeout in it covers --question-timeout (with a warning where a client cannot wait that
long). Then start the client with it:

  agentctl instance run ID --prompt TEXT    headless, the way its definition's [run]
                                            recipe says (every catalog client)
  agentctl instance run ID                  interactively, on this terminal
  eval "$(agentctl instance env ID)"        the same environment, to start it yourself
  agentctl instance connect ID              put the entry into the file the client reads
                                            by default (.cursor/mcp.json, ...)

The configuration names this agentctl binary by absolute path and passes the state
directory explicitly, so it works from any working directory. Create is
all-or-nothing: on error nothing is left behind.

External servers (--mcp, --mcp-json, [[mcp_servers]] in the config file) run in
the instance's workspace, whichever directory the client starts in, so a relative
path among a server's arguments is a path in the workspace. A command that is a
relative path (./ev.sh, bin/server; not a bare name such as npx, which is looked up
in PATH) is made absolute now, against the directory create runs in (for the config
file's [[mcp_servers]], against the config file's directory), and must be an
executable file there.

With --transport http the client does not start the endpoint: it connects to
'agentctl serve' at --url (default http://127.0.0.1:7821/instances/{id}/mcp, {id}
being the new instance's id), sending the instance's bearer token as an
Authorization header; the configuration file holding it is written mode 0600.

Questions (ask_user_question) go where a person can answer them: in a headless run
('instance run --prompt') to agentctl's store, where 'agentctl instance questions'
shows them and 'agentctl instance answer' answers; in an interactive run, or a
client started some other way, to the client itself (MCP elicitation) when it can
ask. A client's decline or cancel that came faster than anyone could have read the
question falls back to the store. --ask-via store|client overrides the agent
definition's policy (see 'agentctl agents show ID') for every kind of run.

Every instance gets a token, made now and stored only as a hash. It is shown once:
in -o json output ("token"), and for --transport http on stderr. Lost, it can only be
replaced: agentctl instance token rotate ID.

With -o table the new id is printed on stdout (and a summary on stderr), so
  id=$(agentctl instance create --agent auggie)
works in scripts; -o json prints the whole record and the token.`,
		Example: `  agentctl instance create --agent auggie --workspace .
  id=$(agentctl instance create --agent claude-code --name fix-login -o json | jq -r .id)
  agentctl instance create --agent gemini --server-name tools --question-timeout 30m
  agentctl instance create --agent claude-code --transport http`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(opts.Output); err != nil {
				return err
			}
			if opts.Agent == "" {
				return usageErrorf("--agent is required; see `agentctl agents list` for the ids")
			}
			// Given empty (an unset variable in a script), not this directory.
			if opts.Workspace == "" {
				return usageErrorf("--workspace is empty; give the directory the agent works in (. for this one)")
			}
			c := f.Config
			var err error
			if opts.QuestionTimeout, err = c.QuestionTimeout(); err != nil {
				return err
			}
			opts.ServerName = c.String(keyServerName)
			if cmd.Flags().Changed("server-name") && opts.ServerName == "" {
				return instance.ValidateServerName("")
			}
			if opts.PrefixMode, err = c.PrefixMode(); err != nil {
				return err
			}
			// The instance's endpoint is started by its client with the
			// same environment and config file; a setting mcp serve
			// refuses would make every start of it fail, so refuse it now.
			if err := endpointSettings(c); err != nil {
				return err
			}
			fileMounts, err := c.FileMounts()
			if err != nil {
				return err
			}
			if opts.Mounts, err = mounts.mounts(fileMounts); err != nil {
				return err
			}
			if opts.Transport != instance.TransportStdio && opts.Transport != instance.TransportHTTP {
				return usageErrorf("invalid --transport %q: use stdio (the client starts 'agentctl mcp serve') or http (it connects to 'agentctl serve')", opts.Transport)
			}
			if opts.URL != "" && opts.Transport != instance.TransportHTTP {
				return usageErrorf("--url %s is for --transport http; drop --url, or add --transport http", opts.URL)
			}
			if opts.AskVia != "" && !slices.Contains(agents.AskVias, agents.AskVia(opts.AskVia)) {
				return usageErrorf("invalid --ask-via %q: use store (questions wait for 'agentctl instance answer') or client (MCP elicitation where the client can ask)", opts.AskVia)
			}
			if opts.Templates, err = provision.TemplateFiles(instructions, skills); err != nil {
				return &usageError{msg: err.Error()}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return instanceCreateRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Agent, "agent", "", "agent id (required; see 'agentctl agents list')")
	fl.StringVar(&opts.Name, "name", "", "a label for the instance, unique; usable wherever an id is")
	fl.StringVar(&opts.Workspace, "workspace", ".", "the directory the agent works in")
	addSettingFlag(fl, keyServerName)
	addSettingFlag(fl, keyQuestionTimeout)
	fl.BoolVar(&opts.NoTrust, "no-trust", false, `do not mark the server "trust": true for Gemini CLI and Qwen Code (their headless runs then ignore its tools)`)
	fl.StringVar(&opts.AskVia, "ask-via", "", "where ask_user_question asks in every kind of run: store ('instance answer') or client (MCP elicitation); default: the agent definition's policy")
	_ = cmd.RegisterFlagCompletionFunc("ask-via", cobra.FixedCompletions([]string{string(agents.AskViaStore), string(agents.AskViaClient)}, cobra.ShellCompDirectiveNoFileComp))
	mounts.register(fl)
	addSettingFlag(fl, keyToolPrefixMode)
	fl.StringVar(&instructions, "instructions", "", "instructions template written as instructions.md; {{tool:NAME}} and {{tool:MOUNT/NAME}} expand to this instance's tool names")
	fl.StringArrayVar(&skills, "skill", nil, "skill file written under skills/, with {{tool:...}} expanded (repeatable)")
	_ = cmd.MarkFlagFilename("instructions")
	_ = cmd.MarkFlagFilename("skill")
	_ = cmd.RegisterFlagCompletionFunc("tool-prefix-mode", cobra.FixedCompletions([]string{"mount-name", "off"}, cobra.ShellCompDirectiveNoFileComp))
	fl.StringVar(&opts.Transport, "transport", instance.TransportStdio, "how the client reaches the endpoint: stdio (it starts 'agentctl mcp serve') or http (it connects to 'agentctl serve' with the instance's token)")
	fl.StringVar(&opts.URL, "url", "", "the endpoint's URL for --transport http; {id} is the instance id (default "+instance.DefaultHTTPURL+")")
	_ = cmd.RegisterFlagCompletionFunc("transport", cobra.FixedCompletions([]string{instance.TransportStdio, instance.TransportHTTP}, cobra.ShellCompDirectiveNoFileComp))
	addOutputFlag(cmd, &opts.Output, opts.IO)
	_ = cmd.RegisterFlagCompletionFunc("agent", completeAgentIDs(f))
	_ = cmd.MarkFlagDirname("workspace")
	return cmd
}

func instanceCreateRun(ctx context.Context, opts *InstanceCreateOptions) error {
	cat, err := opts.Catalog()
	if err != nil {
		return err
	}
	def, err := cat.Lookup(opts.Agent)
	if err != nil {
		return err
	}
	exe, err := opts.Executable()
	if err != nil {
		return fmt.Errorf("find the agentctl executable: %w", err)
	}
	open := func(ctx context.Context) (*instance.Store, error) { return opts.Store(ctx, true) }
	rec, plan, err := provision.Create(ctx, open, provision.CreateOptions{
		Definition: def, Name: opts.Name, Workspace: opts.Workspace,
		ServerName: opts.ServerName, QuestionTimeout: opts.QuestionTimeout, Executable: exe, NoTrust: opts.NoTrust,
		AskVia: agents.AskVia(opts.AskVia), PrefixMode: opts.PrefixMode, Mounts: opts.Mounts, Templates: opts.Templates,
		Transport: instance.Transport{Kind: opts.Transport, URL: opts.URL},
	})
	if err != nil {
		return err
	}
	for _, line := range plan.Announcements() {
		opts.IO.Narrate("%s", line)
	}
	for _, line := range plan.Warnings(exec.LookPath) {
		opts.IO.Narrate("%s", line)
	}
	narrateNameWarnings(opts.IO, plan, rec.ID)
	if line := instance.ToolTimeoutWarning(def, time.Duration(rec.QuestionTimeout)); line != "" {
		opts.IO.Narrate("%s", line)
	}
	opts.IO.Narrate("Created instance %s for %s (server name %q).", rec.ID, rec.Agent, rec.ServerName)
	opts.IO.Narrate("Client configuration: %s", rec.MCPConfigPath)
	if opts.Output == formatJSON {
		// The token is in this output only: never in the record.
		return opts.IO.PrintJSON(createdJSON{Record: rec.Redacted(), Token: rec.NewToken()})
	}
	if rec.Transport.Kind == instance.TransportHTTP {
		opts.IO.Narrate("Endpoint: %s", rec.Transport.URL)
		opts.IO.Narrate("Token (shown only now; the configuration holds it; replace it with `agentctl instance token rotate %s`): %s", rec.ID, rec.NewToken())
	}
	_, err = fmt.Fprintln(opts.IO.Out, rec.ID)
	return err
}

// createdJSON is `instance create -o json`: the record and, once, the token.
type createdJSON struct {
	*instance.Record
	Token string `json:"token"`
}
