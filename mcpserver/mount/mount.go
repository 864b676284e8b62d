package mount

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Kind says what a mount is.
type Kind string

// Mount kinds, as written in records and configuration.
const (
	// KindKB is a knowledge base: a folder of Markdown concepts that the
	// endpoint serves itself.
	KindKB Kind = "kb"
	// KindServer is an external MCP server that the endpoint proxies, over
	// stdio (a command) or streamable HTTP (a URL).
	KindServer Kind = "mcp"
)

// Label is how messages name the kind: "knowledge base" or "MCP server".
func (k Kind) Label() string {
	switch k {
	case KindKB:
		return "knowledge base"
	case KindServer:
		return "MCP server"
	}
	return "mount"
}

// InProcess reports whether mounts of this kind are served by agentctl
// itself (knowledge bases). It is the one answer to "is this in-process?"
// for the reserved-name checks; agentctl's built-ins hold the server name.
func (k Kind) InProcess() bool { return k == KindKB }

// Mount is one mounted source as configured. The config file's [[kbs]] and
// [[mcp_servers]] tables, the --mcp-json value and an instance record's
// mounts decode into it; [Mount.Validate] says whether it makes sense.
//
// The JSON field names are part of the CLI contract (`instance show -o
// json`): add fields, never rename. A field's kind tag says which kind of
// mount takes it (none: both), for the config file's key lists.
type Mount struct {
	Kind Kind   `json:"kind" toml:"-"`
	Name string `json:"name" toml:"name"`
	// Path is a knowledge base's folder.
	Path string `json:"path,omitempty" toml:"path" kind:"kb"`
	// ToolPrefix is the explicit tool prefix; empty for none (then the
	// prefix mode decides).
	ToolPrefix string `json:"tool_prefix" toml:"tool_prefix"`
	// ReadOnly leaves concept_write out of a knowledge base's tools.
	ReadOnly bool `json:"read_only" toml:"read_only" kind:"kb"`
	// MaxBytes bounds a knowledge base's concepts; 0 means the knowledge
	// base's default, [github.com/agentctl/agentctl/mcpserver/kb.DefaultMaxBytes].
	MaxBytes int64 `json:"max_bytes,omitempty" toml:"max_bytes" kind:"kb"`

	// An external MCP server: Command and Args over stdio (with Env added to
	// agentctl's environment), or URL over streamable HTTP with Headers.
	Command string            `json:"command,omitempty" toml:"command" kind:"server"`
	Args    []string          `json:"args,omitempty" toml:"args" kind:"server"`
	Env     map[string]string `json:"env,omitempty" toml:"env" kind:"server"`
	URL     string            `json:"url,omitempty" toml:"url" kind:"server"`
	Headers map[string]string `json:"headers,omitempty" toml:"headers" kind:"server"`
	// Timeout bounds connecting to an external server and listing its
	// tools, and, on the SDK path, how long a stdio server may leave a
	// message of agentctl's untaken (it is then not reading its input, and
	// is restarted); 0 means the proxy's default.
	Timeout Duration `json:"timeout,omitempty" toml:"timeout" kind:"server"`
	// CallTimeout bounds one tools/call to an external server, after which
	// the call fails with a tool error and is cancelled upstream; 0 means
	// [DefaultCallTimeout]. See [Mount.CallTimeoutOrDefault].
	CallTimeout Duration `json:"call_timeout,omitempty" toml:"call_timeout" kind:"server"`
}

// DefaultCallTimeout bounds one tools/call to an external server unless
// its mount's call_timeout says otherwise. It is a backstop against a
// server that never answers, not a budget: longer than the longest
// tool-call timeout a client sets on its own (Gemini CLI and Qwen Code
// wait 10 minutes), so that a client with a timeout gives up first and a
// server's own long tools are cut off only where nothing else would end
// them.
const DefaultCallTimeout = 15 * time.Minute

// CallTimeoutOrDefault is how long one tools/call to the mount's server
// may take: its CallTimeout, else [DefaultCallTimeout]. Both ways of
// reaching a stdio server (the SDK path and the fast lane) read it here.
func (m Mount) CallTimeoutOrDefault() time.Duration {
	if d := time.Duration(m.CallTimeout); d > 0 {
		return d
	}
	return DefaultCallTimeout
}

