package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// kind is how a flag takes its value.
type kind int

const (
	switchFlag kind = iota // no value
	valueFlag              // the next argument, or --name=value
	manyFlag               // every following argument up to the next flag
)

// flag is one flag a client accepts: its names (the first is the key it is
// recorded under) and how it takes a value.
type flag struct {
	names string // comma-separated, e.g. "-p,--print"
	kind  kind
}

// client is how one program is driven.
type client struct {
	sub      string // subcommand of the headless form ("exec", "run"); "" none
	headless string // key of the flag that makes a run headless; "" = sub does
	prompt   string // key of the flag holding the prompt; "" = positionals
	flags    []flag
	load     func(*invocation) ([]*server, error)
	// allow says whether the model may call tool of s without a person
	// confirming it in a headless run; nil allows every call.
	allow func(inv *invocation, s *server, tool string) error
}

// invocation is one parsed command line.
type invocation struct {
	client   string
	args     []string
	flags    map[string][]string // by key; a switch records ""
	headless bool
	prompt   string
	cwd      string

	configs   []string // configuration files read
	codexHome string   // CODEX_HOME used (codex only)
}

func (inv *invocation) has(key string) bool { _, ok := inv.flags[key]; return ok }

// model is the --model flag every client accepts.
var model = flag{"--model", valueFlag}

// clients are the programs fakeclient can be, by program name.
var clients = map[string]*client{
	"auggie": {headless: "--print", prompt: "-i", load: loadAuggie, flags: []flag{
		{"--print", switchFlag}, {"--dont-save-session", switchFlag},
		{"-i,--instruction", valueFlag}, {"--mcp-config", valueFlag}, model,
	}},
	"claude": {headless: "-p", load: loadClaude, allow: allowClaude, flags: []flag{
		{"-p,--print", switchFlag}, {"--mcp-config", manyFlag}, {"--strict-mcp-config", switchFlag},
		{"--allowedTools,--allowed-tools", manyFlag}, {"--permission-mode", valueFlag},
		{"--dangerously-skip-permissions", switchFlag}, {"--output-format", valueFlag},
		{"--verbose", switchFlag}, model,
	}},
	"codex": {sub: "exec", load: loadCodex, flags: []flag{
		{"-c,--config", valueFlag}, {"--skip-git-repo-check", switchFlag},
		{"-m,--model", valueFlag}, {"--full-auto", switchFlag}, {"-s,--sandbox", valueFlag},
		{"--dangerously-bypass-approvals-and-sandbox", switchFlag}, {"--json", switchFlag},
	}},
	"gemini": {headless: "-p", prompt: "-p", load: settingsLoader("GEMINI_CLI_SYSTEM_SETTINGS_PATH", ".gemini"), flags: []flag{
		{"-p,--prompt", valueFlag}, {"-m,--model", valueFlag},
	}},
	"qwen": {headless: "-p", prompt: "-p", load: settingsLoader("QWEN_CODE_SYSTEM_SETTINGS_PATH", ".qwen"), flags: []flag{
		{"-p,--prompt", valueFlag}, {"-m,--model", valueFlag},
	}},
	"opencode": {sub: "run", load: loadOpencode, flags: []flag{{"-m,--model", valueFlag}}},
	"kilo":     {sub: "run", load: loadOpencode, flags: []flag{{"-m,--model", valueFlag}}},
	"copilot": {headless: "-p", prompt: "-p", load: loadCopilot, allow: allowCopilot, flags: []flag{
		{"-p,--prompt", valueFlag}, {"--allow-all-tools", switchFlag}, {"--allow-tool", valueFlag},
		{"--additional-mcp-config", valueFlag}, model,
	}},
	"cn": {headless: "-p", load: loadContinue, allow: allowContinue, flags: []flag{
		{"-p,--print", switchFlag}, {"--config", valueFlag}, {"--mcp", valueFlag}, {"--auto", switchFlag}, model,
	}},
	"droid": {sub: "exec", load: jsonLoader(".factory/mcp.json"), flags: []flag{
		{"-m,--model", valueFlag}, {"--auto", valueFlag}, {"--skip-permissions-unsafe", switchFlag},
	}},
	"grok": {headless: "-p", prompt: "-p", load: loadGrok, flags: []flag{
		{"-p,--prompt", valueFlag}, {"-m,--model", valueFlag},
	}},
}

