package agents

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Run is a definition's launch recipe, the `[run]` table: how `agentctl
// instance run` starts the client with an instance, and what `instance env`
// prints for people who start it themselves. It is data, observed with the
// real programs; a user definition overrides it like any other key.
//
// The command line is, in this order:
//
//	Program ConfigArgs... (Headless... | Interactive...) [Unattended...] CLIENT-ARGS...
//
// with ConfigEnv added to the user's environment. Unattended applies to
// headless runs only: in an interactive run a person confirms calls. Each
// argument and environment value may hold these placeholders ([RunPlaceholders]):
//
//	{config}           the MCP configuration file the instance wrote for the client
//	{config_dir}       its directory
//	{server}           the server name (the key of the endpoint's entry)
//	{instance}         the instance id
//	{workspace}        the workspace directory (the client's working directory)
//	{prompt}           the prompt (headless form only, where it must appear)
//	{entry_toml}       the endpoint's entry as a TOML inline table (Codex -c overrides)
//	{command_line}     the endpoint's command line, shell-quoted (Goose --with-extension)
//	{tool_timeout_sec} the tool-call timeout the instance needs, in seconds
//	{tool_timeout_ms}  the same in milliseconds
type Run struct {
	// Program is the executable, looked up in PATH; default Command[0].
	Program string `toml:"program" json:"program,omitempty"`
	// ConfigArgs tell the client where the instance's MCP configuration is.
	ConfigArgs []string `toml:"config_args" json:"config_args,omitempty"`
	// ConfigEnv does the same through environment variables.
	ConfigEnv map[string]string `toml:"config_env" json:"config_env,omitempty"`
	// Headless is the one-prompt form; it holds {prompt} once. Empty when
	// the client has none that agentctl can drive: NoHeadless says why.
	Headless []string `toml:"headless" json:"headless,omitempty"`
	// NoHeadless says why there is no headless form.
	NoHeadless string `toml:"no_headless" json:"no_headless,omitempty"`
	// Interactive is the form for a person at a terminal (often empty:
	// the program and its configuration arguments are enough).
	Interactive []string `toml:"interactive" json:"interactive,omitempty"`
	// Unattended lets a headless run use the endpoint's tools without a
	// person confirming each call (Claude Code's --allowedTools).
	Unattended []string `toml:"unattended" json:"unattended,omitempty"`
	// WorkspaceConfig says that the client reads MCP servers only from its
	// file in the workspace (Droid's .factory/mcp.json), so the entry must
	// be there: `instance connect` puts it there.
	WorkspaceConfig bool `toml:"workspace_config" json:"workspace_config,omitempty"`
	// Unsupported, when set, says why agentctl cannot start this client
	// at all (an editor, say); `instance run` refuses with it.
	Unsupported string `toml:"unsupported" json:"unsupported,omitempty"`
	// ToolTimeout is how long the client started by this recipe lets each
	// tool call take when the recipe cannot tell it (Goose gives an
	// extension added with --with-extension its default, whatever
	// config.yaml says); `instance run` warns when a question may wait
	// longer. Zero: the recipe passes the timeout the instance needs.
	ToolTimeout Duration `toml:"tool_timeout" json:"tool_timeout,omitempty"`
	// ConfigRootOwned says that the client reads the file {config} names
	// only when it and every directory above it are owned by root and
	// writable by nobody else (Gemini CLI's system settings since 0.61:
	// otherwise it skips the file with a warning and runs without the
	// endpoint). Where that does not hold, `instance run` refuses with the
	// fix, unless `instance connect` has put the entry where the client
	// reads it anyway (the workspace's or the user's file).
	ConfigRootOwned bool `toml:"config_root_owned" json:"config_root_owned,omitempty"`
	// RewritesConfig says that the client rewrites the configuration file
	// it is handed while it runs (Qwen Code, Cline), with a mode of its
	// own: `instance run` hands it a private per-run copy, removed when
	// the run ends, so the instance's file (and any token in it) keeps its
	// mode 0600 and its content.
	RewritesConfig bool `toml:"rewrites_config" json:"rewrites_config,omitempty"`
	// KnownIssue, when set, is a known defect of the client that affects
	// agentctl's runs, naming the upstream issue: `instance run` prints it
	// as a warning before a headless run starts.
	KnownIssue string `toml:"known_issue" json:"known_issue,omitempty"`
}

// RunPlaceholders lists the placeholders a [Run] recipe may use.
var RunPlaceholders = []string{
	"{config}", "{config_dir}", "{server}", "{instance}", "{workspace}", "{prompt}",
	"{entry_toml}", "{command_line}", "{tool_timeout_sec}", "{tool_timeout_ms}",
}

