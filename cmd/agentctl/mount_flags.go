package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/spf13/pflag"
)

// mountFlags are the mount flags of instance create and instance mount add.
type mountFlags struct {
	kbs, mcps, mcpJSON, headers []string
}

func (f *mountFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.kbs, "kb", nil, `mount a knowledge base: NAME=DIR[,prefix=P][,ro][,max=BYTES], a DIR with a comma in quotes: NAME="DIR, 2024",ro (repeatable)`)
	fs.StringArrayVar(&f.mcps, "mcp", nil, "mount an external MCP server: NAME=COMMAND [ARGS...] (split like a shell) or NAME=https://host/path, optionally followed by ,prefix=P ,timeout=D ,call_timeout=D (a comma outside quotes starts these: quote one that belongs to the command) (repeatable)")
	fs.StringArrayVar(&f.mcpJSON, "mcp-json", nil, `mount an external MCP server from JSON: NAME={"command":...,"args":[...],"env":{...}} or {"url":...,"headers":{...}}, with optional "tool_prefix", "timeout" (connecting and listing its tools; with --fast-lane=false also how long a stdio server may leave a message unread before it is restarted) and "call_timeout" (one tools/call, default `+mount.DefaultCallTimeout.String()+`) (repeatable)`)
	fs.StringArrayVar(&f.headers, "mcp-header", nil, "an HTTP header for an --mcp URL server: NAME:Key=Value (repeatable)")
}

func (f *mountFlags) empty() bool {
	return len(f.kbs)+len(f.mcps)+len(f.mcpJSON) == 0
}

// mounts parses the flags into mounts, after base (the config file's
// mounts, for create): knowledge bases, then servers, then JSON servers,
// then the headers added to URL servers.
func (f *mountFlags) mounts(base []mount.Mount) ([]mount.Mount, error) {
	out := slices.Clone(base)
	for _, s := range f.kbs {
		kb, err := parseKBFlag(s)
		if err != nil {
			return nil, err
		}
		out = append(out, kb)
	}
	for _, s := range f.mcps {
		m, err := parseMCPFlag(s)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	for _, s := range f.mcpJSON {
		m, err := parseMCPJSONFlag(s)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	for _, h := range f.headers {
		name, key, val, err := parseHeaderFlag(h)
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(out, func(m mount.Mount) bool { return m.Kind == mount.KindServer && m.Name == name })
		if i < 0 || out[i].URL == "" {
			return nil, usageErrorf("invalid --mcp-header for %q (header %q): no MCP server %q with a URL is mounted by this command", name, key, name)
		}
		if out[i].Headers == nil {
			out[i].Headers = map[string]string{}
		}
		out[i].Headers[key] = val
	}
	return out, nil
}

// parseHeaderFlag parses --mcp-header NAME:Key=Value. A header's value is
// often a secret: an error says which part is wrong and shows the name and
// the key, never the value (nor what may be one, when the "=" is missing).
func parseHeaderFlag(h string) (name, key, val string, err error) {
	const how = "use --mcp-header NAME:Key=Value"
	name, kv, hasColon := strings.Cut(h, ":")
	key, val, hasEq := strings.Cut(kv, "=")
	switch {
	case !hasColon || name == "":
		// Without the colon, the name cannot be told from the rest.
		return "", "", "", usageErrorf("invalid --mcp-header: no server NAME before a ':' (value not shown); %s", how)
	case strings.ContainsAny(name, "= \t"):
		// Not a mount name: more likely a header written without its NAME
		// ("Authorization=Bearer:x"), so possibly a secret.
		return "", "", "", usageErrorf("invalid --mcp-header: what comes before the first ':' is not a server NAME (not shown); %s", how)
	case !hasEq:
		return "", "", "", usageErrorf("invalid --mcp-header for %q: no '=' between the header's key and its value (value not shown); %s", name, how)
	case strings.TrimSpace(key) == "":
		return "", "", "", usageErrorf("invalid --mcp-header for %q: empty header key before '='; %s", name, how)
	}
	return name, key, val, nil
}

// kbHow says how --kb is written, for its errors.
const kbHow = `use --kb NAME=DIR, optionally followed by ,prefix=P ,ro ,max=BYTES; a DIR with a comma goes in quotes: --kb 'NAME="DIR, 2024",ro'`

// parseKBFlag parses --kb NAME=DIR[,prefix=P][,ro][,max=BYTES]. The first
// comma ends DIR, unless DIR is in quotes, single or double as --mcp's
// command is quoted ('a,b', "a,b"; in double quotes a backslash escapes
// " and \). Unquoted, DIR is taken as written, backslashes and quotes in
// it too (C:\docs, Bob's notes).
func parseKBFlag(s string) (mount.Mount, error) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok || name == "" || rest == "" {
		return mount.Mount{}, usageErrorf("invalid --kb %q: %s", s, kbHow)
	}
	dir, opts, hasOpts, err := cutKBDir(rest)
	if err != nil {
		return mount.Mount{}, usageErrorf("invalid --kb %q: %v; %s", s, err, kbHow)
	}
	var parts []string
	if hasOpts {
		parts = strings.Split(opts, ",")
	}
	kb := mount.Mount{Kind: mount.KindKB, Name: name, Path: dir}
	for _, opt := range parts {
		k, v, _ := strings.Cut(opt, "=")
		switch k {
		case "prefix", "tool_prefix":
			if v == "" {
				return mount.Mount{}, usageErrorf("invalid --kb %q: prefix= needs a value (or leave it out to derive one)", s)
			}
			kb.ToolPrefix = v
		case "ro", "read_only", "readonly":
			kb.ReadOnly = true
			if v != "" {
				b, err := strconv.ParseBool(v)
				if err != nil {
					return mount.Mount{}, usageErrorf("invalid --kb %q: ro takes true or false, not %q", s, v)
				}
				kb.ReadOnly = b
			}
		case "max", "max_bytes":
			n, ok := parseMaxBytes(v)
			if !ok {
				return mount.Mount{}, usageErrorf("invalid --kb %q: max must be a positive number of bytes, at most 1 GiB (1073741824)", s)
			}
			kb.MaxBytes = n
		default:
			return mount.Mount{}, usageErrorf("invalid --kb %q: unknown option %q (a ',' outside quotes ends the folder's path); %s", s, opt, kbHow)
		}
	}
	return kb, nil
}

// cutKBDir cuts what follows --kb's NAME= into the folder's path and the
// options after it: at the first comma, or, when the path is in quotes,
// after the closing quote.
func cutKBDir(s string) (dir, opts string, hasOpts bool, err error) {
	if q := s[0]; q == '"' || q == '\'' {
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			c := s[i]
			switch {
			case c == q:
				rest := s[i+1:]
				if rest != "" && rest[0] != ',' {
					return "", "", false, fmt.Errorf("%c%s%c is followed by %q, not by a ','", q, b.String(), q, rest)
				}
				if b.Len() == 0 {
					return "", "", false, errors.New("the folder's path in quotes is empty")
				}
				return b.String(), strings.TrimPrefix(rest, ","), rest != "", nil
			case q == '"' && c == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\'):
				i++
				b.WriteByte(s[i])
			default:
				b.WriteByte(c)
			}
		}
		return "", "", false, fmt.Errorf("unterminated %c quote", q)
	}
	dir, opts, hasOpts = strings.Cut(s, ",")
	if dir == "" {
		return "", "", false, errors.New("no folder before the first ','")
	}
	return dir, opts, hasOpts, nil
}

