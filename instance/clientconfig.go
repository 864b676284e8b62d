package instance

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/BurntSushi/toml"
	"github.com/agentctl/agentctl/agents"
)

// ServerEntry is what a client needs to start the endpoint (Command,
// Args, Env: stdio) or to reach it (URL, Headers: streamable HTTP, when URL
// is set).
type ServerEntry struct {
	Command string
	Args    []string
	Env     map[string]string
	// URL, when set, makes the entry a remote server's: the client
	// connects to it instead of starting Command.
	URL string
	// Headers are sent with every request to URL: the instance's token
	// as "Authorization: Bearer T". A file holding them is written 0600.
	Headers map[string]string
	// Trust marks the server trusted where the client supports it (Gemini CLI,
	// Qwen Code): their headless runs ignore an untrusted server's tools.
	Trust bool
	// ToolTimeout is how long the client lets one tool call run, written
	// for the clients that have such a setting (Codex, Gemini CLI, Qwen
	// Code, Cline, Goose); 0 writes none (Goose: its 300 s). [Store.CreateInstance]
	// sets it to the question timeout plus [ToolTimeoutMargin], so that
	// ask_user_question is never cut off by the client.
	ToolTimeout time.Duration
}

// ToolTimeoutMargin is what a client's tool-call timeout adds to the
// instance's question timeout: time for the answer to travel back.
const ToolTimeoutMargin = time.Minute

// ToolTimeoutFor is the tool-call timeout written for an instance whose
// questions wait up to question: question plus [ToolTimeoutMargin], or 0
// (none written) when question is 0.
func ToolTimeoutFor(question time.Duration) time.Duration {
	if question <= 0 {
		return 0
	}
	return question + ToolTimeoutMargin
}

// ClientEntry is the server's own entry as a client of format (a
// config_format, [agents.CatalogMCP]) reads it: the value under the key
// server in the client's servers (for codex the contents of the
// [mcp_servers.S] table; for continue one item of its mcpServers list).
func ClientEntry(format, server string, e ServerEntry) (map[string]any, error) {
	m, ok := agents.CatalogMCP("", format)
	if !ok {
		return nil, invalidf("unknown MCP config format %q (want one of %s)", format, strings.Join(agents.FormatNames(), ", "))
	}
	doc, err := clientDocument(&m, server, e)
	if err != nil {
		return nil, err
	}
	servers := plain(doc.vals[m.Key])
	if m.List {
		return servers.([]any)[0].(map[string]any), nil
	}
	return servers.(map[string]any)[server].(map[string]any), nil
}

// WriteClientConfig writes the client's native MCP configuration (the
// shape m describes) into dir so that the client starts, or reaches, e
// under the key server. It returns the path written, relative to dir.
func WriteClientConfig(dir string, m *agents.MCPConfig, server string, e ServerEntry) (string, error) {
	doc, err := clientDocument(m, server, e)
	if err != nil {
		return "", err
	}
	var data []byte
	switch agents.FileKind(m.File) {
	case "yaml":
		var b strings.Builder
		writeYAML(&b, doc, "")
		data = []byte(strings.TrimPrefix(b.String(), "\n") + "\n")
	case "toml":
		var b bytes.Buffer
		err = toml.NewEncoder(&b).Encode(plain(doc))
		data = b.Bytes()
	default:
		data, err = json.MarshalIndent(plain(doc), "", "  ")
		data = append(data, '\n')
	}
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, m.File)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, data, configMode(e)); err != nil {
		return "", err
	}
	return m.File, nil
}

// configMode is the mode of a configuration file holding e: 0600 when it
// holds headers (the instance's token), else 0644.
func configMode(e ServerEntry) os.FileMode {
	if len(e.Headers) > 0 {
		return 0o600
	}
	return 0o644
}

// ceilSeconds is d in whole seconds, rounded up, so that a timeout written
// in seconds is never shorter than d.
func ceilSeconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}

// text is a value of the instance's, not of the template: YAML quotes it.
type text string

