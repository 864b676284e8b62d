package agents

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Namespacing is what a client adds to an MCP tool name before its model sees it.
type Namespacing string

// The namespacing styles a client can have.
const (
	// NamespacingNone: the client puts every server's tools into one flat namespace.
	NamespacingNone Namespacing = "none"
	// NamespacingPrefix: the client puts the server name (and more) before the tool name.
	NamespacingPrefix Namespacing = "prefix"
	// NamespacingSuffix: the client appends the server name to the tool name (Auggie).
	NamespacingSuffix Namespacing = "suffix"
)

// Namespacings lists the valid [Namespacing] values.
var Namespacings = []Namespacing{NamespacingNone, NamespacingPrefix, NamespacingSuffix}

// UnmarshalText makes an unknown namespacing a decode error.
func (n *Namespacing) UnmarshalText(b []byte) error {
	v := Namespacing(b)
	for _, ok := range Namespacings {
		if v == ok {
			*n = v
			return nil
		}
	}
	return fmt.Errorf("invalid namespacing %q (want one of none, prefix, suffix)", string(b))
}

// Definition is one agent definition: a client program and its capabilities.
// Field names and TOML keys are the schema of DESIGN.md section 3.
type Definition struct {
	ID      string   `toml:"id" json:"id"`
	Name    string   `toml:"name" json:"name"`
	Command []string `toml:"command" json:"command"`
	// SeenWith is the client release the recipe, the naming and the
	// question policy were last verified with (`make e2e-clients`).
	SeenWith string `toml:"seen_with" json:"seen_with,omitempty"`
	// NPMPackage is the npm package the client installs from, where it
	// does: `tools lint` reads the installed release from its package.json
	// and warns when it is newer than SeenWith.
	NPMPackage string `toml:"npm_package" json:"npm_package,omitempty"`
	// Evidence says where the capability values come from: seen, source or docs.
	Evidence     string       `toml:"evidence" json:"evidence,omitempty"`
	MCP          MCPConfig    `toml:"mcp" json:"mcp"`
	Capabilities Capabilities `toml:"capabilities" json:"capabilities"`
	// Run is the launch recipe; the zero value when the file has no [run]
	// table (a user file overriding a catalog id then keeps the catalog's).
	Run Run `toml:"run" json:"run"`

	// hasRun says whether the file had a [run] table.
	hasRun bool

	// Source is "catalog" or the path of the user file that defined it.
	Source string `toml:"-" json:"source"`
}

// MCPConfig says how the MCP server is injected into the client: the
// shape of its native configuration (see mcp.go) and the files `instance
// connect` edits.
type MCPConfig struct {
	// ConfigFormat names the shape: a definition that describes no file
	// and no entry takes those of the format it names; default the id.
	ConfigFormat string `toml:"config_format" json:"config_format"`
	// Trust asks clients that support it (Gemini CLI, Qwen Code) to use the
	// server's tools without confirmation, which headless runs need.
	Trust bool `toml:"trust" json:"trust,omitempty"`
	// ToolTimeoutMax is the longest tool-call timeout the client can be
	// told (Node's timers stop at 2^31-1 ms); 0 when no limit is known.
	// `instance create` warns when the instance's question timeout is
	// longer, since ask_user_question would then be cut off.
	ToolTimeoutMax Duration `toml:"tool_timeout_max" json:"tool_timeout_max,omitempty"`
	// ToolTimeoutDefault is the client's own tool-call timeout, written
	// for an instance that sets none (Goose: 300 s).
	ToolTimeoutDefault Duration `toml:"tool_timeout_default" json:"tool_timeout_default,omitempty"`
	// File is the configuration written into the instance's directory.
	File string `toml:"file" json:"file"`
	// Key is the member that holds the servers, by name (default mcpServers).
	Key string `toml:"key" json:"key"`
	// List makes Key a list of entries (each naming its server) instead.
	List bool `toml:"list" json:"list,omitempty"`
	// Document holds the file's other top-level members.
	Document Object `toml:"document" json:"document,omitempty"`
	// Entry is the template of a server the client starts (stdio);
	// RemoteEntry of one it reaches over streamable HTTP.
	Entry       Object `toml:"entry" json:"entry"`
	RemoteEntry Object `toml:"remote_entry" json:"remote_entry,omitempty"`
	// Connect is where `instance connect` writes the entry.
	Connect Connect `toml:"connect" json:"connect"`
}

