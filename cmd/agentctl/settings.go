package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/agentctl/agentctl/cmd/internal/notify"
	"github.com/agentctl/agentctl/cmd/internal/provision"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Setting keys: config.toml's keys (dotted for a key in a table).
const (
	keyConfig          = "config"
	keyStateDir        = "state_dir"
	keyStore           = "store"
	keyHost            = "host"
	keyBaseURL         = "base_url"
	keyAgentsDir       = "agents_dir"
	keyLogLevel        = "log_level"
	keyServerName      = "server_name"
	keyQuestionTimeout = "question_timeout"
	keyToolPrefixMode  = "mcp.tool_prefix_mode"
	keyKBRefresh       = "kb_refresh_interval"
	keyFirstListWait   = "first_list_wait"
	keyKBs             = "kbs"
	keyMCPServers      = "mcp_servers"
	keyNotify          = "notify"
)

// setting is one of agentctl's settings: the one table from which the
// flags, the AGENTCTL_* variables, the config file's keys and the defaults
// are all taken. Precedence: flag > environment > config file > default.
type setting struct {
	Key         string     // its name; config.toml's key when File
	Flag        string     // the flag that sets it; "" if none
	Env         string     // the environment variable that sets it; "" if none
	Default     string     // the value when nothing sets it
	DefaultHelp string     // how the default is found, when Default is ""
	Help        string     // what it is: the flag's usage, before "(env ...)"
	File        bool       // a key of config.toml
	Mounts      mount.Kind // a config.toml array of tables of mounts of this kind
	Notify      bool       // the config.toml array of [[notify]] tables (see notifyTable)
}

var settings = []setting{
	{Key: keyConfig, Flag: "config", Env: "AGENTCTL_CONFIG", DefaultHelp: "$XDG_CONFIG_HOME/agentctl/config.toml",
		Help: "config file"},
	{Key: keyStateDir, Flag: "state-dir", Env: "AGENTCTL_STATE_DIR", DefaultHelp: "$XDG_STATE_HOME/agentctl, else ~/.local/state/agentctl", File: true,
		Help: "state directory: this host's instance directories, and the store unless --store says otherwise"},
	{Key: keyStore, Flag: "store", Env: "AGENTCTL_STORE", DefaultHelp: "SQLite in the state directory", File: true,
		Help: "where records, questions and events live: a path or sqlite:PATH, or postgres://USER@HOST:PORT/DATABASE shared by many hosts (its password from PGPASSWORD or ~/.pgpass, or in the URL, never shown)"},
	// The flag is serve's and ui's own (opts.BaseURL); bound here too, so
	// that what a serve started with --base-url notifies links to it.
	{Key: keyBaseURL, Flag: "base-url", Env: "AGENTCTL_BASE_URL", File: true,
		Help: "the public URL at which `agentctl serve` is reached (https://agents.example.com): notifications link to its pages"},
	{Key: keyHost, Env: "AGENTCTL_HOST", DefaultHelp: "the host name", File: true,
		Help: "the name this host's instances carry in a shared store (instance list --host)"},
	{Key: keyAgentsDir, Flag: "agents-dir", Env: "AGENTCTL_AGENTS_DIR", DefaultHelp: "$XDG_CONFIG_HOME/agentctl/agents", File: true,
		Help: "directory of user agent definitions"},
	{Key: keyLogLevel, Flag: "log-level", Env: "AGENTCTL_LOG_LEVEL", Default: "info", File: true,
		Help: "log level on stderr: debug, info, warn, error"},
	{Key: keyServerName, Flag: "server-name", Env: "AGENTCTL_SERVER_NAME", Default: instance.DefaultServerName, File: true,
		Help: "the key S the endpoint is injected under"},
	{Key: keyQuestionTimeout, Flag: "question-timeout", Env: "AGENTCTL_QUESTION_TIMEOUT", Default: mcpserver.DefaultQuestionTimeout.String(), File: true,
		Help: "how long ask_user_question waits for an answer"},
	{Key: keyToolPrefixMode, Flag: "tool-prefix-mode", Env: "AGENTCTL_TOOL_PREFIX_MODE", Default: string(mount.PrefixModeMountName), File: true,
		Help: "how mounts without an explicit prefix get one: mount-name or off"},
	{Key: keyKBRefresh, Env: "AGENTCTL_KB_REFRESH_INTERVAL", Default: "2s", File: true,
		Help: "how stale a knowledge base's search index may get with respect to edits made outside agentctl: while a search came within the last minute (or two intervals, if longer), serving endpoints walk the folder (stat only) once per interval, all the processes sharing the index together, and not otherwise; kb search walks first if no process did within the interval"},
	{Key: keyFirstListWait, Flag: "first-list-wait", Env: "AGENTCTL_FIRST_LIST_WAIT", Default: mcpserver.DefaultFirstListWait.String(), File: true,
		Help: "how long the first tools/list of a client that follows tools/list_changed waits for slow external servers (0: not at all)"},
	{Key: keyKBs, File: true, Mounts: mount.KindKB,
		Help: "[[kbs]] tables: knowledge bases mounted by instance create"},
	{Key: keyMCPServers, File: true, Mounts: mount.KindServer,
		Help: "[[mcp_servers]] tables: external MCP servers mounted by instance create (name, command, args, env or url, headers; tool_prefix, timeout, call_timeout)"},
	{Key: keyNotify, File: true, Notify: true,
		Help: "[[notify]] tables: where notifications of questions and runs are POSTed (url, events, format, secret; see agentctl notify --help)"},
}

