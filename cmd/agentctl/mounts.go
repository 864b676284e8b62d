package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/spf13/pflag"
)

// parseKBFlag parses --kb NAME=DIR[,prefix=P][,ro][,max=BYTES].
func parseKBFlag(s string) (mount.Mount, error) {
	const how = "use --kb NAME=DIR, optionally followed by ,prefix=P ,ro ,max=BYTES"
	name, rest, ok := strings.Cut(s, "=")
	if !ok || name == "" || rest == "" {
		return mount.Mount{}, usageErrorf("invalid --kb %q: %s", s, how)
	}
	parts := strings.Split(rest, ",")
	kb := mount.Mount{Kind: mount.KindKB, Name: name, Path: parts[0]}
	for _, opt := range parts[1:] {
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
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return mount.Mount{}, usageErrorf("invalid --kb %q: max must be a positive number of bytes", s)
			}
			kb.MaxBytes = n
		default:
			return mount.Mount{}, usageErrorf("invalid --kb %q: unknown option %q; %s", s, opt, how)
		}
	}
	return kb, nil
}

// mountFlags are the mount flags of instance create and instance mount add.
type mountFlags struct {
	kbs, mcps, mcpJSON, headers []string
}

func (f *mountFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.kbs, "kb", nil, "mount a knowledge base: NAME=DIR[,prefix=P][,ro][,max=BYTES] (repeatable)")
	fs.StringArrayVar(&f.mcps, "mcp", nil, "mount an external MCP server: NAME=COMMAND [ARGS...] (split like a shell) or NAME=https://host/path (repeatable)")
	fs.StringArrayVar(&f.mcpJSON, "mcp-json", nil, `mount an external MCP server from JSON: NAME={"command":...,"args":[...],"env":{...}} or {"url":...,"headers":{...}}, with optional "tool_prefix" and "timeout" (repeatable)`)
	fs.StringArrayVar(&f.headers, "mcp-header", nil, "an HTTP header for an --mcp URL server: NAME:Key=Value (repeatable)")
}

func (f *mountFlags) empty() bool {
	return len(f.kbs)+len(f.mcps)+len(f.mcpJSON) == 0
}

// configuredMounts returns the mounts of the config file (when fromFile)
// followed by those of the flags, checked: knowledge-base folders exist and
// are absolute, each external server has a command or a URL.
func (a *App) configuredMounts(f mountFlags, fromFile bool) ([]mount.Mount, error) {
	var out []mount.Mount
	if fromFile {
		for _, kb := range a.file.KBs {
			kb.Kind = mount.KindKB
			if kb.Path != "" && !filepath.IsAbs(kb.Path) {
				kb.Path = filepath.Join(a.file.dir, kb.Path)
			}
			if err := kb.Validate(); err != nil {
				return nil, &configError{fmt.Errorf("%s: [[kbs]]: %w", a.v.ConfigFileUsed(), err)}
			}
			out = append(out, kb)
		}
		for _, m := range a.file.MCPServers {
			m.Kind = mount.KindServer
			if err := m.Validate(); err != nil {
				return nil, &configError{fmt.Errorf("%s: [[mcp_servers]]: %w", a.v.ConfigFileUsed(), err)}
			}
			out = append(out, m)
		}
	}
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
		name, js, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			return nil, usageErrorf(`invalid --mcp-json %q: use --mcp-json NAME='{"command":"...","args":[...]}'`, s)
		}
		var m mount.Mount
		dec := json.NewDecoder(strings.NewReader(js))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			return nil, usageErrorf("invalid --mcp-json for %q: %v", name, err)
		}
		if m.Kind != "" && m.Kind != mount.KindServer {
			return nil, usageErrorf("invalid --mcp-json for %q: --mcp-json mounts MCP servers; mount a knowledge base with --kb", name)
		}
		m.Kind, m.Name = mount.KindServer, name
		if err := m.Validate(); err != nil {
			return nil, usageErrorf("invalid --mcp-json: %v", err)
		}
		out = append(out, m)
	}
	for _, h := range f.headers {
		name, kv, ok1 := strings.Cut(h, ":")
		key, val, ok2 := strings.Cut(kv, "=")
		if !ok1 || !ok2 || name == "" || key == "" {
			return nil, usageErrorf("invalid --mcp-header %q: use NAME:Key=Value", h)
		}
		i := slices.IndexFunc(out, func(m mount.Mount) bool { return m.Kind == mount.KindServer && m.Name == name })
		if i < 0 || out[i].URL == "" {
			return nil, usageErrorf("invalid --mcp-header %q: no MCP server %q with a URL is mounted by this command", h, name)
		}
		if out[i].Headers == nil {
			out[i].Headers = map[string]string{}
		}
		out[i].Headers[key] = val
	}
	for i, m := range out {
		if m.Kind != mount.KindKB {
			continue
		}
		if m.Path == "" {
			return nil, &configError{fmt.Errorf("knowledge base %q has no path", m.Name)}
		}
		abs, err := filepath.Abs(m.Path)
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return nil, &configError{fmt.Errorf("knowledge base %q: %s is not a directory", m.Name, abs)}
		}
		out[i].Path = abs
	}
	return out, nil
}