// Source is how logs and tool descriptions name the mount: "kb docs",
// "mcp browser".
func (m Mount) Source() string { return string(m.Kind) + " " + m.Name }

// label is how error messages name the mount: `knowledge base "docs"`.
func (m Mount) label() string { return fmt.Sprintf("%s %q", m.Kind.Label(), m.Name) }

// IsHTTPURL reports whether s is an http or https URL, the form of an
// external server reached over streamable HTTP.
func IsHTTPURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// hasHost reports whether the URL s parses and names a host.
func hasHost(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Hostname() != ""
}

// IsRelativeCommand reports whether an external server's command is a
// relative path: one that has a path separator but is not absolute
// (./ev.sh, bin/server). Such a command is made absolute when it is
// mounted (see provision.CheckCommands in cmd/internal/provision),
// so that it means the same file wherever the client starts the endpoint;
// a bare name (npx) stays a PATH lookup, made when the server starts.
func IsRelativeCommand(cmd string) bool {
	return cmd != "" && !filepath.IsAbs(cmd) && strings.ContainsAny(cmd, "/"+string(filepath.Separator))
}

// Validate checks what can be checked without I/O: a usable name, and the
// fields that belong to the mount's kind (a knowledge base has a path; an
// external server has a command or a URL, not both). The message says which
// field is wrong and what to write instead; it never repeats a header's or
// an environment variable's value.
func (m Mount) Validate() error {
	if err := m.validateName(); err != nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", m.label(), fmt.Sprintf(format, args...))
	}
	switch m.Kind {
	case KindKB:
		switch {
		case m.Path == "":
			return bad("no path; give the knowledge base's folder")
		case m.Command != "" || len(m.Args) > 0 || len(m.Env) > 0 || m.URL != "" || len(m.Headers) > 0 || m.Timeout != 0 || m.CallTimeout != 0:
			return bad("command, args, env, url, headers, timeout and call_timeout are for MCP servers, not knowledge bases")
		case m.MaxBytes < 0 || m.MaxBytes > MaxBytesLimit:
			return bad("max_bytes must be a positive number of bytes, at most 1 GiB (1073741824)")
		}
	case KindServer:
		switch {
		case m.Command == "" && m.URL == "":
			return bad("give a command (stdio) or a url (streamable HTTP)")
		case m.Command != "" && m.URL != "":
			return bad("give a command or a url, not both")
		case m.URL != "" && !IsHTTPURL(m.URL):
			return bad("url %q is not an http(s) URL", RedactURL(m.URL))
		case m.URL != "" && !hasHost(m.URL):
			return bad("url %q names no host; give the server's whole address, such as https://mcp.example.com/mcp", RedactURL(m.URL))
		case m.Command == "" && (len(m.Args) > 0 || len(m.Env) > 0):
			return bad("args and env need a command")
		case m.URL == "" && len(m.Headers) > 0:
			return bad("headers need a url")
		case m.Path != "" || m.ReadOnly || m.MaxBytes != 0:
			return bad("path, read_only and max_bytes are for knowledge bases, not MCP servers")
		case m.Timeout < 0:
			return bad("timeout must be a positive duration such as 10s")
		case m.CallTimeout < 0:
			return bad("call_timeout must be a positive duration such as 30m (or leave it out for the default, %s)", DefaultCallTimeout)
		}
	default:
		return fmt.Errorf("mount %q: unknown kind %q (use %q for a knowledge base or %q for an MCP server)", m.Name, m.Kind, KindKB, KindServer)
	}
	return nil
}

// RedactURL hides what a URL may carry of secrets (its user information,
// its query, and path segments that look like keys, as hosted servers put
// them: /api/mcp/s/KEY/mcp), for messages, logs and anything a model reads.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<an unparsable URL>"
	}
	segs := SecretSegments(u.Path)
	if u.User == nil && u.RawQuery == "" && len(segs) == 0 {
		return raw
	}
	if u.User != nil {
		u.User = url.User("redacted")
	}
	if u.RawQuery != "" {
		u.RawQuery = "redacted"
	}
	if len(segs) > 0 {
		parts := strings.Split(u.Path, "/")
		for i, p := range parts {
			if slices.Contains(segs, p) {
				parts[i] = "redacted"
			}
		}
		u.Path, u.RawPath = strings.Join(parts, "/"), ""
	}
	return u.String()
}

