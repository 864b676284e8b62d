package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// App is what every command gets: IO streams, configuration, the environment
// and the clock. Nothing global; tests build their own.
type App struct {
	IO     *IOStreams
	Getenv func(string) string
	Now    func() time.Time
	Args0  string
	v      *viper.Viper
	file   fileConfig
	// given holds the settings given by a flag or an AGENTCTL_* variable.
	given map[string]bool
}

// Main runs agentctl with the process's arguments and streams and returns
// the exit code. It never calls os.Exit.
func Main() int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		if s, ok := <-sigs; ok {
			cancel(signalError{s.(syscall.Signal)})
		}
	}()
	return Run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr, os.Getenv)
}

// signalError is the cause of a context cancelled by a signal.
type signalError struct{ sig syscall.Signal }

func (e signalError) Error() string { return "interrupted by " + e.sig.String() }

// Run runs agentctl with the given arguments (args[0] is the program).
func Run(ctx context.Context, args []string, in io.Reader, out, errOut io.Writer, getenv func(string) string) int {
	app := &App{
		IO:     newIOStreams(in, out, errOut, getenv),
		Getenv: getenv,
		Now:    time.Now,
		Args0:  args[0],
		v:      viper.New(),
	}
	root := app.newRootCmd()
	root.SetArgs(args[1:])
	root.SetIn(in)
	root.SetOut(out)
	root.SetErr(errOut)
	err := root.ExecuteContext(ctx)
	var sig signalError
	if err != nil && errors.Is(err, context.Canceled) && errors.As(context.Cause(ctx), &sig) {
		// Interrupted: the user knows; exit 128+N as shells do.
		return 128 + int(sig.sig)
	}
	if err != nil {
		var silent *exitError
		if !(errors.As(err, &silent) && silent.err == errSilent) {
			fmt.Fprintln(errOut, "agentctl: "+err.Error())
		}
		var ue *usageError
		if errors.As(err, &ue) {
			fmt.Fprintln(errOut, "Run 'agentctl --help' or add --help to the command for usage.")
		}
	}
	return exitCode(err)
}

// errSilent marks an exit whose message was already printed.
var errSilent = errors.New("")

// configKeys are the settings of config.toml (and AGENTCTL_* variables).
var configKeys = map[string]string{
	"state_dir":            "where instances live (default $XDG_STATE_HOME/agentctl)",
	"agents_dir":           "user agent definitions (default $XDG_CONFIG_HOME/agentctl/agents)",
	"log_level":            "endpoint log level: debug, info, warn, error",
	"server_name":          "default --server-name for instance create",
	"question_timeout":     "default --question-timeout for instance create",
	"mcp.tool_prefix_mode": "mount-name (default) or off",
	"kbs":                  "[[kbs]] tables: knowledge bases mounted by instance create",
	"mcp_servers":          "[[mcp_servers]] tables: external MCP servers mounted by instance create",
}

// keyToolPrefixMode is the viper key of the prefix mode.
const keyToolPrefixMode = "mcp.tool_prefix_mode"

// fileConfig is config.toml, decoded strictly.
type fileConfig struct {
	StateDir        string `toml:"state_dir"`
	AgentsDir       string `toml:"agents_dir"`
	LogLevel        string `toml:"log_level"`
	ServerName      string `toml:"server_name"`
	QuestionTimeout string `toml:"question_timeout"`
	MCP             struct {
		ToolPrefixMode string `toml:"tool_prefix_mode"`
	} `toml:"mcp"`
	KBs        []mount.Mount `toml:"kbs"`
	MCPServers []mount.Mount `toml:"mcp_servers"`

	dir string // the config file's directory: relative paths resolve against it
}

type configError struct{ error }

func (e *configError) Unwrap() error { return e.error }