// settingFor is the row of key.
func settingFor(key string) setting {
	i := slices.IndexFunc(settings, func(s setting) bool { return s.Key == key })
	if i < 0 {
		panic("no setting " + key)
	}
	return settings[i]
}

// usage is the setting's flag usage.
func (s setting) usage() string {
	var paren []string
	if s.Env != "" {
		paren = append(paren, "env "+s.Env)
	}
	if s.DefaultHelp != "" {
		paren = append(paren, "default "+s.DefaultHelp)
	}
	if len(paren) == 0 {
		return s.Help
	}
	return s.Help + " (" + strings.Join(paren, "; ") + ")"
}

// addSettingFlag adds the flag of the setting key to fs.
func addSettingFlag(fs *pflag.FlagSet, key string) {
	s := settingFor(key)
	fs.String(s.Flag, s.Default, s.usage())
}

// fileKeys are config.toml's keys, sorted.
func fileKeys() []string {
	var keys []string
	for _, s := range settings {
		if s.File {
			keys = append(keys, s.Key)
		}
	}
	slices.Sort(keys)
	return keys
}

// Config is agentctl's settings for one run, resolved by one viper instance:
// the command's flags (BindPFlag) > the AGENTCTL_* variables > the config
// file > the defaults (SetDefault). viper reads variables only from the
// process (os.LookupEnv), and agentctl's come from getenv, so that Run is
// testable: the variables set are merged into viper's config map over the
// file's values. The file is read and decoded once, strictly.
type Config struct {
	getenv func(string) string
	v      *viper.Viper   // nil until load
	flags  *pflag.FlagSet // the running command's flags
	// given holds the settings given by a flag or an AGENTCTL_* variable.
	given  map[string]bool
	file   string        // the config file read; "" if none
	mounts []mount.Mount // its [[kbs]] and [[mcp_servers]], kinds set
	notify []notifyTable // its [[notify]] tables, checked
}

func newConfig(getenv func(string) string) *Config {
	return &Config{getenv: getenv}
}

type configError struct{ error }

func (e *configError) Unwrap() error { return e.error }

