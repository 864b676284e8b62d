package agents

import (
	"bufio"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
)

// DecodeError is a problem in one definition file, with its location.
type DecodeError struct {
	File string // path shown to the user
	Line int    // 1-based; 0 when unknown
	Key  string // dotted TOML key; empty when the problem is not about a key
	Msg  string
}

func (e *DecodeError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Key != "" {
		fmt.Fprintf(&b, "key %q: ", e.Key)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Decode strictly decodes one agent definition. file is used in errors only.
// An unknown key, a value of the wrong type or an invalid value is an error
// naming the file, the line and the key, with a suggestion for near-miss keys.
func Decode(file string, data []byte) (*Definition, error) {
	return decodeOver(file, data, nil)
}

// decodeOver decodes a definition file over base (a catalog definition with
// the file's id, or nil): the keys the file sets replace base's, key by
// key, and the rest stay, so an override of a catalog client can change
// its program alone. A list or a template the file sets replaces base's
// whole, and so does a [capabilities.tool_names] table. An [mcp] that names
// a config_format but no file and no entry takes that format's shapes, not
// base's.
func decodeOver(file string, data []byte, base *Definition) (*Definition, error) {
	var d Definition
	if base != nil {
		d = *base.clone()
	}
	// Where each key is set matters only for an error: scan for it then.
	lines := func() keyIndex { return keyLines(data) }
	md, err := toml.Decode(string(data), &d)
	if err != nil {
		return nil, tomlError(file, lines(), err)
	}
	for _, k := range md.Undecoded() {
		if freeForm(k) {
			continue
		}
		return nil, &DecodeError{File: file, Line: lines().find(k.String()), Key: k.String(), Msg: unknownKeyMsg(k)}
	}
	d.hasRun = md.IsDefined("run") || base != nil && base.hasRun
	if base != nil {
		// Two tables are one thing each, taken whole from the file when
		// it sets them: a naming scheme (a template with another's
		// separator or limits would be neither), and an [mcp] that names
		// a format and no shape of its own.
		ownNames := md.IsDefined("capabilities", "tool_names")
		ownShape := md.IsDefined("mcp", "config_format") && !md.IsDefined("mcp", "file") && !md.IsDefined("mcp", "entry")
		if ownNames || ownShape {
			var own Definition
			if _, err := toml.Decode(string(data), &own); err == nil {
				if ownNames {
					d.Capabilities.ToolNames = own.Capabilities.ToolNames
				}
				if ownShape {
					d.MCP = own.MCP
				}
			}
		}
	}
	d.MCP.orderTemplates(md)
	d.applyDefaults(md.IsDefined("mcp", "trust"))
	if fe := d.validate(); fe != nil {
		return nil, &DecodeError{File: file, Line: lines().find(fe.key), Key: fe.key, Msg: fe.msg}
	}
	return &d, nil
}

// freeForm reports whether an undecoded key is inside a template (the
// client's own keys, any shape): arrays of tables there are kept by
// [Object], but the decoder counts their keys as undecoded.
func freeForm(k toml.Key) bool {
	return len(k) > 2 && k[0] == "mcp" && (k[1] == "entry" || k[1] == "remote_entry" || k[1] == "document")
}

// unknownKeyMsg says which segment of k is unknown, with the nearest
// known key there or, when none is near, the keys that are known there.
func unknownKeyMsg(k toml.Key) string {
	known := schemaKeys()
	for i := range k {
		prefix := strings.Join(k[:i+1], ".")
		if slices.Contains(known, prefix) {
			continue
		}
		parent := strings.Join(k[:i], ".")
		msg := "unknown key"
		if i < len(k)-1 {
			msg = fmt.Sprintf("unknown key %q", k[i])
		}
		if s := suggestKey(prefix); s != "" {
			return msg + fmt.Sprintf(" (did you mean %q?)", s)
		}
		where := "at the top of the file"
		if parent != "" {
			where = "in [" + parent + "]"
		}
		return msg + fmt.Sprintf(" (known %s: %s)", where, strings.Join(childKeys(parent), ", "))
	}
	return "unknown key"
}

// childKeys lists the schema's keys directly below parent ("": the top).
func childKeys(parent string) []string {
	var out []string
	for _, k := range schemaKeys() {
		kp, kl := "", k
		if i := strings.LastIndexByte(k, '.'); i >= 0 {
			kp, kl = k[:i], k[i+1:]
		}
		if kp == parent {
			out = append(out, kl)
		}
	}
	return out
}

// The regular expressions below place errors; they are compiled on the
// first error, not at start-up.
var lineKeyRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`)
})

func tomlError(file string, lines keyIndex, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		key := pe.LastKey
		msg := pe.Message
		line := pe.Position.Line
		if line == 0 && key != "" {
			line = lines.find(key)
		}
		return &DecodeError{File: file, Line: line, Key: key, Msg: msg}
	}
	if m := lineKeyRE().FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return &DecodeError{File: file, Line: n, Key: m[2], Msg: m[3]}
	}
	return &DecodeError{File: file, Msg: strings.TrimPrefix(err.Error(), "toml: ")}
}

// keyIndex maps dotted keys to the line that sets them.
type keyIndex map[string]int

func (k keyIndex) find(key string) int {
	for key != "" {
		if n, ok := k[key]; ok {
			return n
		}
		i := strings.LastIndexByte(key, '.')
		if i < 0 {
			break
		}
		key = key[:i]
	}
	return 0
}

var (
	tableRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\[\[?\s*([^\]]+?)\s*\]\]?`) })
	keyRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*([A-Za-z0-9_."-]+?)\s*=`) })
)

// keyLines is a small line scanner that finds where each key is set. It is
// used only to place errors; toml.Decode remains the parser.
func keyLines(data []byte) keyIndex {
	idx := keyIndex{}
	table := ""
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := tableRE().FindStringSubmatch(line); m != nil {
			table = unquoteKey(m[1])
			if _, ok := idx[table]; !ok {
				idx[table] = n
			}
			continue
		}
		if m := keyRE().FindStringSubmatch(line); m != nil {
			k := unquoteKey(m[1])
			if table != "" {
				k = table + "." + k
			}
			if _, ok := idx[k]; !ok {
				idx[k] = n
			}
		}
	}
	return idx
}