// SecretSegments are the segments of a URL path that look like a key or
// token rather than a name: 16 characters or more of letters, digits, '-'
// and '_', with both letters and digits (a UUID, an API key), or 32 or more
// whatever they hold.
func SecretSegments(path string) []string {
	var out []string
	for p := range strings.SplitSeq(path, "/") {
		if isSecretSegment(p) {
			out = append(out, p)
		}
	}
	return out
}

func isSecretSegment(p string) bool {
	if len(p) >= 32 {
		return true
	}
	if len(p) < 16 {
		return false
	}
	letters, digits := false, false
	for _, r := range p {
		switch {
		case r >= '0' && r <= '9':
			digits = true
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			letters = true
		case r == '-' || r == '_' || r == '.':
		default:
			return false
		}
	}
	return letters && digits
}

// Redacted is a copy of the mount for printing: the values of an external
// server's environment variables and headers, which often hold secrets,
// become "<redacted>", and its URL goes through [RedactURL].
func (m Mount) Redacted() Mount {
	hide := func(in map[string]string) map[string]string {
		if len(in) == 0 {
			return in
		}
		out := make(map[string]string, len(in))
		for k := range in {
			out[k] = "<redacted>"
		}
		return out
	}
	m.Env, m.Headers = hide(m.Env), hide(m.Headers)
	if m.URL != "" {
		m.URL = RedactURL(m.URL)
	}
	m.Args = redactArgs(m.Args)
	return m
}

// redactArgs hides what a command line may carry of secrets: the value of
// a flag [SecretName] names (--api-key=K, --token T), of a variable it
// names (env GITHUB_TOKEN=T srv), of a header (--header "Authorization:
// Bearer T", -H, or such an argument alone, as mcp-remote takes them), and
// what a URL argument holds of one ([RedactURL]).
func redactArgs(args []string) []string {
	var out []string
	for i, a := range args {
		v := a
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		header, _, isHeader := strings.Cut(a, ":")
		prev := ""
		if i > 0 {
			prev = args[i-1]
		}
		switch {
		case hasValue && SecretName(name):
			v = a[:strings.IndexByte(a, '=')+1] + "<redacted>"
		case strings.HasPrefix(prev, "-") && !strings.Contains(prev, "=") && SecretName(strings.TrimLeft(prev, "-")):
			v = "<redacted>"
		case isHeader && !strings.ContainsAny(header, " /") && header != "" && !strings.Contains(a, "://") &&
			(prev == "--header" || prev == "-H" || SecretName(header)):
			v = header + ": <redacted>"
		case strings.Contains(a, "://"):
			if _, err := url.Parse(a); err == nil {
				v = RedactURL(a)
			}
		}
		if v != a && out == nil {
			out = slices.Clone(args)
		}
		if out != nil {
			out[i] = v
		}
	}
	if out == nil {
		return args
	}
	return out
}

// validateName checks the mount's name, the part of it that names tools.
func (m Mount) validateName() error {
	switch {
	case strings.TrimSpace(m.Name) == "":
		return fmt.Errorf("a %s has an empty name; every mount needs a name", m.Kind.Label())
	case strings.ContainsFunc(m.Name, func(r rune) bool { return r < 0x20 || r == 0x7f || strings.ContainsRune("/,=", r) }):
		return fmt.Errorf("%s: a mount name may not contain '/', ',', '=' or control characters", m.label())
	case len(m.Name) > 64:
		return fmt.Errorf("%s: the name is longer than 64 characters", m.label())
	}
	return nil
}

// Duration is a time.Duration written as a Go duration string ("10s") in
// JSON and TOML.
type Duration time.Duration

// MarshalText writes the duration as a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads a Go duration string such as "10s" or "2m".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("invalid duration %q: use a Go duration such as 10s or 2m", b)
	}
	*d = Duration(v)
	return nil
}

// MaxBytesLimit is the largest [Mount.MaxBytes]: 1 GiB, the knowledge
// base's own limit (kb.MaxMaxBytes), a concept being read whole.
const MaxBytesLimit = 1 << 30
