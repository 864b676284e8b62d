package main

import (
	"cmp"
	"context"
	"github.com/agentctl/agentctl/agents"
	"path/filepath"
	"strings"

	"github.com/agentctl/agentctl/instance"
	"github.com/spf13/cobra"
)

// InstanceConnectOptions are the inputs of `instance connect` and
// `instance disconnect`.
type InstanceConnectOptions struct {
	IO     *IOStreams
	Store  storeOpener
	Getenv func(string) string
	// Definition and Executable make the files of another host's
	// instance here (see [rebuildHere]); nil leaves them to that host.
	Definition func(id string) (*agents.Definition, error)
	Executable func() (string, error)

	Instance string
	Scope    string
	Force    bool
	Output   string
}

// connectFilesHelp is the table of files in `instance connect --help`.
const connectFilesHelp = `  client          --scope workspace (default)   --scope user
  auggie          (none)                        ~/.augment/settings.json
  claude-code     .mcp.json                     ~/.claude.json
  codex           (none)                        $CODEX_HOME/config.toml (default ~/.codex)
  continue        .continue/mcpServers/S.yaml   ~/.continue/mcpServers/S.yaml
  copilot-cli     (none)                        ~/.copilot/mcp-config.json
  cursor          .cursor/mcp.json              ~/.cursor/mcp.json
  droid           .factory/mcp.json             ~/.factory/mcp.json
  gemini          .gemini/settings.json         ~/.gemini/settings.json
  grok            .grok/settings.json           (none)
  kiro            .kiro/settings/mcp.json       ~/.kiro/settings/mcp.json
  opencode        opencode.json                 ~/.config/opencode/opencode.json
  qwen-code       .qwen/settings.json           ~/.qwen/settings.json
  vscode-copilot  .vscode/mcp.json              ~/.config/Code/User/mcp.json

Other clients (cline, goose, kilo) read no file agentctl edits: connect says what
they read instead. ~/.config is $XDG_CONFIG_HOME when set (on macOS, VS Code's is
~/Library/Application Support/Code/User/mcp.json).`

// NewCmdInstanceConnect is `agentctl instance connect`; runF replaces
// [instanceConnectRun] in tests.
func NewCmdInstanceConnect(f *Factory, runF func(context.Context, *InstanceConnectOptions) error) *cobra.Command {
	opts := &InstanceConnectOptions{IO: f.IOStreams, Store: f.Store, Getenv: f.Config.getenv, Definition: f.Definition, Executable: f.Executable}
	cmd := &cobra.Command{
		Use:   "connect INSTANCE [--scope workspace|user]",
		Short: "Write the instance's MCP server into the file its client reads",
		Long: `Connect writes the instance's server entry (the one in its own configuration, under
its server name S) into the file the instance's client reads by default, so that
the client started as usual, in the instance's workspace, finds the endpoint:

` + connectFilesHelp + `

Only the entry's own bytes are written: everything else in the file is kept byte
for byte (its formatting and order, numbers as written such as 1e400, escapes,
invalid UTF-8, a UTF-8 byte order mark, and in Codex's config.toml its comments
and tables; a config.toml whose servers cannot take a table of their own, such
as an inline table, is read and written again as a whole, which keeps its values
but not its comments, and connect warns that it did).
The file is edited under an advisory lock (flock on it and on its directory) and
replaced atomically, with its mode and owner, only if it is still what agentctl read: if
another program (an editor) changed it meanwhile, the edit is made again on its
version; a file that keeps changing, or whose lock another program holds for 10s,
is refused (exit code 4). Anything but a plain file (a device, a pipe) is refused
too. A file whose new version could not have its owner (another user's file that
you may write through its group), or that has other names (hard links), is written
into instead, as editors do, once its backup is kept; an HTTP instance's token is
not written into such a file that others may read, unless agentctl may make it
private (mode 0600). A file connect makes gets the mode your umask gives new files
(0600 while it holds a token).

Backups: before each change the file as it was is kept as FILE.agentctl-bak.1
(without room for that, nothing changes), older copies rotated to
FILE.agentctl-bak.2 ... .5 (the oldest dropped), and FILE.agentctl-bak keeps the
file as it was before agentctl first changed it (there is none when agentctl made
the file: removing the file undoes it).

A symbolic link is followed: the file it names is edited (made, if not there
yet) and the link kept. A file that does not parse, JSON with comments, a member
name that comes twice in one object, servers that are not where the client reads
them, a read-only file, a directory, or a file you may not replace (agentctl
writes beside it and renames) are refused (exit code 4) and left as they are.
An entry named S that starts something else (another instance) is refused unless
--force. Connecting again changes nothing. Undo it with 'agentctl instance
disconnect'.

What was done is printed on stderr; -o json prints {path, target, key, action,
backup, previous, warnings, scrubbed} (target: the file a link at path names, when it is
one; backup: FILE.agentctl-bak; previous: the copy made before this change;
scrubbed: the backups disconnect took the instance's token out of).`,
		Example: `  id=$(agentctl instance create --agent cursor --workspace .)
  agentctl instance connect $id            # adds mcpServers.agentctl to ./.cursor/mcp.json
  agentctl instance connect $id --scope user
  agentctl instance disconnect $id`,
		Args:              exactArgs(1, "an instance id, id prefix or label"),
		ValidArgsFunction: completeInstances(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkConnectFlags(opts); err != nil {
				return err
			}
			opts.Instance = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return instanceConnectRun(cmd.Context(), opts, instance.Connect)
		},
	}
	addConnectFlags(cmd, opts, "replace an entry named S that starts something else")
	return cmd
}