// parseMaxBytes reads a knowledge base's largest concept to index: a
// positive number of bytes, at most mount.MaxBytesLimit (--kb's max= and
// kb index's --max).
func parseMaxBytes(v string) (int64, bool) {
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil && n > 0 && n <= mount.MaxBytesLimit
}

// mcpHow says how --mcp is written, for its errors.
const mcpHow = "use --mcp NAME=COMMAND [ARGS...] or --mcp NAME=https://host/path, optionally followed by ,prefix=P ,timeout=D ,call_timeout=D"

// parseMCPFlag parses --mcp NAME=COMMAND [ARGS...][,OPTION=VALUE...] or
// --mcp NAME=URL[,OPTION=VALUE...]. The command is split like a shell
// splits it (quotes, backslashes); the first comma outside quotes ends it
// and starts the options: prefix (the mount's tool prefix), timeout and
// call_timeout (Go durations), as in --mcp-json. A comma that is no
// option's is refused, never split off or passed on silently: a comma of
// the command goes in quotes ('a,b' or a\,b), a comma of a URL as %2C.
func parseMCPFlag(s string) (mount.Mount, error) {
	name, rest, ok := strings.Cut(s, "=")
	// The value may carry secrets (a token among the arguments): errors
	// name the mount, never repeat the command line.
	if !ok || name == "" {
		return mount.Mount{}, usageErrorf("invalid --mcp value: no NAME= before the command; %s", mcpHow)
	}
	if strings.TrimSpace(rest) == "" {
		return mount.Mount{}, usageErrorf("invalid --mcp for %q: no command after %q; %s", name, name+"=", mcpHow)
	}
	head, opts, hasOpts := cutUnquotedComma(rest)
	if strings.TrimSpace(head) == "" {
		return mount.Mount{}, usageErrorf("invalid --mcp for %q: no command before the first ','; %s", name, mcpHow)
	}
	m := mount.Mount{Kind: mount.KindServer, Name: name}
	if mount.IsHTTPURL(strings.TrimSpace(head)) {
		m.URL = strings.TrimSpace(head)
	} else {
		words, err := shellSplit(head)
		if err != nil {
			return mount.Mount{}, usageErrorf("invalid --mcp for %q: %v; --mcp-json takes the command and arguments as a JSON array", name, err)
		}
		m.Command, m.Args = words[0], words[1:]
	}
	if hasOpts {
		if err := parseMCPOptions(name, opts, &m); err != nil {
			return mount.Mount{}, err
		}
	}
	return m, nil
}