// load binds the command's flags, the AGENTCTL_* variables and the config
// file: flags > env > config file > defaults. It does its work once.
func (c *Config) load(flags *pflag.FlagSet) error {
	if c.v != nil {
		return nil
	}
	c.v, c.flags, c.given = viper.New(), flags, map[string]bool{}
	env := map[string]any{}
	for _, s := range settings {
		c.v.SetDefault(s.Key, s.Default)
		if f := c.flag(s); f != nil {
			_ = c.v.BindPFlag(s.Key, f) // not nil, the one error
			c.given[s.Key] = f.Changed
		}
		if s.Env != "" && c.getenv(s.Env) != "" {
			env[s.Key], c.given[s.Key] = c.getenv(s.Env), true
		}
	}
	_ = c.v.MergeConfigMap(env) // AGENTCTL_CONFIG may name the file
	if err := c.readFile(); err != nil {
		return err
	}
	return c.v.MergeConfigMap(env) // again, over the file's values
}

// String is the value of a setting in force.
func (c *Config) String(key string) string { return c.v.GetString(key) }

// flag is the running command's flag of a setting, if it has one.
func (c *Config) flag(s setting) *pflag.Flag {
	if s.Flag == "" || c.flags == nil {
		return nil
	}
	return c.flags.Lookup(s.Flag)
}