func (a *App) newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "agentctl",
		Short: "Provision coding-agent instances and serve each one an MCP endpoint with the right tool names",
		Long: `agentctl provisions coding-agent instances (Auggie, Claude Code, Codex, Gemini CLI, ...)
and serves each one an in-process MCP endpoint whose tool names are right for the
client that connects: a client that appends or prepends the server name gets names
that its model sees exactly once.

  agentctl agents list                             the clients agentctl knows
  agentctl instance create --agent auggie -o json  provision an instance
  agentctl mcp serve --instance ID                 the endpoint (the client starts it)

Configuration precedence: flags > AGENTCTL_* environment > config file
($XDG_CONFIG_HOME/agentctl/config.toml, or --config) > defaults.`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		Version:           version,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: false},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return a.loadConfig(cmd)
		},
		Args: cobra.ArbitraryArgs,
		RunE: groupRunE,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{msg: err.Error()} })
	pf := root.PersistentFlags()
	pf.String("config", "", "config file (default $XDG_CONFIG_HOME/agentctl/config.toml)")
	pf.String("state-dir", "", "state directory (env AGENTCTL_STATE_DIR; default $XDG_STATE_HOME/agentctl)")
	pf.String("agents-dir", "", "directory of user agent definitions (env AGENTCTL_AGENTS_DIR; default $XDG_CONFIG_HOME/agentctl/agents)")

	root.AddCommand(a.newAgentsCmd(), a.newInstanceCmd(), a.newMCPCmd(), a.newVersionCmd(), newExitCodesTopic())
	for _, c := range root.Commands() {
		if c.HasSubCommands() && c.RunE == nil {
			c.Args, c.RunE = cobra.ArbitraryArgs, groupRunE
		}
	}
	return root
}

func newExitCodesTopic() *cobra.Command {
	return &cobra.Command{Use: "exit-codes", Short: "What agentctl's exit codes mean", Long: exitCodesHelp}
}

func (a *App) newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use: "version", Short: "Print agentctl's version", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(a.IO.Out, version)
			return err
		},
	}
}

// loadConfig binds flags, AGENTCTL_* variables and the config file into the
// app's viper instance: flags > env > config file > defaults.
func (a *App) loadConfig(cmd *cobra.Command) error {
	v := a.v
	// Bind only the settings' flags: binding, say, --mcp would shadow the
	// config file's [mcp] table.
	for key := range envKeys {
		if f := cmd.Flags().Lookup(flagName(key)); f != nil {
			if err := v.BindPFlag(key, f); err != nil {
				return err
			}
		}
	}
	v.SetDefault(keyToolPrefixMode, string(mount.PrefixModeMountName))
	if err := a.readConfigFile(); err != nil {
		return err
	}
	// The environment sits between flags and the config file. Viper reads
	// the process environment itself; agentctl takes it from a.Getenv (so
	// Run is testable), and a changed flag still wins.
	a.given = map[string]bool{}
	for key, env := range envKeys {
		if f := cmd.Flags().Lookup(flagName(key)); f != nil && f.Changed {
			a.given[key] = true
			continue
		}
		if val := a.Getenv(env); val != "" {
			a.given[key] = true
			v.Set(key, val)
		}
	}
	return nil
}

// pathSetting is a path setting; a relative path from the config file is
// relative to the file, like the file's [[kbs]] paths (from a flag or the
// environment, to the working directory).
func (a *App) pathSetting(key string) string {
	p := a.v.GetString(key)
	if p != "" && !filepath.IsAbs(p) && !a.given[key] && a.file.dir != "" {
		return filepath.Join(a.file.dir, p)
	}
	return p
}

// envKeys maps settings to their AGENTCTL_* variables.
var envKeys = map[string]string{
	"config":           "AGENTCTL_CONFIG",
	"state_dir":        "AGENTCTL_STATE_DIR",
	"agents_dir":       "AGENTCTL_AGENTS_DIR",
	"log_level":        "AGENTCTL_LOG_LEVEL",
	"server_name":      "AGENTCTL_SERVER_NAME",
	"question_timeout": "AGENTCTL_QUESTION_TIMEOUT",
	keyToolPrefixMode:  "AGENTCTL_TOOL_PREFIX_MODE",
}

// flagName is the flag of a setting.
func flagName(key string) string {
	if key == keyToolPrefixMode {
		return "tool-prefix-mode"
	}
	return strings.ReplaceAll(key, "_", "-")
}