func clientNames() string { return strings.Join(slices.Sorted(maps.Keys(clients)), ", ") }

// parseArgs reads args as client name c would.
func parseArgs(name string, c *client, args []string) (*invocation, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	inv := &invocation{client: name, args: args, flags: map[string][]string{}, cwd: cwd}
	byName := map[string]flag{}
	for _, f := range c.flags {
		for n := range strings.SplitSeq(f.names, ",") {
			byName[n] = f
		}
	}
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			positional = append(positional, a)
			continue
		}
		n, v, hasValue := strings.Cut(a, "=")
		if !strings.HasPrefix(n, "--") {
			n, hasValue = a, false
		}
		f, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("unknown flag %s (%s accepts %s)", n, name, names(c.flags))
		}
		key, _, _ := strings.Cut(f.names, ",")
		switch {
		case f.kind == switchFlag:
			if hasValue {
				return nil, fmt.Errorf("flag %s takes no value", n)
			}
			inv.flags[key] = append(inv.flags[key], "")
		case hasValue:
			inv.flags[key] = append(inv.flags[key], v)
		case i+1 >= len(args):
			return nil, fmt.Errorf("flag %s needs a value", n)
		case f.kind == valueFlag:
			i++
			inv.flags[key] = append(inv.flags[key], args[i])
		default: // manyFlag
			n0 := len(inv.flags[key])
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				inv.flags[key] = append(inv.flags[key], args[i])
			}
			if len(inv.flags[key]) == n0 {
				return nil, fmt.Errorf("flag %s needs a value", n)
			}
		}
	}
	if c.sub != "" && len(positional) > 0 && positional[0] == c.sub {
		inv.headless = true
		positional = positional[1:]
	}
	if c.headless != "" {
		inv.headless = inv.has(c.headless)
	}
	if v := inv.flags[c.prompt]; c.prompt != "" && len(v) > 0 {
		inv.prompt = v[len(v)-1]
	} else {
		inv.prompt = strings.Join(positional, " ")
	}
	return inv, nil
}

func names(flags []flag) string {
	var all []string
	for _, f := range flags {
		all = append(all, strings.ReplaceAll(f.names, ",", "/"))
	}
	return strings.Join(all, ", ")
}

// allowClaude is Claude Code's permission check in a -p run.
func allowClaude(inv *invocation, s *server, tool string) error {
	if slices.Contains(inv.flags["--permission-mode"], "bypassPermissions") || inv.has("--dangerously-skip-permissions") {
		return nil
	}
	full := "mcp__" + s.Name + "__" + tool
	for _, list := range inv.flags["--allowedTools"] {
		for p := range strings.FieldsFuncSeq(list, func(r rune) bool { return r == ',' || r == ' ' }) {
			if p == full || p == "mcp__"+s.Name || (strings.HasSuffix(p, "*") && strings.HasPrefix(full, strings.TrimSuffix(p, "*"))) {
				return nil
			}
		}
	}
	return fmt.Errorf("permission denied: %s is not in --allowedTools and --permission-mode is not bypassPermissions", full)
}

// allowCopilot is Copilot CLI's permission check in a -p run.
func allowCopilot(inv *invocation, s *server, tool string) error {
	if inv.has("--allow-all-tools") {
		return nil
	}
	for _, a := range inv.flags["--allow-tool"] {
		if a == s.Name || a == s.Name+"("+tool+")" {
			return nil
		}
	}
	return fmt.Errorf("permission denied: %s(%s) needs --allow-all-tools or --allow-tool", s.Name, tool)
}

// allowContinue is the Continue CLI's permission check in a -p run.
func allowContinue(inv *invocation, s *server, tool string) error {
	if inv.has("--auto") {
		return nil
	}
	return fmt.Errorf("permission denied: %s needs --auto in a -p run", tool)
}

// inGitTree says whether dir is inside a git work tree.
func inGitTree(dir string) bool {
	for {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}