// givenFile is the configuration file --config or AGENTCTL_CONFIG named,
// absolute, or "" for the default.
func (c *Config) givenFile() string {
	path := c.String(keyConfig)
	if path == "" {
		return ""
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// readFile decodes config.toml strictly (a typo is an error, not a silently
// ignored key).
func (c *Config) readFile() error {
	path := c.String(keyConfig)
	explicit := path != ""
	if !explicit {
		path = filepath.Join(c.configHome(), "agentctl", "config.toml")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if !explicit && errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return &configError{fmt.Errorf("config file: %w", err)}
	}
	cf, err := decodeConfig(string(data))
	if err != nil {
		return &configError{fmt.Errorf("%s: %v", path, err)}
	}
	mounts := cf.mounts
	dir := filepath.Dir(path)
	for i, m := range mounts {
		if m.Kind == mount.KindKB && m.Path != "" && !filepath.IsAbs(m.Path) {
			mounts[i].Path = filepath.Join(dir, m.Path)
		}
	}
	c.file, c.mounts, c.notify = path, mounts, cf.notify
	return c.v.MergeConfigMap(cf.values)
}

// configFile is what config.toml holds.
type configFile struct {
	values map[string]any // the scalar settings by key (dotted for a key in a table)
	mounts []mount.Mount  // [[kbs]] and [[mcp_servers]]
	notify []notifyTable  // [[notify]], checked
}

// notifyTable is a [[notify]] table of config.toml: a receiver of
// notifications (see notify.go).
type notifyTable struct {
	URL string `toml:"url"`
	// Events: nil (left out) is every event; an empty list is an error.
	Events *[]string `toml:"events"`
	Format string    `toml:"format"`
	// Secret is the HMAC key, or env:NAME to read it from the variable
	// NAME of the process that delivers.
	Secret *string `toml:"secret"`
}

// secretEnvPrefix starts a secret read from the environment: env:NAME.
const secretEnvPrefix = "env:"

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// target is t as a delivery target (its secret not read yet), its
// values checked; an error names the key at fault.
func (t notifyTable) target() (notify.Target, error) {
	nt := notify.Target{URL: t.URL, Format: t.Format}
	if t.Events != nil {
		if len(*t.Events) == 0 {
			return nt, fmt.Errorf("events is empty: leave it out for every event, or list some of %s", strings.Join(instance.NotifyEvents(), ", "))
		}
		nt.Events = *t.Events
	}
	if err := nt.Validate(); err != nil {
		return nt, err
	}
	if t.Secret != nil {
		sec := *t.Secret
		name, fromEnv := strings.CutPrefix(sec, secretEnvPrefix)
		switch {
		case sec == "":
			return nt, errors.New("secret is empty: leave it out to send unsigned, or write the key, or env:NAME to read it from the variable NAME")
		case fromEnv && !envNameRE.MatchString(name):
			return nt, fmt.Errorf("secret %q: env: takes the name of an environment variable (env:AGENTCTL_NOTIFY_SECRET)", sec)
		}
	}
	return nt, nil
}

// decodeConfig decodes config.toml once: the scalar settings by key
// (dotted for a key in a table), the mount tables as mounts, the [[notify]]
// tables checked. A key the table does not know is an error naming it.
func decodeConfig(data string) (*configFile, error) {
	var top map[string]toml.Primitive
	md, err := toml.Decode(data, &top)
	if err != nil {
		return nil, err
	}
	values := map[string]any{}
	var mounts []mount.Mount
	var notifies []notifyTable
	for _, s := range settings {
		if !s.File {
			continue
		}
		// Walk down the tables to the key's value; a table is decoded
		// (and so known) even when the key is not in it.
		path := strings.Split(s.Key, ".")
		prims := top
		for i, table := range path[:len(path)-1] {
			if !md.IsDefined(path[:i+1]...) {
				prims = nil
				break
			}
			var sub map[string]toml.Primitive
			if err := md.PrimitiveDecode(prims[table], &sub); err != nil {
				return nil, fmt.Errorf("%s: %v", table, err)
			}
			prims = sub
		}
		if prims == nil || !md.IsDefined(path...) {
			continue
		}
		last := path[len(path)-1]
		if s.Notify {
			if err := md.PrimitiveDecode(prims[last], &notifies); err != nil {
				return nil, fmt.Errorf("%s: %v", s.Key, err)
			}
			seen := map[string]int{}
			for i, t := range notifies {
				if _, err := t.target(); err != nil {
					return nil, fmt.Errorf("[[%s]] #%d: %v", s.Key, i+1, err)
				}
				if j, dup := seen[t.URL]; dup {
					return nil, fmt.Errorf("[[%s]] #%d: url %q is #%d's too; give each receiver one table", s.Key, i+1, notify.Redact(t.URL), j+1)
				}
				seen[t.URL] = i
			}
			continue
		}
		if s.Mounts != "" {
			var ms []mount.Mount
			if err := md.PrimitiveDecode(prims[last], &ms); err != nil {
				return nil, fmt.Errorf("%s: %v", s.Key, err)
			}
			for i := range ms {
				ms[i].Kind = s.Mounts
			}
			mounts = append(mounts, ms...)
			continue
		}
		var val string
		if err := md.PrimitiveDecode(prims[last], &val); err != nil {
			return nil, fmt.Errorf("%s: %v", s.Key, err)
		}
		values[s.Key] = val
	}
	if k, table, n := unknownKey(md); k != "" {
		if table != "" {
			return nil, fmt.Errorf("[[%s]] #%d: unknown key %q (a [[%s]] table's keys: %s)", table, n, k, table, strings.Join(tableKeys(table), ", "))
		}
		return nil, fmt.Errorf("unknown key %q (known keys: %s)", k, strings.Join(fileKeys(), ", "))
	}
	return &configFile{values: values, mounts: mounts, notify: notifies}, nil
}

// unknownKey is the file's first key that is not a setting: a scalar the
// file lacks, or a key of an array of tables ([[notify]], [[kbs]],
// [[mcp_servers]]) that its tables do not take: then table names that
// array, n is the table's number (from 1), and key is the table's own key.
func unknownKey(md toml.MetaData) (key, table string, n int) {
	undecoded := map[string]bool{}
	for _, k := range md.Undecoded() {
		undecoded[k.String()] = true
	}
	tables := map[string]int{} // array of tables -> the tables seen so far
	for _, k := range md.Keys() {
		name := k.String()
		var array *setting
		for i, s := range settings {
			if s.File && (s.Mounts != "" || s.Notify) && k[0] == s.Key {
				array = &settings[i]
			}
		}
		if array != nil {
			if len(k) == 1 {
				tables[array.Key]++ // a [[table]] header: the next table
				continue
			}
			if undecoded[name] {
				return strings.Join(k[1:], "."), array.Key, tables[array.Key]
			}
			continue
		}
		known := slices.ContainsFunc(settings, func(s setting) bool {
			return s.File && (s.Key == name || strings.HasPrefix(s.Key, name+"."))
		})
		if !known {
			return name, "", 0
		}
	}
	return "", "", 0
}

// tableKeys are the keys a table of the array of tables named key takes.
func tableKeys(key string) []string {
	var v any = mount.Mount{}
	if key == keyNotify {
		v = notifyTable{}
	}
	kind := ""
	if s := settingFor(key); s.Mounts != "" {
		kind = map[mount.Kind]string{mount.KindKB: "kb", mount.KindServer: "server"}[s.Mounts]
	}
	var keys []string
	t := reflect.TypeOf(v)
	for i := range t.NumField() {
		f := t.Field(i)
		if k := f.Tag.Get("kind"); k != "" && k != kind {
			continue // the other kind's
		}
		if tag := strings.Split(f.Tag.Get("toml"), ",")[0]; tag != "" && tag != "-" {
			keys = append(keys, tag)
		}
	}
	return keys
}

// path is a path setting; a relative path from the config file is relative
// to the file, like the file's [[kbs]] paths (from a flag or the
// environment, to the working directory).
func (c *Config) path(key string) string {
	p := c.String(key)
	if p != "" && !filepath.IsAbs(p) && !c.given[key] && c.file != "" {
		// ~/ is the home directory, as a shell would have made it of a
		// flag's value; it made a directory named "~" beside the file.
		if rest, ok := strings.CutPrefix(p, "~/"); ok || p == "~" {
			return filepath.Join(c.home(), rest)
		}
		return filepath.Join(filepath.Dir(c.file), p)
	}
	return p
}

func (c *Config) home() string {
	if h := c.getenv("HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

func (c *Config) configHome() string {
	if d := c.getenv("XDG_CONFIG_HOME"); d != "" {
		return d
	}
	return filepath.Join(c.home(), ".config")
}

// StateDir is where the store lives: --state-dir, AGENTCTL_STATE_DIR, the
// config file, else $XDG_STATE_HOME/agentctl, else ~/.local/state/agentctl.
func (c *Config) StateDir() string {
	if d := c.path(keyStateDir); d != "" {
		return d
	}
	if d := c.getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "agentctl")
	}
	return filepath.Join(c.home(), ".local", "state", "agentctl")
}

// Store is the store's URL: --store, AGENTCTL_STORE, the config file's
// store, else "" (SQLite in the state directory). The endpoint entries that
// create writes name the store without its password ([instance.Store]'s
// EndpointEntry); when such a URL comes as --store and AGENTCTL_STORE
// names the same database with a password, the password is taken from
// there (as from PGPASSWORD or ~/.pgpass, which the driver reads itself).
func (c *Config) Store() instance.StoreURL {
	v := instance.StoreURL(c.String(keyStore))
	// A relative SQLite file named by the config file is relative to that
	// file, as its other paths are: it was the working directory's, so
	// each directory a command ran in had a database of its own.
	if p, ok := v.SQLitePath(""); ok && v != "" && !filepath.IsAbs(p) && !c.given[keyStore] && c.file != "" {
		return instance.StoreURL("sqlite:" + filepath.Join(filepath.Dir(c.file), p))
	}
	if env := instance.StoreURL(c.getenv(settingFor(keyStore).Env)); env != "" && env != v && v.SameDatabase(env) {
		return env
	}
	return v
}

// HostName is this host's name in a shared store: AGENTCTL_HOST, the
// config file's host, else the host name.
func (c *Config) HostName() string {
	if h := c.String(keyHost); h != "" {
		return h
	}
	h, _ := os.Hostname()
	return h
}

// AgentsDir is where user agent definitions live.
func (c *Config) AgentsDir() string {
	if d := c.path(keyAgentsDir); d != "" {
		return d
	}
	return filepath.Join(c.configHome(), "agentctl", "agents")
}

// invalid reports a bad value of a setting where it came from: a bad flag is
// a usage error; a bad environment variable or config-file value is invalid
// configuration.
func (c *Config) invalid(key, how string) error {
	s := settingFor(key)
	val := c.String(key)
	if f := c.flag(s); f != nil && f.Changed {
		return usageErrorf("invalid --%s %q: %s", f.Name, val, how)
	}
	if s.Env != "" && c.getenv(s.Env) != "" {
		return &configError{fmt.Errorf("invalid %s=%q in the environment: %s", s.Env, val, how)}
	}
	return &configError{fmt.Errorf("%s: invalid %s = %q: %s", c.file, key, val, how)}
}

// QuestionTimeout is the question timeout in force.
func (c *Config) QuestionTimeout() (time.Duration, error) {
	d, err := time.ParseDuration(c.String(keyQuestionTimeout))
	if err != nil || d <= 0 {
		// Go's durations end at about 292 years: a longer one does
		// not parse either.
		return 0, c.invalid(keyQuestionTimeout, "use a positive duration of at most 2562047h (about 292 years), such as 10m or 90s")
	}
	return d, nil
}

// KBRefreshInterval is how stale a knowledge base's search index may get
// with respect to edits made outside agentctl.
func (c *Config) KBRefreshInterval() (time.Duration, error) {
	d, err := time.ParseDuration(c.String(keyKBRefresh))
	if err != nil || d <= 0 {
		return 0, c.invalid(keyKBRefresh, "use a positive duration such as 2s or 1m")
	}
	return d, nil
}

// FirstListWait is the first tools/list's wait in force, for clients that
// follow tools/list_changed; 0 answers at once with what is ready.
func (c *Config) FirstListWait() (time.Duration, error) {
	d, err := time.ParseDuration(c.String(keyFirstListWait))
	if err != nil || d < 0 {
		return 0, c.invalid(keyFirstListWait, "use a duration such as 300ms or 1s, or 0 to answer at once")
	}
	return d, nil
}

// endpointSettings checks the settings every start of an endpoint reads
// (mcp serve refuses to start on a bad one): create and mount add refuse
// them before an instance whose client could never start its endpoint.
func endpointSettings(c *Config) error {
	if _, err := c.LogLevel(); err != nil {
		return err
	}
	if _, err := c.FirstListWait(); err != nil {
		return err
	}
	_, err := c.KBRefreshInterval()
	return err
}

// LogLevel is the endpoint's log level in force.
func (c *Config) LogLevel() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.String(keyLogLevel))); err != nil {
		return 0, c.invalid(keyLogLevel, "use debug, info, warn or error")
	}
	return l, nil
}

// PrefixMode is the tool prefix mode in force.
func (c *Config) PrefixMode() (mount.PrefixMode, error) {
	m, err := mount.ParsePrefixMode(c.String(keyToolPrefixMode))
	if err != nil {
		// Named where it came from: the flag, the environment or the file.
		return "", c.invalid(keyToolPrefixMode, "use mount-name (derive prefixes from mount names) or off (no prefixes)")
	}
	return m, nil
}

// FileMounts are the config file's mounts, checked, in the file's order:
// [[kbs]] first, then [[mcp_servers]]. Relative [[kbs]] paths and relative
// [[mcp_servers]] commands are taken from the config file's directory (see
// [provision.CheckCommands]).
func (c *Config) FileMounts() ([]mount.Mount, error) {
	for _, m := range c.mounts {
		if err := m.Validate(); err != nil {
			table := keyKBs
			if m.Kind == mount.KindServer {
				table = keyMCPServers
			}
			return nil, &configError{fmt.Errorf("%s: [[%s]]: %w", c.file, table, err)}
		}
	}
	// A relative command is the config file's, like a relative [[kbs]] path.
	return provision.CheckCommands(c.mounts, filepath.Dir(c.file), "the directory of "+c.file)
}
