package agents

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
)

// The shape of a client's MCP configuration ([MCPConfig]) is data: the
// file written into the instance's directory (its extension says how:
// .json, .toml or .yaml), the member that holds the servers, and
// templates of the server's entry. A placeholder is a whole value, which
// the instance fills: a member whose placeholder is empty (no text, no
// members, false, 0) is left out; {args} is always written, and spliced
// in place when it is an element of a list. JSON and TOML files are
// written with their keys sorted, YAML in the template's order.

// GenericFormat is the config_format of the common `{"mcpServers": {S:
// {command, args, env}}}` file, which no client reads by default.
const GenericFormat = "mcp-servers-json"

// The placeholders of an [MCPConfig.Entry] (a server started by the client)
// and of an [MCPConfig.RemoteEntry] (one reached over streamable HTTP).
var (
	entryPlaceholders  = []string{"server", "command", "args", "env", "trust", "tool_timeout_ms", "tool_timeout_s"}
	remotePlaceholders = []string{"server", "url", "headers", "trust", "tool_timeout_ms", "tool_timeout_s"}
)

// Connect says which file `instance connect` edits in each scope: a path
// relative to the workspace, or starting with ~/ (the home directory),
// {xdgconfig} ($XDG_CONFIG_HOME or ~/.config), {appconfig} (the platform's
// application settings) or ${VAR:-DEFAULT}; {server} is the server name.
// A scope with no path says, in its *_reads note, what the client reads
// instead. A JSON or TOML file gets the entry under the key; a YAML file
// is the instance's own file, whole (one file per server).
type Connect struct {
	Workspace      string `toml:"workspace" json:"workspace,omitempty"`
	User           string `toml:"user" json:"user,omitempty"`
	WorkspaceReads string `toml:"workspace_reads" json:"workspace_reads,omitempty"`
	UserReads      string `toml:"user_reads" json:"user_reads,omitempty"`
}

// Object is a TOML table with its keys in the order the file wrote them:
// a template. Values are string, bool, int, float64, []any or Object.
type Object []Member

// Member is one key of an [Object].
type Member struct {
	Key   string
	Value any
}

// UnmarshalTOML takes a table; [Decode] then puts its keys in the file's order.
func (o *Object) UnmarshalTOML(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("want a table, not %T", v)
	}
	*o = Object{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		*o = append(*o, Member{k, objectValue(m[k])})
	}
	return nil
}

func objectValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		var o Object
		_ = o.UnmarshalTOML(t)
		return o
	case []any:
		for i := range t {
			t[i] = objectValue(t[i])
		}
	case int64:
		return int(t) // as the generated catalog writes it
	}
	return v
}

// clone copies o and every template inside it.
func (o Object) clone() Object {
	if o == nil {
		return nil
	}
	c := make(Object, len(o))
	for i, m := range o {
		c[i] = Member{m.Key, cloneValue(m.Value)}
	}
	return c
}

func cloneValue(v any) any {
	switch t := v.(type) {
	case Object:
		return t.clone()
	case []any:
		c := make([]any, len(t))
		for i, e := range t {
			c[i] = cloneValue(e)
		}
		return c
	}
	return v
}

// order puts o's keys, at path, in the order of keys (as decoded).
func (o Object) order(pos map[string]int, path string) {
	slices.SortStableFunc(o, func(a, b Member) int { return cmp.Compare(pos[path+"\x00"+a.Key], pos[path+"\x00"+b.Key]) })
	for _, m := range o {
		if sub, ok := m.Value.(Object); ok {
			sub.order(pos, path+"\x00"+m.Key)
		}
	}
}