// Duration is a time.Duration written as "10m0s" in TOML and JSON.
type Duration time.Duration

// UnmarshalText reads a Go duration such as "90s" or "596h31m23s".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("invalid duration %q: write it as Go does, for example \"90s\" or \"10m\"", string(b))
	}
	if v < 0 {
		return fmt.Errorf("invalid duration %q: it is negative", string(b))
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the duration as time.Duration.String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// Capabilities are what an instance snapshots from its definition.
type Capabilities struct {
	ToolNames ToolNaming `toml:"tool_names" json:"tool_names"`
	// ToolsListChanged says that the client follows
	// notifications/tools/list_changed: it lists the tools again when the
	// endpoint sends it, and its model then sees the new list. The
	// endpoint then answers the first tools/list after a short wait, with
	// the external servers that are up by then, and announces the others
	// as they come up. false (the default, also for records made before
	// the field existed) makes the first tools/list wait for every
	// external server's first connection attempt, as a client that lists
	// once must. Set it true only on evidence: a client wrongly said to
	// follow would never see a slow server's tools.
	ToolsListChanged bool `toml:"tools_list_changed" json:"tools_list_changed"`
	// Questions says where ask_user_question asks the person, in a
	// headless run and otherwise (see [Questions]).
	Questions Questions `toml:"questions" json:"questions"`
}

// AskVia is where ask_user_question asks the person.
type AskVia string

// The places a question can be asked.
const (
	// AskViaStore keeps the question in agentctl's store, where
	// `agentctl instance questions` shows it and `instance answer` (or any
	// other way agentctl offers) answers it, from any process.
	AskViaStore AskVia = "store"
	// AskViaClient asks through the client with MCP elicitation, when the
	// client announces it (otherwise through the store). A decline or
	// cancel that came faster than a person could have read the question
	// still falls back to the store.
	AskViaClient AskVia = "client"
)

// AskVias lists the valid [AskVia] values.
var AskVias = []AskVia{AskViaStore, AskViaClient}

// UnmarshalText makes an unknown place a decode error.
func (a *AskVia) UnmarshalText(b []byte) error {
	v := AskVia(b)
	if !slices.Contains(AskVias, v) {
		return fmt.Errorf("invalid place %q (want store or client)", string(b))
	}
	*a = v
	return nil
}

// Questions is the question policy: where ask_user_question asks, by kind
// of run. Elicitation only helps where a person sits at the client: in a
// headless run there is nobody, and clients that announce elicitation then
// decline or cancel it at once (Codex within 0.02 s), which would tell the
// model "declined" although nobody was asked. Hence the defaults.
type Questions struct {
	// Headless is where a question goes while an `agentctl instance run`
	// of the instance runs headless (default store).
	Headless AskVia `toml:"headless" json:"headless"`
	// Interactive is where it goes in an interactive run, and when the
	// client was started some other way (by a person, an editor) and
	// nothing says it is headless (default client).
	Interactive AskVia `toml:"interactive" json:"interactive"`
	// Note says how the client behaves, for people (agents show).
	Note string `toml:"note" json:"note,omitempty"`
}

// Default question policy.
const (
	DefaultAskHeadless    = AskViaStore
	DefaultAskInteractive = AskViaClient
)

// WithDefaults returns q with its empty places filled with the defaults:
// records made before the policy existed have none.
func (q Questions) WithDefaults() Questions {
	if q.Headless == "" {
		q.Headless = DefaultAskHeadless
	}
	if q.Interactive == "" {
		q.Interactive = DefaultAskInteractive
	}
	return q
}

// ToolNaming describes how a client renders an MCP tool name for its model.
type ToolNaming struct {
	Namespacing Namespacing `toml:"namespacing" json:"namespacing"`
	// Template is the model-visible name, with {tool} and {server} placeholders.
	Template string `toml:"template" json:"template"`
	// MaxLength is the longest model-visible name the client and model accept.
	MaxLength int `toml:"max_length" json:"max_length"`
	// Charset is a regular expression the whole model-visible name must match.
	Charset string `toml:"charset" json:"charset"`
	// ServerMaxLength, when positive, is where the client cuts the server part.
	ServerMaxLength int `toml:"server_max_length" json:"server_max_length,omitempty"`
	// PartSeparator, when set, splits the template into the parts the
	// client sends its model separately, shown joined by it: Codex puts a
	// server's tools into a namespace "mcp__{server}" holding functions
	// "{tool}" (shown "mcp__{server}/{tool}"). Charset and MaxLength then
	// apply to each part on its own.
	PartSeparator string `toml:"part_separator" json:"part_separator,omitempty"`
	// CombinedMaxLength, when positive, is the longest server name plus
	// tool name (transport name) the client keeps: it drops a tool over it
	// without telling anyone (Cursor: 60).
	CombinedMaxLength int `toml:"combined_max_length" json:"combined_max_length,omitempty"`
}

// Default capability values, the safe choice for model APIs.
const (
	DefaultMaxLength = 64
	DefaultCharset   = "^[A-Za-z0-9_-]+$"
)

// BuiltinToolBases are the base names of agentctl's built-in tools, each
// served as "<base>_<server>". A definition whose naming would break these
// names is refused at load. mcpserver.BuiltinBases must list the same names
// (agents imports nothing of ours; a test in cmd/agentctl pins the two equal).
var BuiltinToolBases = []string{"ask_user_question", "report_progress", "get_instance"}

// DefaultServerName is the server name an instance gets unless told
// otherwise; instance.DefaultServerName must be the same (pinned by a test in
// cmd/agentctl).
const DefaultServerName = "agentctl"

var idPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`) })

// fieldError is a validation problem with one key of a definition.
type fieldError struct {
	key string // dotted TOML key
	msg string
}

func (e *fieldError) Error() string { return fmt.Sprintf("key %q: %s", e.key, e.msg) }

// applyDefaults fills optional values; trustSet says that the file set
// mcp.trust.
func (d *Definition) applyDefaults(trustSet bool) {
	if d.Command == nil {
		d.Command = []string{} // [] in JSON, as the schema's other lists
	}
	tn := &d.Capabilities.ToolNames
	if tn.MaxLength == 0 {
		tn.MaxLength = DefaultMaxLength
	}
	if tn.Charset == "" {
		tn.Charset = DefaultCharset
	}
	d.Capabilities.Questions = d.Capabilities.Questions.WithDefaults()
	d.MCP.applyDefaults(d.ID, trustSet)
}

// validate checks a decoded definition; the first problem is returned.
func (d *Definition) validate() *fieldError {
	if d.ID == "" {
		return &fieldError{"id", "missing; every definition needs an id such as \"my-agent\""}
	}
	if !idPattern().MatchString(d.ID) {
		return &fieldError{"id", fmt.Sprintf("%q is not a valid id (lower-case letters, digits, '.', '_' and '-', starting with a letter or digit)", d.ID)}
	}
	if d.ID == "all" {
		return &fieldError{"id", `"all" is taken: --agent all means every agent; choose another id`}
	}
	if d.Name == "" {
		return &fieldError{"name", "missing; give the client a display name"}
	}
	if fe := d.MCP.validate(); fe != nil {
		return fe
	}
	tn := d.Capabilities.ToolNames
	if tn.Namespacing == "" {
		return &fieldError{"capabilities.tool_names.namespacing", "missing; one of none, prefix, suffix"}
	}
	if err := validateTemplate(tn.Template); err != nil {
		return &fieldError{"capabilities.tool_names.template", err.Error()}
	}
	if sep := tn.PartSeparator; sep != "" && strings.Count(tn.Template, sep) != 1 {
		return &fieldError{"capabilities.tool_names.part_separator", fmt.Sprintf("%q must appear exactly once in the template %q", sep, tn.Template)}
	}
	if tn.MaxLength < 1 {
		return &fieldError{"capabilities.tool_names.max_length", fmt.Sprintf("%d is not a positive length", tn.MaxLength)}
	}
	if tn.ServerMaxLength < 0 {
		return &fieldError{"capabilities.tool_names.server_max_length", fmt.Sprintf("%d is negative", tn.ServerMaxLength)}
	}
	if tn.CombinedMaxLength < 0 {
		return &fieldError{"capabilities.tool_names.combined_max_length", fmt.Sprintf("%d is negative", tn.CombinedMaxLength)}
	}
	if _, err := regexp.Compile(tn.Charset); err != nil {
		return &fieldError{"capabilities.tool_names.charset", fmt.Sprintf("not a regular expression: %v", err)}
	}
	if fe := validateBuiltinNames(tn); fe != nil {
		return fe
	}
	if d.hasRun {
		return d.validateRun()
	}
	return nil
}

// validateBuiltinNames checks that the model-visible names of the built-in
// tools, for the default server name, fit the definition's charset and length.
// A definition they do not fit would make every instance of it unusable.
func validateBuiltinNames(tn ToolNaming) *fieldError {
	for _, base := range BuiltinToolBases {
		transport := base + "_" + DefaultServerName
		if tn.Namespacing == NamespacingSuffix {
			// The endpoint sends a built-in without its "_<server>" suffix
			// to a client that appends it (mcpserver.PresentToolName).
			transport = base
		}
		r := RenderModelName(tn, DefaultServerName, transport)
		if tn.PartSeparator != "" {
			if len(r.Problems) > 0 {
				return &fieldError{"capabilities.tool_names.template", fmt.Sprintf(
					"the built-in tool name %q (rendered from template %q for server %q) is %s", r.Name, tn.Template, DefaultServerName, strings.Join(r.Problems, ", "))}
			}
			continue
		}
		if !charsetRegexp(tn.Charset).MatchString(r.Name) {
			return &fieldError{"capabilities.tool_names.charset", fmt.Sprintf(
				"%s does not accept the built-in tool name %q (rendered from template %q for server %q); allow letters, digits and '_' in it",
				tn.Charset, r.Name, tn.Template, DefaultServerName)}
		}
		if l := utf8.RuneCountInString(r.Name); l > tn.MaxLength {
			return &fieldError{"capabilities.tool_names.max_length", fmt.Sprintf(
				"%d is shorter than the built-in tool name %q (%d characters, rendered from template %q for server %q); raise it to at least %d or shorten the template",
				tn.MaxLength, r.Name, l, tn.Template, DefaultServerName, l)}
		}
	}
	return nil
}

func validateTemplate(t string) error {
	if t == "" {
		return fmt.Errorf("missing; for example \"mcp__{server}__{tool}\"")
	}
	switch n := strings.Count(t, "{tool}"); {
	case n == 0:
		return fmt.Errorf("%q has no {tool} placeholder", t)
	case n > 1:
		return fmt.Errorf("%q has {tool} %d times; a model-visible name contains the tool name once", t, n)
	}
	rest := strings.NewReplacer("{tool}", "", "{server}", "").Replace(t)
	if strings.ContainsAny(rest, "{}") {
		return fmt.Errorf("%q has an unknown placeholder (only {tool} and {server} exist)", t)
	}
	return nil
}

// clone returns a copy of d that shares no list, map or template with it:
// a user file decoded over it (see decodeOver) must leave the catalog's
// definition as it was.
func (d *Definition) clone() *Definition {
	c := *d
	c.Command = slices.Clone(d.Command)
	c.MCP.Document, c.MCP.Entry, c.MCP.RemoteEntry = d.MCP.Document.clone(), d.MCP.Entry.clone(), d.MCP.RemoteEntry.clone()
	r := &c.Run
	r.ConfigArgs, r.Headless, r.Interactive, r.Unattended = slices.Clone(r.ConfigArgs), slices.Clone(r.Headless), slices.Clone(r.Interactive), slices.Clone(r.Unattended)
	r.ConfigEnv = maps.Clone(r.ConfigEnv)
	return &c
}