func unquoteKey(k string) string {
	parts := strings.Split(k, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"`)
	}
	return strings.Join(parts, ".")
}

// schemaKeys lists every dotted key of the Definition schema (built the
// first time a near-miss key needs a suggestion, not at start-up).
var schemaKeys = sync.OnceValue(func() []string {
	var keys []string
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name := f.Tag.Get("toml")
			if name == "" || name == "-" {
				continue
			}
			k := name
			if prefix != "" {
				k = prefix + "." + name
			}
			keys = append(keys, k)
			if f.Type.Kind() == reflect.Struct {
				walk(k, f.Type)
			}
		}
	}
	walk("", reflect.TypeOf(Definition{}))
	sort.Strings(keys)
	return keys
})

// suggestKey returns the schema key closest to an unknown key, if close enough.
func suggestKey(unknown string) string {
	parent, last := "", unknown
	if i := strings.LastIndexByte(unknown, '.'); i >= 0 {
		parent, last = unknown[:i], unknown[i+1:]
	}
	best, bestD := "", 0
	for _, k := range schemaKeys() {
		kp, kl := "", k
		if i := strings.LastIndexByte(k, '.'); i >= 0 {
			kp, kl = k[:i], k[i+1:]
		}
		if kp != parent {
			continue
		}
		d := levenshtein(last, kl)
		if d > max(1, len(kl)/3) {
			continue // too far to be a typo
		}
		if best == "" || d < bestD {
			best, bestD = kl, d
		}
	}
	return best
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// tomlDecodeLoose decodes without strictness; used only to read what it can of
// a broken file.
func tomlDecodeLoose(data []byte, v any) (toml.MetaData, error) {
	return toml.Decode(string(data), v)
}
