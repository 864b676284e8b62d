package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// loadContinue reads the Continue CLI's --config file and each --mcp block
// file, as cn merges them into one configuration. The module has no
// YAML library, so this reads only the shape agentctl writes:
//
//	name: agentctl            # top-level "key: value" lines, ignored
//	mcpServers:
//	  - name: "agentctl"      # an item starts with "- "
//	    command: "/bin/x"
//	    args: ["a", "b"]
//	    env: {"K": "V"}
//
// Scalars are plain or JSON-quoted; lists and maps are in JSON flow form.
// Anything else is an error naming the line.
func loadContinue(inv *invocation) ([]*server, error) {
	var paths []string
	if c := inv.flags["--config"]; len(c) > 0 {
		paths = append(paths, c[len(c)-1])
	}
	// Each --mcp FILE adds its block's servers to the configuration.
	paths = append(paths, inv.flags["--mcp"]...)
	var out []*server
	for _, path := range paths {
		servers, err := loadContinueFile(inv, path)
		if err != nil {
			return nil, err
		}
		out = append(out, servers...)
	}
	return out, nil
}

// loadContinueFile reads one Continue configuration or block file.
func loadContinueFile(inv *invocation, path string) ([]*server, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(inv.cwd, path)
	}
	inv.configs = append(inv.configs, path)
	var out []*server
	var cur *server
	inList := false
	for i, line := range strings.Split(string(data), "\n") {
		text := strings.TrimSpace(line)
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		bad := func(why string) error {
			return fmt.Errorf("%s:%d: %s (fakeclient reads only the YAML shape agentctl writes)", path, i+1, why)
		}
		if line[0] != ' ' {
			key, value, ok := strings.Cut(text, ":")
			if !ok {
				return nil, bad("want key: value")
			}
			inList = key == "mcpServers" && strings.TrimSpace(value) == ""
			continue
		}
		if !inList {
			return nil, bad("indented line outside mcpServers")
		}
		if rest, ok := strings.CutPrefix(text, "- "); ok {
			cur = &server{}
			out = append(out, cur)
			text = rest
		}
		if cur == nil {
			return nil, bad("want a list item")
		}
		key, value, ok := strings.Cut(text, ":")
		if !ok {
			return nil, bad("want key: value")
		}
		if err := setField(cur, key, strings.TrimSpace(value)); err != nil {
			return nil, bad(err.Error())
		}
	}
	for _, s := range out {
		if s.Name == "" || s.Command == "" {
			return nil, fmt.Errorf("%s: each mcpServers item needs a name and a command", path)
		}
	}
	return out, nil
}

// setField sets one field of a Continue server item from its YAML value.
func setField(s *server, key, value string) error {
	var dst any
	switch key {
	case "name":
		dst = &s.Name
	case "command":
		dst = &s.Command
	case "args":
		dst = &s.Args
	case "env":
		dst = &s.Env
	default:
		return nil // other keys (type, cwd, ...) are not needed here
	}
	if value != "" && strings.ContainsAny(value[:1], `"[{`) {
		if err := json.Unmarshal([]byte(value), dst); err != nil {
			return fmt.Errorf("%s: %v", key, err)
		}
		return nil
	}
	p, ok := dst.(*string)
	if !ok {
		return fmt.Errorf("%s: want a JSON flow value", key)
	}
	*p = value
	return nil
}