func addConnectFlags(cmd *cobra.Command, opts *InstanceConnectOptions, force string) {
	fl := cmd.Flags()
	fl.StringVar(&opts.Scope, "scope", instance.ScopeWorkspace, "whose file: workspace (the instance's workspace) or user (your home)")
	fl.BoolVar(&opts.Force, "force", false, force)
	_ = cmd.RegisterFlagCompletionFunc("scope", cobra.FixedCompletions([]string{instance.ScopeWorkspace, instance.ScopeUser}, cobra.ShellCompDirectiveNoFileComp))
	addOutputFlag(cmd, &opts.Output, opts.IO)
}

func checkConnectFlags(opts *InstanceConnectOptions) error {
	if err := checkFormat(opts.Output); err != nil {
		return err
	}
	if opts.Scope != instance.ScopeWorkspace && opts.Scope != instance.ScopeUser {
		return usageErrorf("invalid --scope %q: use workspace or user", opts.Scope)
	}
	return nil
}

// instanceConnectRun runs op (connect or disconnect) on the instance and
// says what it did.
func instanceConnectRun(ctx context.Context, opts *InstanceConnectOptions, op func(*instance.Record, instance.ConnectOptions) (*instance.ConnectResult, error)) error {
	return withInstance(ctx, opts.Store, opts.Instance, func(st *instance.Store, r *instance.Record) error {
		if opts.Definition != nil {
			if err := rebuildHere(st, r, opts.Definition, opts.Executable); err != nil {
				return err
			}
		}
		res, err := op(r, instance.ConnectOptions{Scope: opts.Scope, Getenv: opts.Getenv, Force: opts.Force})
		if err != nil {
			return err
		}
		if res.Target != "" {
			opts.IO.Narrate("%s is a link to %s: that file is the one edited.", res.Path, res.Target)
		}
		switch res.Action {
		case "absent":
			opts.IO.Narrate("%s: no entry %s; nothing to remove.", res.Path, res.Key)
		case "unchanged":
			opts.IO.Narrate("%s: %s is already this instance's; nothing changed.", res.Path, res.Key)
		default:
			opts.IO.Narrate("%s: %s %s.", res.Path, res.Key, res.Action)
			if res.Backup != "" {
				opts.IO.Narrate("The file as it was before agentctl first changed it: %s", res.Backup)
			}
			if res.Previous != "" {
				opts.IO.Narrate("The file as it was before this change: %s", res.Previous)
			}
		}
		for _, w := range res.Warnings {
			opts.IO.Narrate("warning: %s", w)
		}
		if len(res.Scrubbed) > 0 {
			opts.IO.Narrate("The instance's bearer token was taken out of the backups that held it: %s", strings.Join(res.Scrubbed, ", "))
		}
		if r.Transport.Kind == instance.TransportHTTP && (res.Action == "added" || res.Action == "replaced" || res.Action == "unchanged") &&
			cmp.Or(opts.Scope, instance.ScopeWorkspace) == instance.ScopeWorkspace {
			// Mode 0600 does nothing against `git add .`.
			opts.IO.Narrate("warning: %s now holds the instance's bearer token, and its backups may too; keep them out of version control (add %s and %s* to .gitignore), or connect with --scope user; disconnect takes the token out of the backups",
				res.Path, filepath.Base(res.Path), filepath.Base(res.Path)+instance.BackupSuffix)
		}
		if opts.Output == formatJSON {
			return opts.IO.PrintJSON(res)
		}
		return nil
	})
}