// ProgramOrDefault is the program `instance run` starts.
func (d *Definition) ProgramOrDefault() string {
	if d.Run.Program != "" {
		return d.Run.Program
	}
	if len(d.Command) > 0 {
		return d.Command[0]
	}
	return d.ID
}

// ExpandRun replaces the placeholders of one recipe argument with their
// values (keys as in [RunPlaceholders], without braces). A placeholder
// without a value is left as written.
func ExpandRun(arg string, values map[string]string) string {
	if !strings.Contains(arg, "{") {
		return arg
	}
	var b strings.Builder
	for t := arg; t != ""; {
		i := strings.IndexByte(t, '{')
		if i < 0 {
			b.WriteString(t)
			break
		}
		b.WriteString(t[:i])
		t = t[i:]
		j := strings.IndexByte(t, '}')
		if j < 0 {
			b.WriteString(t)
			break
		}
		if v, ok := values[t[1:j]]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(t[:j+1])
		}
		t = t[j+1:]
	}
	return b.String()
}

// validateRun checks a recipe: known placeholders only, {prompt} exactly
// once in the headless form and nowhere else, and a reason wherever a form
// is missing.
func (d *Definition) validateRun() *fieldError {
	r := d.Run
	if r.Unsupported != "" {
		return nil
	}
	lists := []struct {
		key  string
		args []string
	}{
		{"run.config_args", r.ConfigArgs}, {"run.headless", r.Headless},
		{"run.interactive", r.Interactive}, {"run.unattended", r.Unattended},
	}
	for _, l := range lists {
		for _, a := range l.args {
			if err := checkPlaceholders(a); err != nil {
				return &fieldError{l.key, err.Error()}
			}
			if l.key != "run.headless" && strings.Contains(a, "{prompt}") {
				return &fieldError{l.key, fmt.Sprintf("%q: {prompt} belongs in run.headless only", a)}
			}
		}
	}
	for k, v := range r.ConfigEnv {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return &fieldError{"run.config_env", fmt.Sprintf("%q is not an environment variable name", k)}
		}
		if err := checkPlaceholders(v); err != nil {
			return &fieldError{"run.config_env." + k, err.Error()}
		}
		if strings.Contains(v, "{prompt}") {
			return &fieldError{"run.config_env." + k, "{prompt} belongs in run.headless only"}
		}
	}
	n := 0
	for _, a := range r.Headless {
		n += strings.Count(a, "{prompt}")
	}
	if !r.WorkspaceConfig && !r.reachesEndpoint() {
		return &fieldError{"run.config_args", "the recipe never tells the client where the instance's MCP configuration is, so the client would run without agentctl's endpoint: " +
			"pass {config} (or {config_dir}, {entry_toml}, {command_line}) in run.config_args or run.config_env, or set run.workspace_config = true if the client reads only its own file (`instance connect` puts the entry there)"}
	}
	switch {
	case len(r.Headless) == 0 && r.NoHeadless == "":
		return &fieldError{"run.headless", `missing; give the one-prompt form, such as ["-p", "{prompt}"], or say why there is none in run.no_headless`}
	case len(r.Headless) > 0 && n != 1:
		return &fieldError{"run.headless", fmt.Sprintf("%q has {prompt} %d times; the headless form passes the prompt once", r.Headless, n)}
	}
	return nil
}

// reachesEndpoint reports whether the recipe passes the client the
// instance's configuration, or the endpoint's entry, in some form.
func (r *Run) reachesEndpoint() bool {
	for _, l := range [][]string{r.ConfigArgs, r.Headless, r.Interactive, r.Unattended, slices.Collect(maps.Values(r.ConfigEnv))} {
		for _, a := range l {
			for _, p := range []string{"{config}", "{config_dir}", "{entry_toml}", "{command_line}"} {
				if strings.Contains(a, p) {
					return true
				}
			}
		}
	}
	return false
}

func checkPlaceholders(s string) error {
	for t := s; ; {
		i := strings.IndexByte(t, '{')
		if i < 0 {
			return nil
		}
		t = t[i:]
		j := strings.IndexByte(t, '}')
		if j < 0 {
			return nil // a lone brace is literal text
		}
		if p := t[:j+1]; !slices.Contains(RunPlaceholders, p) && isPlaceholderName(p[1:j]) {
			return fmt.Errorf("%q has the unknown placeholder %s (known: %s)", s, p, strings.Join(RunPlaceholders, " "))
		}
		t = t[j+1:]
	}
}

// isPlaceholderName reports whether s looks like a placeholder name
// (lower-case letters and '_'), as opposed to literal braces such as a
// TOML inline table written into an argument.
func isPlaceholderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c == '_') {
			return false
		}
	}
	return true
}
