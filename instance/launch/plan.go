// Package launch starts an instance's client program the way its agent
// definition's [agents.Run] recipe says: [New] turns the recipe and the
// instance record into a [Plan] (pure: the command line, the working
// directory and the environment changes), and [Plan.Exec] runs it with the
// user's terminal or pipes, forwarding signals and returning the client's
// exit code. `agentctl instance run`, `instance run --dry-run` and
// `instance env` are built on it.
package launch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/instance"
)

// InstanceEnv is the environment variable every run sets to the instance id.
const InstanceEnv = "AGENTCTL_INSTANCE"

// Mode is how the client runs.
type Mode string

// The modes of a run.
const (
	// Headless passes one prompt; the client works and exits.
	Headless Mode = instance.RunHeadless
	// Interactive hands the terminal to the client.
	Interactive Mode = instance.RunInteractive
)

// Options are the inputs of [New] besides the recipe and the record.
type Options struct {
	Mode Mode
	// Prompt is the headless run's prompt.
	Prompt string
	// ClientArgs are added at the end of the command line as given.
	ClientArgs []string
	// Entry is the endpoint's entry as the instance's configuration holds
	// it (command and arguments of `agentctl mcp serve`).
	Entry instance.ServerEntry
	// OwnEntry, when set, is the instance's own Codex entry as its
	// configuration file holds it (read with [instance.InstanceEntry] when
	// unset and the recipe names {entry_toml}): {entry_toml}
	// is made from it, so an HTTP instance's run points Codex at its URL
	// with its token.
	OwnEntry map[string]any
	// ToolTimeout is the tool-call timeout the instance needs (its
	// question timeout and a margin).
	ToolTimeout time.Duration
	// WorkspaceConfigured reports whether the client's own file in the
	// workspace (or the user's) already holds the endpoint's entry, and
	// otherwise which file `instance connect` would put it in and with
	// which --scope ("" for the default); asked only for recipes with
	// WorkspaceConfig.
	WorkspaceConfigured func() (path, scope string, ok bool)
	// ConfigRefusal, asked only for recipes with ConfigRootOwned, says why
	// the client would ignore the instance's file ([instance.RootOwnedRefusal]),
	// or "" if it would not.
	ConfigRefusal func() string
	// Warning, when set, is what the run should say first (a tool timeout
	// the client started this way cannot be told).
	Warning string
	// Preview builds the plan of a run that will not start (--dry-run,
	// `instance env`): what would refuse the run (the client's workspace
	// file not connected yet) is a warning instead.
	Preview bool
}

// Plan is one run of a client: what [Plan.Exec] starts, and what `--dry-run`
// and `instance env` print.
type Plan struct {
	Agent   string `json:"agent"`
	Mode    Mode   `json:"mode"`
	Program string `json:"program"`
	// Args are the arguments after the program.
	Args []string `json:"args"`
	// Dir is the working directory: the instance's workspace.
	Dir string `json:"dir"`
	// Env are the variables added to the user's environment, in order.
	Env []EnvVar `json:"env"`
	// Log is where a headless run's output is copied ("" for an
	// interactive run, whose output is the terminal's).
	Log string `json:"log,omitempty"`
	// Warnings are what the run says on stderr before it starts.
	Warnings []string `json:"warnings,omitempty"`

	// path is the program as found by LookPath, once it has been.
	path string
}

// EnvVar is one environment variable a run sets.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// NotRunnableError says why a definition's client cannot be run the way
// asked (no recipe, no headless form, an editor).
type NotRunnableError struct {
	Agent string
	Msg   string
}

func (e *NotRunnableError) Error() string { return e.Agent + ": " + e.Msg }