// clientDocument is the whole file: m's document, and under m.Key the
// entry m's template makes of e (its remote template when e has a URL).
// Objects are *jsonObject (the template's keys, in its order); maps are
// the instance's (env, headers, servers by name).
func clientDocument(m *agents.MCPConfig, server string, e ServerEntry) (*jsonObject, error) {
	tmpl := m.Entry
	if e.URL != "" {
		if tmpl = m.RemoteEntry; len(tmpl) == 0 {
			return nil, invalidf("the client's definition has no mcp.remote_entry, so it cannot reach an HTTP instance; use --transport stdio")
		}
	}
	t := cmp.Or(e.ToolTimeout, time.Duration(m.ToolTimeoutDefault))
	args := make([]any, len(e.Args))
	for i, a := range e.Args {
		args[i] = text(a)
	}
	vars := map[string]any{"server": text(server), "command": text(e.Command), "args": args,
		"env": e.Env, "url": text(e.URL), "headers": e.Headers, "trust": e.Trust}
	if t > 0 {
		vars["tool_timeout_ms"], vars["tool_timeout_s"] = t.Milliseconds(), ceilSeconds(t)
	}
	doc, _ := render(m.Document, vars)
	entry, _ := render(tmpl, vars)
	var servers any = map[string]any{server: entry}
	if m.List {
		servers = []any{entry}
	}
	doc.(*jsonObject).set(m.Key, servers)
	return doc.(*jsonObject), nil
}

// render fills a template's placeholders (each a whole value) from vars;
// ok is false for a member to leave out (its placeholder is empty).
func render(v any, vars map[string]any) (_ any, ok bool) {
	switch t := v.(type) {
	case agents.Object:
		o := newJSONObject()
		for _, m := range t {
			if r, ok := render(m.Value, vars); ok {
				o.set(m.Key, r)
			}
		}
		return o, true
	case []any:
		list := []any{}
		for _, e := range t {
			if s, ok := e.(string); ok && placeholder(s) == "args" {
				list = append(list, vars["args"].([]any)...)
				continue
			}
			if r, ok := render(e, vars); ok {
				list = append(list, r)
			}
		}
		return list, true
	case string:
		if name := placeholder(t); name != "" {
			switch x := vars[name].(type) {
			case text:
				return x, x != ""
			case bool:
				return x, x
			case map[string]string:
				return x, len(x) > 0
			case nil:
				return nil, false
			default:
				return x, true
			}
		}
	}
	return v, true
}

// placeholder is the name of the placeholder s is, or "".
func placeholder(s string) string {
	if name, ok := strings.CutPrefix(s, "{"); ok && strings.HasSuffix(name, "}") {
		if name = name[:len(name)-1]; name != "" && strings.Trim(name, "abcdefghijklmnopqrstuvwxyz_") == "" {
			return name
		}
	}
	return ""
}

// plain is v as JSON and TOML encoders take it.
func plain(v any) any {
	switch t := v.(type) {
	case *jsonObject:
		return plain(t.vals)
	case map[string]any:
		m := map[string]any{}
		for k, x := range t {
			m[k] = plain(x)
		}
		return m
	case []any:
		list := make([]any, len(t))
		for i, x := range t {
			list[i] = plain(x)
		}
		return list
	case text:
		return string(t)
	}
	return v
}

// writeYAML writes v as the value of a key at indent ind: a template's
// object with its keys as written, in order; the instance's maps with
// their keys quoted, sorted; a list of objects as a block, other lists in
// flow style; the instance's strings quoted, the template's plain where
// YAML reads them as the same string.
func writeYAML(b *strings.Builder, v any, ind string) {
	if list, ok := v.([]any); ok && len(list) > 0 {
		if _, ok := list[0].(*jsonObject); ok {
			for _, e := range list {
				var item strings.Builder
				writeYAML(&item, e, ind+"  ")
				b.WriteString("\n" + ind + "- " + strings.TrimPrefix(item.String(), "\n"+ind+"  "))
			}
			return
		}
	}
	switch t := v.(type) {
	case *jsonObject:
		yamlMembers(b, t.keys, func(k string) (string, any) { return yamlScalar(k), t.vals[k] }, ind)
	case map[string]any:
		yamlMembers(b, slices.Sorted(maps.Keys(t)), func(k string) (string, any) { return yamlString(k), t[k] }, ind)
	case map[string]string:
		yamlMembers(b, slices.Sorted(maps.Keys(t)), func(k string) (string, any) { return yamlString(k), text(t[k]) }, ind)
	default:
		b.WriteString(" " + yamlScalar(v))
	}
}

