package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
)

// parseKBFlag parses --kb NAME=DIR[,prefix=P][,ro][,max=BYTES].
func parseKBFlag(s string) (kbConfig, error) {
	const how = "use --kb NAME=DIR, optionally followed by ,prefix=P ,ro ,max=BYTES"
	name, rest, ok := strings.Cut(s, "=")
	if !ok || name == "" || rest == "" {
		return kbConfig{}, usageErrorf("invalid --kb %q: %s", s, how)
	}
	parts := strings.Split(rest, ",")
	kb := kbConfig{Name: name, Path: parts[0]}
	for _, opt := range parts[1:] {
		k, v, _ := strings.Cut(opt, "=")
		switch k {
		case "prefix", "tool_prefix":
			kb.ToolPrefix = v
		case "ro", "read_only", "readonly":
			kb.ReadOnly = v == "" || v == "true"
		case "max", "max_bytes":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return kbConfig{}, usageErrorf("invalid --kb %q: max must be a positive number of bytes", s)
			}
			kb.MaxBytes = n
		default:
			return kbConfig{}, usageErrorf("invalid --kb %q: unknown option %q; %s", s, opt, how)
		}
	}
	return kb, nil
}

// kbMounts returns the knowledge bases of the config file followed by those
// of --kb flags, with absolute paths to existing folders.
func (a *App) kbMounts(flags []string) ([]kbConfig, error) {
	var out []kbConfig
	for _, kb := range a.file.KBs {
		if kb.Path != "" && !filepath.IsAbs(kb.Path) {
			kb.Path = filepath.Join(a.file.dir, kb.Path)
		}
		out = append(out, kb)
	}
	for _, f := range flags {
		kb, err := parseKBFlag(f)
		if err != nil {
			return nil, err
		}
		out = append(out, kb)
	}
	for i, kb := range out {
		if kb.Path == "" {
			return nil, &configError{fmt.Errorf("knowledge base %q has no path", kb.Name)}
		}
		abs, err := filepath.Abs(kb.Path)
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return nil, &configError{fmt.Errorf("knowledge base %q: %s is not a directory", kb.Name, abs)}
		}
		out[i].Path = abs
	}
	return out, nil
}

// prefixMode reads the tool prefix mode from flag, env or config file.
func (a *App) prefixMode(cmdFlags interface{ Changed(string) bool }) (mcpserver.PrefixMode, error) {
	m, err := mcpserver.ParsePrefixMode(a.v.GetString(keyToolPrefixMode))
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
func planMounts(server string, naming agents.ToolNaming, mode mcpserver.PrefixMode, kbs []kbConfig) ([]mcpserver.MountConfig, []mcpserver.PlannedTool, error) {
	specs := make([]mcpserver.MountSpec, len(kbs))
	for i, kb := range kbs {
		specs[i] = mcpserver.MountSpec{Kind: "kb", Name: kb.Name, ToolPrefix: kb.ToolPrefix}
	}
	resolved, err := mcpserver.ResolveMounts(server, mode, specs)
	if err != nil {
		return nil, nil, &configError{err}
	}
	mounts := make([]mcpserver.MountConfig, len(kbs))
	for i, kb := range kbs {
		mounts[i] = mcpserver.MountConfig{ResolvedMount: resolved[i], Path: kb.Path, ReadOnly: kb.ReadOnly, MaxBytes: kb.MaxBytes}
	}
	tools, err := mcpserver.PlanTools(server, naming, mounts)
	if err != nil {
		return nil, nil, &configError{err}
	}
	return mounts, tools, nil
}

func recordMounts(ms []mcpserver.MountConfig) []instance.Mount {
	out := make([]instance.Mount, len(ms))
	for i, m := range ms {
		out[i] = instance.Mount{Kind: m.Kind, Name: m.Name, Path: m.Path, ToolPrefix: m.ToolPrefix,
			EffectivePrefix: m.Prefix, PrefixOrigin: string(m.Origin), ReadOnly: m.ReadOnly, MaxBytes: m.MaxBytes}
	}
	return out
}

func kbConfigs(ms []instance.Mount) []kbConfig {
	var out []kbConfig
	for _, m := range ms {
		if m.Kind == "kb" {
			out = append(out, kbConfig{Name: m.Name, Path: m.Path, ToolPrefix: m.ToolPrefix, ReadOnly: m.ReadOnly, MaxBytes: m.MaxBytes})
		}
	}
	return out
}

// recordPlan re-resolves an instance's mounts from its record, failing fast
// if the record was edited into something the contract refuses or that no
// longer matches what it says.
func recordPlan(rec *instance.Record) ([]mcpserver.MountConfig, []mcpserver.PlannedTool, error) {
	mode, err := mcpserver.ParsePrefixMode(rec.ToolPrefixMode)
	if err != nil {
		return nil, nil, &configError{fmt.Errorf("instance %s: %w", rec.ID, err)}
	}
	mounts, tools, err := planMounts(rec.ServerName, rec.Capabilities.ToolNames, mode, kbConfigs(rec.Mounts))
	if err != nil {
		return nil, nil, fmt.Errorf("instance %s: %w", rec.ID, err)
	}
	for i, m := range mounts {
		r := rec.Mounts[i]
		if r.EffectivePrefix != m.Prefix || r.PrefixOrigin != string(m.Origin) {
			return nil, nil, &configError{fmt.Errorf("instance %s: the record says mount %q has prefix %q (%s), but it resolves to %q (%s); was the record edited? recreate the instance or use `instance mount`",
				rec.ID, m.Name, r.EffectivePrefix, r.PrefixOrigin, m.Prefix, m.Origin)}
		}
	}
	return mounts, tools, nil
}

// Template locations inside an instance directory: user templates are kept
// so that a mount change can expand them again.
const templatesDir = "templates"

// renderFiles expands the instance's instruction and skill templates (or
// generates instructions.md) for its current tools.
func renderFiles(rec *instance.Record, mounts []mcpserver.MountConfig, tools []mcpserver.PlannedTool, templates, origins map[string]string) (map[string][]byte, error) {
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