// parseMCPFlag parses --mcp NAME=COMMAND [ARGS...] or --mcp NAME=URL.
func parseMCPFlag(s string) (mount.Mount, error) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok || name == "" || strings.TrimSpace(rest) == "" {
		return mount.Mount{}, usageErrorf("invalid --mcp %q: use --mcp NAME=COMMAND [ARGS...] or --mcp NAME=https://host/path", s)
	}
	if mount.IsHTTPURL(rest) {
		return mount.Mount{Kind: mount.KindServer, Name: name, URL: rest}, nil
	}
	words, err := shellSplit(rest)
	if err != nil {
		return mount.Mount{}, usageErrorf("invalid --mcp %q: %v; --mcp-json takes the command and arguments as a JSON array", s, err)
	}
	return mount.Mount{Kind: mount.KindServer, Name: name, Command: words[0], Args: words[1:]}, nil
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

// prefixMode reads the tool prefix mode from flag, env or config file.
func (a *App) prefixMode(cmdFlags interface{ Changed(string) bool }) (mount.PrefixMode, error) {
	m, err := mount.ParsePrefixMode(a.v.GetString(keyToolPrefixMode))
	if err != nil {
		if cmdFlags != nil && cmdFlags.Changed("tool-prefix-mode") {
			return "", &usageError{msg: err.Error()}
		}
		return "", &configError{err}
	}
	return m, nil
}

// planMounts applies the prefix contract to the knowledge bases and checks
// the instance's whole namespace.
func planMounts(server string, naming agents.ToolNaming, mode mount.PrefixMode, confs []mount.Mount) ([]mount.Resolved, []mcpserver.PlannedTool, error) {
	mounts, err := mount.Resolve(server, mode, confs)
	if err != nil {
		return nil, nil, &configError{err}
	}
	tools, err := mcpserver.PlanTools(server, naming, mounts)
	if err != nil {
		return nil, nil, &configError{err}
	}
	return mounts, tools, nil
}

// unresolved is the configured part of resolved mounts.
func unresolved(rs []mount.Resolved) []mount.Mount {
	out := make([]mount.Mount, len(rs))
	for i, r := range rs {
		out[i] = r.Mount
	}
	return out
}