func yamlMembers(b *strings.Builder, keys []string, member func(string) (string, any), ind string) {
	if len(keys) == 0 {
		b.WriteString(" {}")
	}
	for _, k := range keys {
		key, v := member(k)
		b.WriteString("\n" + ind + key + ":")
		writeYAML(b, v, ind+"  ")
	}
}

// yamlScalar writes a scalar, or a list of them in flow style.
func yamlScalar(v any) string {
	switch t := v.(type) {
	case text:
		return yamlString(string(t))
	case string:
		if yamlPlain(t) {
			return t
		}
		return yamlString(t)
	case []any:
		q := make([]string, len(t))
		for i, s := range t {
			q[i] = yamlScalar(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	return fmt.Sprint(v)
}

// yamlPlain reports whether YAML reads s, unquoted, as the string s: a
// word (not a boolean or null) or a version such as 0.0.1.
func yamlPlain(s string) bool {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("._-/", r)
	}) {
		return false
	}
	if s[0] >= '0' && s[0] <= '9' {
		return strings.Count(s, ".") > 1
	}
	return unicode.IsLetter(rune(s[0])) && !slices.Contains([]string{"true", "false", "yes", "no", "on", "off", "null", "y", "n"}, strings.ToLower(s))
}

// yamlString quotes s as a YAML double-quoted scalar (a JSON string is one).
func yamlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// ToolTimeoutWarning is what `instance create` says when the definition's
// client cannot be told to wait as long as a question may (its
// [agents.MCPConfig.ToolTimeoutMax] is below [ToolTimeoutFor] question), or
// "" when it can. [Store.CreateInstance] then writes the client's maximum.
func ToolTimeoutWarning(def *agents.Definition, question time.Duration) string {
	return timeoutWarning(def.ID, "", time.Duration(def.MCP.ToolTimeoutMax), question,
		"lower --question-timeout to %[1]s or less")
}

// RunToolTimeoutWarning is what `instance run` says when the client its
// recipe starts cannot be told how long a tool call may take, and lets one
// take less than a question may wait ([agents.Run.ToolTimeout]), or "".
func RunToolTimeoutWarning(def *agents.Definition, question time.Duration) string {
	return timeoutWarning(def.ID, ", as `instance run` starts it (it cannot be told otherwise),", time.Duration(def.Run.ToolTimeout), question,
		"create the instance with --question-timeout %[1]s or less, or start %[2]s yourself with the server from the instance's configuration, which sets a longer timeout")
}

// timeoutWarning says that agent id's client (with how it is started, if
// that matters) lets a tool call run at most limit, less than a question of
// this timeout may wait, and what to do (fix, given the longest question
// timeout that fits and id); "" when it fits.
func timeoutWarning(id, how string, limit, question time.Duration, fix string) string {
	client := id + how
	need := ToolTimeoutFor(question)
	if limit <= 0 || need <= limit {
		return ""
	}
	if limit <= ToolTimeoutMargin {
		return fmt.Sprintf("warning: %s lets a tool call run at most %s, less than the %s an answer needs to travel: ask_user_question cannot wait for an answer with this client",
			client, limit, ToolTimeoutMargin)
	}
	fits := limit - ToolTimeoutMargin
	return fmt.Sprintf("warning: %s lets a tool call run at most %s, but ask_user_question may wait %s (question timeout %s plus %s for the answer to travel): "+
		"an answer after %s would be cut off; %s", client, limit, need, question, ToolTimeoutMargin, fits, fmt.Sprintf(fix, fits, id))
}

// ClientToolTimeout is the tool-call timeout written for def's client:
// [ToolTimeoutFor] question, at most the client's
// [agents.MCPConfig.ToolTimeoutMax] (a Node client given a longer one would
// fire it at once).
func ClientToolTimeout(def *agents.Definition, question time.Duration) time.Duration {
	t := ToolTimeoutFor(question)
	if limit := time.Duration(def.MCP.ToolTimeoutMax); limit > 0 && t > limit {
		t = limit
	}
	return t
}
