package agents

import (
	"bufio"
	"errors"
	"fmt"
	"reflect"
	"regexp"
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
	var d Definition
	// Where each key is set matters only for an error: scan for it then.
	lines := func() keyIndex { return keyLines(data) }
	md, err := toml.Decode(string(data), &d)
	if err != nil {
		return nil, tomlError(file, lines(), err)
	}
	if undec := md.Undecoded(); len(undec) > 0 {
		k := undec[0].String()
		msg := "unknown key"
		if s := suggestKey(k); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		} else {
			msg += " (see `agentctl agents show auggie -o json` for the schema)"
		}
		return nil, &DecodeError{File: file, Line: lines().find(k), Key: k, Msg: msg}
	}
	d.hasRun = md.IsDefined("run")
	d.MCP.orderTemplates(md)
	d.applyDefaults()
	if fe := d.validate(); fe != nil {
		return nil, &DecodeError{File: file, Line: lines().find(fe.key), Key: fe.key, Msg: fe.msg}
	}
	return &d, nil
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