// readConfigFile reads config.toml strictly (a typo is an error, not a
// silently ignored key) and hands its values to viper.
func (a *App) readConfigFile() error {
	v := a.v
	v.SetDefault("log_level", "info")
	v.SetDefault("server_name", instance.DefaultServerName)
	v.SetDefault("question_timeout", instance.DefaultQuestionTimeout.String())

	path := v.GetString("config")
	if path == "" {
		path = a.Getenv("AGENTCTL_CONFIG")
	}
	explicit := path != ""
	if !explicit {
		path = filepath.Join(a.configHome(), "agentctl", "config.toml")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if !explicit && errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return &configError{fmt.Errorf("config file: %w", err)}
	}
	// Strict first, so a typo is an error rather than a silently ignored key.
	var fc fileConfig
	md, err := toml.Decode(string(data), &fc)
	if err != nil {
		return &configError{fmt.Errorf("%s: %v", path, err)}
	}
	if undec := md.Undecoded(); len(undec) > 0 {
		return &configError{fmt.Errorf("%s: unknown key %q (known keys: %s)", path, undec[0].String(), strings.Join(sortedConfigKeys(), ", "))}
	}
	fc.dir = filepath.Dir(path)
	a.file = fc
	v.SetConfigFile(path)
	v.SetConfigType("toml")
	if err := v.ReadInConfig(); err != nil {
		return &configError{fmt.Errorf("%s: %v", path, err)}
	}
	return nil
}

func sortedConfigKeys() []string {
	keys := make([]string, 0, len(configKeys))
	for k := range configKeys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (a *App) home() string {
	if h := a.Getenv("HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

func (a *App) configHome() string {
	if d := a.Getenv("XDG_CONFIG_HOME"); d != "" {
		return d
	}
	return filepath.Join(a.home(), ".config")
}

// StateDir is where the store lives: --state-dir, AGENTCTL_STATE_DIR, the
// config file, else $XDG_STATE_HOME/agentctl, else ~/.local/state/agentctl.
func (a *App) StateDir() string {
	if d := a.pathSetting("state_dir"); d != "" {
		return d
	}
	if d := a.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "agentctl")
	}
	return filepath.Join(a.home(), ".local", "state", "agentctl")
}

// AgentsDir is where user agent definitions live.
func (a *App) AgentsDir() string {
	if d := a.pathSetting("agents_dir"); d != "" {
		return d
	}
	return filepath.Join(a.configHome(), "agentctl", "agents")
}

// Catalog loads the agent definitions in force.
func (a *App) Catalog() (*agents.Catalog, error) {
	return agents.Load(agents.LoadOptions{UserDir: a.AgentsDir()})
}

// Store opens the state store.
func (a *App) Store(ctx context.Context) (*instance.Store, error) {
	return instance.Open(ctx, a.StateDir(), instance.WithClock(a.Now))
}

// Executable is the absolute path of this agentctl as it was invoked, keeping
// a symlink's name (so an upgrade behind a stable symlink keeps working).
func (a *App) Executable() (string, error) {
	p := a.Args0
	if !strings.ContainsRune(p, filepath.Separator) {
		lp, err := exec.LookPath(p)
		if err != nil {
			return os.Executable()
		}
		p = lp
	}
	return filepath.Abs(p)
}

// invalidSetting reports a bad value of a setting where it came from: a bad
// flag is a usage error; a bad environment variable or config-file value is
// invalid configuration.
func (a *App) invalidSetting(cmd *cobra.Command, key, how string) error {
	val := a.v.GetString(key)
	if f := cmd.Flags().Lookup(flagName(key)); f != nil && f.Changed {
		return usageErrorf("invalid --%s %q: %s", f.Name, val, how)
	}
	if env := envKeys[key]; a.Getenv(env) != "" {
		return &configError{fmt.Errorf("invalid %s=%q in the environment: %s", env, val, how)}
	}
	return &configError{fmt.Errorf("%s: invalid %s = %q: %s", a.v.ConfigFileUsed(), key, val, how)}
}

// groupRunE makes a command that only groups subcommands print its help when
// called alone and refuse an unknown subcommand with a usage error.
func groupRunE(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("unknown command %q for %q; see '%s --help'", args[0], cmd.CommandPath(), cmd.CommandPath())
	}
	return cmd.Help()
}

// Argument validators that report usage errors.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("%s takes no arguments, got %q", cmd.CommandPath(), args)
	}
	return nil
}

func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("%s needs %s (got %d arguments)", cmd.CommandPath(), what, len(args))
		}
		return nil
	}
}

func rangeArgs(lo, hi int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			return usageErrorf("%s needs %s (got %d arguments)", cmd.CommandPath(), what, len(args))
		}
		return nil
	}
}

func addOutputFlag(cmd *cobra.Command, target *string) {
	cmd.Flags().StringVarP(target, "output", "o", formatTable, "output format: table or json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{formatTable, formatJSON}, cobra.ShellCompDirectiveNoFileComp))
}