// New builds the plan of one run of rec's client with def's recipe.
func New(def *agents.Definition, rec *instance.Record, o Options) (*Plan, error) {
	r := def.Run
	switch {
	case r.Unsupported != "":
		// It may name the instance as {instance}, expanded as a recipe's
		// arguments are.
		return nil, &NotRunnableError{def.ID, "agentctl cannot start this client: " + agents.ExpandRun(r.Unsupported, map[string]string{"instance": rec.ID})}
	case len(r.Headless) == 0 && r.NoHeadless == "" && len(r.Interactive) == 0 && len(r.ConfigArgs) == 0 && len(r.ConfigEnv) == 0:
		return nil, &NotRunnableError{def.ID, fmt.Sprintf("the definition (%s) has no [run] recipe; add one, as in `agentctl agents show claude-code -o json`", def.Source)}
	case o.Mode == Headless && len(r.Headless) == 0:
		return nil, &NotRunnableError{def.ID, "this client has no headless form agentctl can drive (" + r.NoHeadless + "); run it without --prompt, from a terminal"}
	}
	var warnings []string
	if r.WorkspaceConfig && o.WorkspaceConfigured != nil {
		if path, scope, ok := o.WorkspaceConfigured(); !ok {
			cmd := "agentctl instance connect " + rec.ID
			if scope != "" {
				cmd += " --scope " + scope
			}
			msg := fmt.Sprintf("this client reads MCP servers only from %s; put the instance's entry there first with `%s`", path, cmd)
			if !o.Preview {
				return nil, &NotRunnableError{def.ID, msg}
			}
			warnings = append(warnings, "warning: "+def.ID+": "+msg+"; until then a run is refused")
		}
	}
	if r.ConfigRootOwned && o.ConfigRefusal != nil {
		if why := o.ConfigRefusal(); why != "" {
			connected := false
			if o.WorkspaceConfigured != nil {
				_, _, connected = o.WorkspaceConfigured()
			}
			if !connected {
				msg := fmt.Sprintf("this client ignores the settings file agentctl wrote for it (%s) unless it and every directory above it are owned by root and writable by nobody else, and %s; "+
					"put the instance's entry where the client reads it with `agentctl instance connect %s` (runs then use that), or keep the state directory (--state-dir, AGENTCTL_STATE_DIR) under such directories",
					rec.MCPConfigPath, why, rec.ID)
				if !o.Preview {
					return nil, &NotRunnableError{def.ID, msg}
				}
				warnings = append(warnings, "warning: "+def.ID+": "+msg+"; until then a run is refused")
			}
		}
	}
	if rec.Transport.Kind == instance.TransportHTTP && usesPlaceholder(r, "{command_line}") {
		return nil, &NotRunnableError{def.ID, fmt.Sprintf("this instance is reached over HTTP (%s) with a bearer token, and this client's recipe adds the endpoint by command line, "+
			"which cannot carry a header (Goose's --with-streamable-http-extension takes a URL only); copy the extension from the instance's own %s into the client's configuration and start it yourself, "+
			"or create a --transport stdio instance", rec.Transport.URL, rec.MCPConfigPath)}
	}
	// Several clients take the prompt as a positional argument: one that
	// begins with '-' ("- fix the login") would be read as a flag. A
	// leading space keeps it a prompt and means nothing to a model.
	if strings.HasPrefix(o.Prompt, "-") {
		o.Prompt = " " + o.Prompt
	}
	// A token never goes on the command line, where every local user can
	// read it (ps): Codex is told to read it from an environment variable.
	// {entry_toml} is the instance's own entry as its file holds it,
	// remote or not (Codex's -c override).
	if o.OwnEntry == nil && usesPlaceholder(def.Run, "{entry_toml}") {
		own, err := instance.InstanceEntry(rec)
		if err != nil && rec.Transport.Kind == instance.TransportHTTP {
			return nil, err
		}
		o.OwnEntry, _ = own.(map[string]any)
	}
	var token string
	o.OwnEntry, token = bearerToEnv(o.OwnEntry)
	values := placeholderValues(rec, o)
	expand := func(args []string) []string {
		out := make([]string, len(args))
		for i, a := range args {
			out[i] = agents.ExpandRun(a, values)
		}
		return out
	}
	p := &Plan{
		Agent:   def.ID,
		Mode:    o.Mode,
		Program: def.ProgramOrDefault(),
		Dir:     rec.Workspace,
	}
	if o.Mode == Headless {
		p.Log = filepath.Join(rec.Dir, instance.RunLogFile)
	}
	if o.Warning != "" {
		warnings = append(warnings, o.Warning)
	}
	if r.KnownIssue != "" && o.Mode == Headless {
		warnings = append(warnings, "warning: known "+def.ID+" issue: "+r.KnownIssue)
	}
	p.Warnings = warnings
	p.Args = append(p.Args, expand(r.ConfigArgs)...)
	if o.Mode == Headless {
		p.Args = append(p.Args, expand(r.Headless)...)
		p.Args = append(p.Args, expand(r.Unattended)...)
	} else {
		p.Args = append(p.Args, expand(r.Interactive)...)
	}
	p.Args = append(p.Args, o.ClientArgs...)
	p.Env = append(p.Env, EnvVar{InstanceEnv, rec.ID})
	names := make([]string, 0, len(r.ConfigEnv))
	for k := range r.ConfigEnv {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		p.Env = append(p.Env, EnvVar{k, agents.ExpandRun(r.ConfigEnv[k], values)})
	}
	if token != "" {
		p.Env = append(p.Env, EnvVar{TokenEnv, token})
	}
	if p.Args == nil {
		p.Args = []string{}
	}
	return p, nil
}

// usesPlaceholder reports whether any argument or value of r holds ph.
func usesPlaceholder(r agents.Run, ph string) bool {
	for _, list := range [][]string{r.ConfigArgs, r.Headless, r.Interactive, r.Unattended} {
		for _, a := range list {
			if strings.Contains(a, ph) {
				return true
			}
		}
	}
	for _, v := range r.ConfigEnv {
		if strings.Contains(v, ph) {
			return true
		}
	}
	return false
}