// MarshalJSON writes o as a JSON object in its order.
func (o Object) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, m := range o {
		k, _ := json.Marshal(m.Key)
		v, err := json.Marshal(m.Value)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

// orderTemplates puts the templates' keys in the order md read them.
func (m *MCPConfig) orderTemplates(md toml.MetaData) {
	pos := map[string]int{}
	for i, k := range md.Keys() {
		pos[strings.Join(k, "\x00")] = i
	}
	m.Document.order(pos, "mcp\x00document")
	m.Entry.order(pos, "mcp\x00entry")
	m.RemoteEntry.order(pos, "mcp\x00remote_entry")
}

// CatalogMCP is a shape from the catalog: that of definition id if it
// has this format (or format is ""), else of the definition with the id
// format, else of the first (by id) with this config_format, or
// [GenericFormat]'s. Old records, made before records kept their shape,
// and definitions that name a format alone take theirs from it.
func CatalogMCP(id, format string) (MCPConfig, bool) {
	if format == GenericFormat {
		return MCPConfig{ConfigFormat: GenericFormat, File: "mcp.json", Key: "mcpServers",
			Entry:       Object{{"command", "{command}"}, {"args", "{args}"}, {"env", "{env}"}},
			RemoteEntry: Object{{"type", "http"}, {"url", "{url}"}, {"headers", "{headers}"}}}, true
	}
	var best *Definition
	rank := 3
	for _, d := range catalogDefinitions() {
		r := 3
		switch {
		case d.ID == id && (format == "" || d.MCP.ConfigFormat == format):
			r = 0
		case d.ID == format:
			r = 1
		case d.MCP.ConfigFormat == format:
			r = 2
		}
		if r < rank {
			best, rank = d, r
		}
	}
	if best == nil {
		return MCPConfig{}, false
	}
	return best.MCP, true
}

// FormatNames lists the config_format values a definition may name alone.
func FormatNames() []string {
	names := []string{GenericFormat}
	for _, d := range catalogDefinitions() {
		names = append(names, d.MCP.ConfigFormat)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// FileKind is how the file is written: "json", "toml" or "yaml" (by its
// extension), or "" when it is none of them.
func FileKind(file string) string {
	switch ext := path.Ext(file); ext {
	case ".json", ".toml", ".yaml":
		return ext[1:]
	case ".yml":
		return "yaml"
	}
	return ""
}

// applyDefaults gives a definition whose [mcp] describes no file and no
// entry the shapes of its config_format (or, without one, of the catalog
// definition with its id), where it leaves them out; config_format
// defaults to the id, key to "mcpServers". The format's trust and
// tool-call limits come with its shapes (trust unless trustSet: the
// definition set mcp.trust itself).
func (m *MCPConfig) applyDefaults(id string, trustSet bool) {
	if m.File == "" && len(m.Entry) == 0 {
		if f, ok := CatalogMCP(id, m.ConfigFormat); ok {
			m.ConfigFormat, m.File, m.Entry, m.List = f.ConfigFormat, f.File, f.Entry, m.List || f.List
			m.Key = cmp.Or(m.Key, f.Key)
			// Each scope on its own: a definition that names one file
			// keeps the catalog's other.
			m.Connect = Connect{Workspace: cmp.Or(m.Connect.Workspace, f.Connect.Workspace), User: cmp.Or(m.Connect.User, f.Connect.User),
				WorkspaceReads: cmp.Or(m.Connect.WorkspaceReads, f.Connect.WorkspaceReads), UserReads: cmp.Or(m.Connect.UserReads, f.Connect.UserReads)}
			m.ToolTimeoutDefault = cmp.Or(m.ToolTimeoutDefault, f.ToolTimeoutDefault)
			m.ToolTimeoutMax = cmp.Or(m.ToolTimeoutMax, f.ToolTimeoutMax)
			if !trustSet {
				m.Trust = f.Trust
			}
			if m.Document == nil {
				m.Document = f.Document
			}
			if m.RemoteEntry == nil {
				m.RemoteEntry = f.RemoteEntry
			}
		}
	}
	if len(m.Entry) > 0 {
		m.ConfigFormat, m.Key = cmp.Or(m.ConfigFormat, id), cmp.Or(m.Key, "mcpServers")
	}
}

var placeholderRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{([A-Za-z_]*)\}`) })

// validate checks the shape.
func (m *MCPConfig) validate() *fieldError {
	switch {
	case len(m.Entry) == 0 && m.File != "":
		return &fieldError{"mcp.entry", fmt.Sprintf("missing: mcp.file is set (%q), so describe the entry too (mcp.entry, and mcp.key), or leave mcp.file out to take the shape of config_format %q", m.File, m.ConfigFormat)}
	case len(m.Entry) == 0 && m.ConfigFormat == "":
		return &fieldError{"mcp.config_format", "missing; one of " + strings.Join(FormatNames(), ", ") + ", or describe the client's own file with mcp.file, mcp.key and mcp.entry"}
	case len(m.Entry) == 0:
		return &fieldError{"mcp.config_format", fmt.Sprintf("unknown format %q (want one of %s, or describe it with mcp.file, mcp.key and mcp.entry)", m.ConfigFormat, strings.Join(FormatNames(), ", "))}
	case strings.HasPrefix(m.File, "~") || strings.Contains(m.File, "$"):
		return &fieldError{"mcp.file", fmt.Sprintf("%q: mcp.file names the file written in the instance's own directory, where ~ and $VAR are not expanded; the file the client reads elsewhere belongs in mcp.connect.user", m.File)}
	case FileKind(m.File) == "" || !filepath.IsLocal(m.File):
		return &fieldError{"mcp.file", fmt.Sprintf("%q is not a file name in the instance's directory ending in .json, .toml or .yaml", m.File)}
	case strings.ContainsAny(m.Key, ".[]"):
		return &fieldError{"mcp.key", fmt.Sprintf("%q is a path; the servers are a member at the top of the file, named by mcp.key as it is written there (such as mcpServers)", m.Key)}
	case m.List && FileKind(m.File) != "yaml":
		return &fieldError{"mcp.list", "a list of servers is written only in a YAML file (connect edits JSON and TOML servers by name)"}
	}
	if fe := checkConnect("mcp.connect.workspace", m.Connect.Workspace, false, FileKind(m.File)); fe != nil {
		return fe
	}
	if fe := checkConnect("mcp.connect.user", m.Connect.User, true, FileKind(m.File)); fe != nil {
		return fe
	}
	if FileKind(m.File) == "yaml" {
		for _, c := range []struct{ key, path string }{{"mcp.connect.workspace", m.Connect.Workspace}, {"mcp.connect.user", m.Connect.User}} {
			if c.path != "" && !strings.Contains(c.path, "{server}") {
				return &fieldError{c.key, fmt.Sprintf("%q: connect writes a YAML file whole, one server to a file, so its name holds {server} (such as .client/mcp/{server}.yaml); a file with the client's other settings would be replaced", c.path)}
			}
		}
	}
	if fe := checkTemplate("mcp.entry", m.Entry, entryPlaceholders); fe != nil {
		return fe
	}
	if fe := needPlaceholders("mcp.entry", m.Entry, "command", "args"); fe != nil {
		return fe
	}
	if m.RemoteEntry != nil {
		if fe := needPlaceholders("mcp.remote_entry", m.RemoteEntry, "url", "headers"); fe != nil {
			return fe
		}
	}
	// The document is filled as the entries are.
	if fe := checkTemplate("mcp.document", m.Document, slices.Compact(slices.Sorted(slices.Values(slices.Concat(entryPlaceholders, remotePlaceholders))))); fe != nil {
		return fe
	}
	return checkTemplate("mcp.remote_entry", m.RemoteEntry, remotePlaceholders)
}

// connectPlaceholders are those of a [Connect] path.
var connectPlaceholders = []string{"server", "xdgconfig", "appconfig"}

var (
	envRefRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$(\{[^}]*\}|[A-Za-z_][A-Za-z0-9_]*)`) })
	bracesRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{[^{}]*\}`) })
	userStart = []string{"~/", "{xdgconfig}", "{appconfig}", "$", "/"}
)

// checkConnect checks the path of a connect scope (user: the user's, else
// the workspace's): known placeholders, the extension of the instance's
// own file (kind: it is written the same way), inside the workspace, or
// under one of the user's directories, with no way up out of it.
func checkConnect(key, p string, user bool, kind string) *fieldError {
	if p == "" {
		return nil
	}
	rest := envRefRE().ReplaceAllString(p, "x")
	for _, ph := range bracesRE().FindAllString(rest, -1) {
		if !slices.Contains(connectPlaceholders, ph[1:len(ph)-1]) {
			return &fieldError{key, fmt.Sprintf("unknown placeholder %s in %q (known: {%s}, and ${VAR} or ${VAR:-DEFAULT})", ph, p, strings.Join(connectPlaceholders, "}, {"))}
		}
	}
	if k := FileKind(p); k != kind {
		return &fieldError{key, fmt.Sprintf("%q is not a %s file, as mcp.file is: connect writes the entry as the instance's own file holds it", p, kind)}
	}
	local := bracesRE().ReplaceAllString(rest, "x")
	if !user {
		// ~ and the user's folders ({xdgconfig}, {appconfig}) lead out of
		// the workspace too, once expanded.
		if strings.Contains(p, "$") || strings.HasPrefix(p, "~") || strings.Contains(p, "{xdgconfig}") || strings.Contains(p, "{appconfig}") || !filepath.IsLocal(local) {
			return &fieldError{key, fmt.Sprintf("%q is not a path inside the workspace: give it relative to the workspace, without .. or $VAR (a file elsewhere belongs in mcp.connect.user)", p)}
		}
		return nil
	}
	start := ""
	for _, s := range userStart {
		if strings.HasPrefix(p, s) {
			start = s
		}
	}
	if start == "" {
		return &fieldError{key, fmt.Sprintf("%q is not in the home directory: start it with ~/, {xdgconfig}, {appconfig} or ${VAR:-DEFAULT} (or give an absolute path)", p)}
	}
	// Below its start (~/, a placeholder or a variable, each "x" in local).
	tail, ok := strings.CutPrefix(local, "~/")
	if !ok {
		if tail, ok = strings.CutPrefix(local, "x/"); !ok {
			tail = strings.TrimLeft(local, "/")
		}
	}
	if !filepath.IsLocal(tail) || slices.Contains(strings.Split(tail, "/"), "..") {
		return &fieldError{key, fmt.Sprintf("%q leaves the directory it starts in (..): name the file below it", p)}
	}
	return nil
}

// checkTemplate checks that every placeholder in v, at key, is one of known.
func checkTemplate(key string, v any, known []string) *fieldError {
	switch t := v.(type) {
	case Object:
		for _, m := range t {
			if p := placeholderRE().FindString(m.Key); p != "" {
				return &fieldError{key + "." + m.Key, fmt.Sprintf("%s is in a key: placeholders fill values only", p)}
			}
			if fe := checkTemplate(key+"."+m.Key, m.Value, known); fe != nil {
				return fe
			}
		}
	case []any:
		for _, e := range t {
			if fe := checkTemplate(key, e, known); fe != nil {
				return fe
			}
		}
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return &fieldError{key, fmt.Sprintf("%v cannot be written in a client's JSON or YAML file", t)}
		}
	case bool, int:
	case string:
		for _, p := range placeholderRE().FindAllStringSubmatch(t, -1) {
			if !slices.Contains(known, p[1]) {
				return &fieldError{key, fmt.Sprintf("unknown placeholder %s (known: {%s})", p[0], strings.Join(known, "}, {"))}
			}
			if t != p[0] {
				return &fieldError{key, fmt.Sprintf("%s must be the whole value, not part of %q", p[0], t)}
			}
		}
	default:
		return &fieldError{key, fmt.Sprintf("a %T cannot be written in a client's file: give a string, number, boolean, list or table", v)}
	}
	return nil
}

// needPlaceholders says which of names the template t never uses: an
// entry without them cannot reach the endpoint.
func needPlaceholders(key string, t Object, names ...string) *fieldError {
	for _, n := range names {
		if !usesPlaceholder(t, "{"+n+"}") {
			return &fieldError{key, fmt.Sprintf("the template has no {%s}, so the client could not reach the endpoint; it needs {%s}", n, strings.Join(names, "} and {"))}
		}
	}
	return nil
}

func usesPlaceholder(v any, p string) bool {
	switch t := v.(type) {
	case Object:
		return slices.ContainsFunc(t, func(m Member) bool { return usesPlaceholder(m.Value, p) })
	case []any:
		return slices.ContainsFunc(t, func(e any) bool { return usesPlaceholder(e, p) })
	case string:
		return t == p
	}
	return false
}