// recordPlan re-resolves an instance's mounts from its record, failing fast
// if the record was edited into something the contract refuses or that no
// longer matches what it says.
func recordPlan(rec *instance.Record) ([]mount.Resolved, []mcpserver.PlannedTool, error) {
	mode, err := mount.ParsePrefixMode(rec.ToolPrefixMode)
	if err != nil {
		return nil, nil, &configError{fmt.Errorf("instance %s: %w", rec.ID, err)}
	}
	mounts, tools, err := planMounts(rec.ServerName, rec.Capabilities.ToolNames, mode, unresolved(rec.Mounts))
	if err != nil {
		return nil, nil, fmt.Errorf("instance %s: %w", rec.ID, err)
	}
	for i, m := range mounts {
		r := rec.Mounts[i]
		if r.EffectivePrefix != m.EffectivePrefix || r.PrefixOrigin != m.PrefixOrigin {
			return nil, nil, &configError{fmt.Errorf("instance %s: the record says mount %q has prefix %q (%s), but it resolves to %q (%s); was the record edited? recreate the instance or use `instance mount`",
				rec.ID, m.Name, r.EffectivePrefix, r.PrefixOrigin, m.EffectivePrefix, m.PrefixOrigin)}
		}
	}
	return mounts, tools, nil
}

// Template locations inside an instance directory: user templates are kept
// so that a mount change can expand them again.
const templatesDir = "templates"

// renderFiles expands the instance's instruction and skill templates (or
// generates instructions.md) for its current tools.
func renderFiles(rec *instance.Record, mounts []mount.Resolved, tools []mcpserver.PlannedTool, templates, origins map[string]string) (map[string][]byte, error) {
	files := map[string][]byte{}
	if _, ok := templates[mcpserver.InstructionsFile]; !ok {
		files[mcpserver.InstructionsFile] = []byte(mcpserver.RenderInstructions(mcpserver.InstructionsInput{
			InstanceID: rec.ID, Agent: rec.Agent, ServerName: rec.ServerName, Mounts: mounts, Tools: tools,
		}))
	}
	names := make([]string, 0, len(templates))
	for name := range templates {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		src := templates[name]
		origin := origins[name]
		if origin == "" {
			origin = filepath.Join(rec.Dir, templatesDir, name)
		}
		out, err := mcpserver.ExpandPlaceholders(origin, src, tools)
		if err != nil {
			return nil, &configError{err}
		}
		files[name] = []byte(out)
		files[filepath.Join(templatesDir, name)] = []byte(src)
	}
	return files, nil
}

// readTemplates reads --instructions and --skill files.
func readTemplates(instructions string, skills []string) (map[string]string, map[string]string, error) {
	templates := map[string]string{}
	origins := map[string]string{}
	add := func(target, file string) error {
		data, err := os.ReadFile(file)
		if err != nil {
			return &configError{fmt.Errorf("read %s: %w", file, err)}
		}
		if prev, dup := origins[target]; dup {
			return usageErrorf("%s and %s would both be written as %s; rename one", prev, file, target)
		}
		templates[target], origins[target] = string(data), file
		return nil
	}
	if instructions != "" {
		if err := add(mcpserver.InstructionsFile, instructions); err != nil {
			return nil, nil, err
		}
	}
	for _, s := range skills {
		if err := add(filepath.Join("skills", filepath.Base(s)), s); err != nil {
			return nil, nil, err
		}
	}
	return templates, origins, nil
}

// keptTemplates reads the templates kept in an instance's directory.
func keptTemplates(rec *instance.Record) (map[string]string, error) {
	out := map[string]string{}
	for _, f := range rec.Files {
		rel, ok := strings.CutPrefix(f, templatesDir+string(filepath.Separator))
		if !ok {
			continue
		}
		data, err := os.ReadFile(filepath.Join(rec.Dir, f))
		if err != nil {
			return nil, err
		}
		out[rel] = string(data)
	}
	return out, nil
}

// describeMount is a mount's one-line description.
func describeMount(m mount.Resolved) string {
	var src string
	switch {
	case m.Kind == mount.KindKB:
		src = m.Path
	case m.URL != "":
		src = m.URL
	default:
		src = strings.Join(append([]string{m.Command}, m.Args...), " ")
	}
	desc := fmt.Sprintf("%s %s  %s  prefix %s (%s)", m.Kind, m.Name, src, orDash(m.EffectivePrefix), m.PrefixOrigin)
	if m.ReadOnly {
		desc += "  read-only"
	}
	return desc
}