func placeholderValues(rec *instance.Record, o Options) map[string]string {
	secs := int64(math.Ceil(o.ToolTimeout.Seconds()))
	return map[string]string{
		"config":           rec.MCPConfigPath,
		"config_dir":       filepath.Dir(rec.MCPConfigPath),
		"server":           rec.ServerName,
		"instance":         rec.ID,
		"workspace":        rec.Workspace,
		"prompt":           o.Prompt,
		"entry_toml":       entryTOML(o.OwnEntry, o.Entry, secs),
		"command_line":     ShellJoin(append([]string{o.Entry.Command}, o.Entry.Args...)),
		"tool_timeout_sec": strconv.FormatInt(secs, 10),
		"tool_timeout_ms":  strconv.FormatInt(o.ToolTimeout.Milliseconds(), 10),
	}
}

// TokenEnv carries an HTTP instance's bearer token to a client that reads
// it from the environment (Codex's bearer_token_env_var).
const TokenEnv = "AGENTCTL_TOKEN"

// bearerToEnv takes the bearer token out of a Codex entry's http_headers
// and names [TokenEnv] in bearer_token_env_var instead; it returns the
// entry (a copy when changed) and the token, "" when there is none.
func bearerToEnv(own map[string]any) (map[string]any, string) {
	// Decoded from the file, the headers are a map[string]any; built by
	// instance.ClientEntry, a map[string]string.
	h := map[string]any{}
	switch headers := own["http_headers"].(type) {
	case map[string]any:
		maps.Copy(h, headers)
	case map[string]string:
		for k, v := range headers {
			h[k] = v
		}
	}
	auth, _ := h["Authorization"].(string)
	scheme, token, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return own, ""
	}
	m := maps.Clone(own)
	delete(h, "Authorization")
	if len(h) == 0 {
		delete(m, "http_headers")
	} else {
		m["http_headers"] = h
	}
	m["bearer_token_env_var"] = TokenEnv
	return m, token
}

// entryTOML writes the endpoint's entry as a TOML inline table, the value
// of a Codex `-c mcp_servers.S=...` override: own (the instance's own Codex
// entry, remote or not) when set, else e's command, arguments and
// environment; with tool_timeout_sec set to timeoutSec when that is
// positive. Keys come in the order command, args, env, url, then the rest
// sorted, so that the override reads as the file does.
func entryTOML(own map[string]any, e instance.ServerEntry, timeoutSec int64) string {
	m := maps.Clone(own)
	if m == nil {
		m = map[string]any{"command": e.Command, "args": e.Args}
		if len(e.Env) > 0 {
			m["env"] = e.Env
		}
	}
	if timeoutSec > 0 {
		m["tool_timeout_sec"] = timeoutSec
	}
	return tomlInline(m)
}

// leadingKeys are written first in an entry, in this order.
var leadingKeys = []string{"command", "args", "env", "url"}

// tomlInline writes m as a TOML inline table.
func tomlInline(m map[string]any) string {
	keys := slices.Sorted(maps.Keys(m))
	slices.SortStableFunc(keys, func(a, b string) int {
		ia, ib := slices.Index(leadingKeys, a), slices.Index(leadingKeys, b)
		if ia < 0 {
			ia = len(leadingKeys)
		}
		if ib < 0 {
			ib = len(leadingKeys)
		}
		return ia - ib
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = tomlKey(k) + " = " + tomlValue(m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// tomlKey is k as a TOML key: bare when it can be.
func tomlKey(k string) string {
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return tomlString(k)
		}
	}
	if k == "" {
		return `""`
	}
	return k
}

// tomlValue writes v (as decoded from TOML or built by
// [instance.ClientEntry]) as a TOML inline value.
func tomlValue(v any) string {
	switch t := v.(type) {
	case string:
		return tomlString(t)
	case bool:
		return strconv.FormatBool(t)
	case int:
		return strconv.Itoa(t)
	case int64:
		return strconv.FormatInt(t, 10)
	case float64:
		return strconv.FormatFloat(t, 'g', -1, 64)
	case []string:
		q := make([]string, len(t))
		for i, s := range t {
			q[i] = tomlString(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	case []any:
		q := make([]string, len(t))
		for i, e := range t {
			q[i] = tomlValue(e)
		}
		return "[" + strings.Join(q, ", ") + "]"
	case map[string]string:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = e
		}
		return tomlInline(m)
	case map[string]any:
		return tomlInline(t)
	}
	return tomlString(fmt.Sprint(v))
}

// tomlString quotes s as a TOML basic string: JSON's escapes are TOML's.
func tomlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// CommandLine is the plan's command line, shell-quoted.
func (p *Plan) CommandLine() string {
	return ShellJoin(append([]string{p.Program}, p.Args...))
}

// ShellJoin quotes each word for a POSIX shell, only where needed, and
// joins them with spaces.
func ShellJoin(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = ShellQuote(w)
	}
	return strings.Join(q, " ")
}

// ShellQuote quotes s for a POSIX shell: as it is when it holds only
// characters no shell treats specially, else in single quotes.
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("@%+=:,./_-", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