// parseMCPOptions reads what follows the first unquoted comma of --mcp:
// OPTION=VALUE pairs separated by commas.
func parseMCPOptions(name, opts string, m *mount.Mount) error {
	for opt := range strings.SplitSeq(opts, ",") {
		k, v, hasEq := strings.Cut(opt, "=")
		k = strings.TrimSpace(k)
		switch {
		case hasEq && (k == "prefix" || k == "tool_prefix"):
			if v == "" {
				return usageErrorf("invalid --mcp for %q: prefix= needs a value (or leave it out to derive one)", name)
			}
			m.ToolPrefix = v
		case hasEq && (k == "timeout" || k == "call_timeout"):
			d, err := time.ParseDuration(v)
			if err != nil {
				return usageErrorf("invalid --mcp for %q: %s=%q is not a duration: use a Go duration such as 10s or 2m", name, k, v)
			}
			if d <= 0 {
				return usageErrorf("invalid --mcp for %q: %s=%q: use a duration above zero, such as 10s or 2m", name, k, v)
			}
			if k == "timeout" {
				m.Timeout = mount.Duration(d)
			} else {
				m.CallTimeout = mount.Duration(d)
			}
		default:
			// Not shown: what follows a comma may be part of an argument,
			// and an argument may be a secret.
			return usageErrorf("invalid --mcp for %q: a ',' outside quotes ends the command and starts the mount's options "+
				"(,prefix=P ,timeout=D ,call_timeout=D), and what follows one is none of them (not shown); "+
				"put a comma that belongs to the command in quotes ('a,b' or a\\,b), write one of a URL as %%2C, "+
				`or give the server as JSON: --mcp-json %s='{"command":"...","args":["..."],"tool_prefix":"..."}'`, name, name)
		}
	}
	return nil
}

// cutUnquotedComma cuts s at its first comma outside quotes and not
// escaped with a backslash, by the quoting rules of [shellSplit].
func cutUnquotedComma(s string) (before, after string, found bool) {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			}
		case quote == '"':
			if c == '"' {
				quote = 0
			} else if c == '\\' {
				i++
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '\\':
			i++
		case c == ',':
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// parseMCPJSONFlag parses --mcp-json NAME=JSON.
func parseMCPJSONFlag(s string) (mount.Mount, error) {
	name, js, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return mount.Mount{}, usageErrorf(`invalid --mcp-json %q: use --mcp-json NAME='{"command":"...","args":[...]}'`, s)
	}
	var m mount.Mount
	dec := json.NewDecoder(strings.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return mount.Mount{}, usageErrorf("invalid --mcp-json for %q: %v", name, err)
	}
	if m.Kind != "" && m.Kind != mount.KindServer {
		return mount.Mount{}, usageErrorf("invalid --mcp-json for %q: --mcp-json mounts MCP servers; mount a knowledge base with --kb", name)
	}
	m.Kind, m.Name = mount.KindServer, name
	if err := m.Validate(); err != nil {
		return mount.Mount{}, usageErrorf("invalid --mcp-json: %v", err)
	}
	return m, nil
}

// shellSplit splits a command line into words like a POSIX shell does for
// quotes and backslashes (no expansions).
func shellSplit(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		in    bool // inside a word
		quote rune
	)
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				cur.WriteRune(c)
			}
		case quote == '"':
			switch {
			case c == '"':
				quote = 0
			case c == '\\' && i+1 < len(rs) && strings.ContainsRune("\"\\$`", rs[i+1]):
				i++
				cur.WriteRune(rs[i])
			default:
				cur.WriteRune(c)
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == '\\':
			if i+1 < len(rs) {
				i++
				cur.WriteRune(rs[i])
				in = true
			}
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if in {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("no command")
	}
	return words, nil
}
