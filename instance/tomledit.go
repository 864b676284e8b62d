package instance

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/BurntSushi/toml"
)

// TOML (Codex's config.toml), edited in place where it can be.
//
// The entry's tables ([mcp_servers.NAME] and the tables under it) are
// found by a scan of the file's lines and only they are replaced or
// removed; a new entry is written after the last [mcp_servers.*] table (or
// at the end). The result is decoded and must hold exactly the file's
// values with the entry changed; when it does not (an entry written as an
// inline table or dotted keys), the file is decoded and encoded again as a
// whole, which keeps its values but not its comments (the backup keeps
// them).

// tomlSection is a table header's line and the lines up to the last one
// with something on it (not blank, not only a comment) before the next.
type tomlSection struct {
	path       []string
	array      bool
	start, end int
}

func scanTOML(s []byte) []tomlSection {
	var secs []tomlSection
	ml := "" // the closing quotes, inside a multi-line string
	depth := 0
	for pos := 0; pos < len(s); {
		next := len(s)
		if i := bytes.IndexByte(s[pos:], '\n'); i >= 0 {
			next = pos + i + 1
		}
		line := s[pos:next]
		i, content := 0, ml != "" || depth > 0
		if ml == "" && depth == 0 {
			t := bytes.TrimLeft(line, " \t")
			if len(t) > 0 && t[0] == '[' {
				if path, array, n, ok := tomlHeader(t); ok {
					secs = append(secs, tomlSection{path: path, array: array, start: pos, end: next})
					i = len(line) - len(t) + n
				}
			}
		}
		for i < len(line) {
			c := line[i]
			if ml != "" {
				switch {
				case bytes.HasPrefix(line[i:], []byte(ml)):
					i += 3
					for n := 0; n < 2 && i < len(line) && line[i] == ml[0]; n++ {
						i++
					}
					ml = ""
				case ml[0] == '"' && c == '\\':
					i += 2
				default:
					i++
				}
				continue
			}
			switch c {
			case '#':
				i = len(line)
				continue
			case ' ', '\t', '\r', '\n':
			case '"', '\'':
				content = true
				if q := bytes.Repeat([]byte{c}, 3); bytes.HasPrefix(line[i:], q) {
					ml = string(q)
					i += 3
					continue
				}
				j := i + 1
				for j < len(line) && line[j] != c && line[j] != '\n' {
					if c == '"' && line[j] == '\\' {
						j++
					}
					j++
				}
				i = j + 1
				continue
			case '[', '{':
				depth++
				content = true
			case ']', '}':
				depth--
				content = true
			default:
				content = true
			}
			i++
		}
		if content && len(secs) > 0 && secs[len(secs)-1].start != pos {
			secs[len(secs)-1].end = next
		}
		pos = next
	}
	return secs
}

// tomlHeader reads a table header ([a."b".c] or [[a.b]]) at the start of
// t: its keys, whether it is an array of tables, and its length.
func tomlHeader(t []byte) (path []string, array bool, n int, ok bool) {
	i := 1
	if len(t) > 1 && t[1] == '[' {
		array, i = true, 2
	}
	for {
		for i < len(t) && (t[i] == ' ' || t[i] == '\t') {
			i++
		}
		if i >= len(t) {
			return nil, false, 0, false
		}
		switch t[i] {
		case '"':
			j := i + 1
			for j < len(t) && t[j] != '"' {
				if t[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(t) {
				return nil, false, 0, false
			}
			var k string
			if _, err := toml.Decode("k = "+string(t[i:j+1]), &struct {
				K *string `toml:"k"`
			}{&k}); err != nil {
				return nil, false, 0, false
			}
			path = append(path, k)
			i = j + 1
		case '\'':
			j := bytes.IndexByte(t[i+1:], '\'')
			if j < 0 {
				return nil, false, 0, false
			}
			path = append(path, string(t[i+1:i+1+j]))
			i += j + 2
		default:
			j := i
			for j < len(t) && (t[j] == '_' || t[j] == '-' || t[j] >= '0' && t[j] <= '9' || t[j] >= 'a' && t[j] <= 'z' || t[j] >= 'A' && t[j] <= 'Z') {
				j++
			}
			if j == i {
				return nil, false, 0, false
			}
			path = append(path, string(t[i:j]))
			i = j
		}
		for i < len(t) && (t[i] == ' ' || t[i] == '\t') {
			i++
		}
		if i < len(t) && t[i] == '.' {
			i++
			continue
		}
		if i < len(t) && t[i] == ']' {
			i++
			if array {
				if i >= len(t) || t[i] != ']' {
					return nil, false, 0, false
				}
				i++
			}
			return path, array, i, true
		}
		return nil, false, 0, false
	}
}

// tomlEntryBlock is the entry's tables as TOML: [KEY.NAME] and any under it.
func tomlEntryBlock(key, name string, entry any) ([]byte, error) {
	var b bytes.Buffer
	enc := toml.NewEncoder(&b)
	enc.Indent = ""
	if err := enc.Encode(map[string]any{key: map[string]any{name: entry}}); err != nil {
		return nil, err
	}
	out := b.Bytes()
	// The encoder writes the empty [KEY] first: the file has it, or needs
	// none.
	if i := bytes.IndexByte(out, '\n'); i >= 0 && !bytes.Contains(out[:i], []byte(".")) {
		out = out[i+1:]
	}
	return out, nil
}

// tomlCut removes [start, end) from s with the blank line before it (or,
// at the start of the file, after it).
func tomlCut(s []byte, start, end int) []byte {
	switch {
	case start >= 2 && s[start-1] == '\n' && s[start-2] == '\n':
		start--
	case start >= 4 && string(s[start-4:start]) == "\r\n\r\n":
		start -= 2
	case start == 0 && end < len(s) && s[end] == '\n':
		end++
	case start == 0 && bytes.HasPrefix(s[end:], []byte("\r\n")):
		end += 2
	}
	return splice(s, start, end, nil)
}

// errTOMLInline: KEY is an inline table or dotted keys, which TOML does
// not let a [KEY.NAME] table extend.
var errTOMLInline = errors.New("the servers are not written as tables")

// tomlEdit sets (or, with entry nil, removes) KEY.NAME in the TOML file s,
// changing only that entry's tables; had says s holds KEY. When KEY is
// not written as tables (KEY = { ... }, or KEY.x = ...), a table added
// would not be TOML: errTOMLInline.
func tomlEdit(s []byte, key, name string, entry any, had bool) ([]byte, error) {
	secs := scanTOML(s)
	var mine []tomlSection
	lastKey := -1
	for i, sec := range secs {
		if len(sec.path) >= 1 && sec.path[0] == key {
			lastKey = i
		}
		if len(sec.path) >= 2 && sec.path[0] == key && sec.path[1] == name {
			mine = append(mine, sec)
		}
	}
	if had && lastKey < 0 {
		return nil, errTOMLInline
	}
	eol := []byte("\n") // the file's line ends, not the encoder's
	if bytes.Contains(s, []byte("\r\n")) {
		eol = []byte("\r\n")
	}
	var block []byte
	if entry != nil {
		var err error
		if block, err = tomlEntryBlock(key, name, entry); err != nil {
			return nil, err
		}
		block = bytes.ReplaceAll(block, []byte("\n"), eol)
	}
	out := s
	for i := len(mine) - 1; i >= 0; i-- {
		if i == 0 && entry != nil {
			out = splice(out, mine[0].start, mine[0].end, block)
		} else {
			out = tomlCut(out, mine[i].start, mine[i].end)
		}
	}
	if len(mine) > 0 || entry == nil {
		return out, nil
	}
	at := len(out)
	if lastKey >= 0 {
		at = secs[lastKey].end
	}
	var text []byte
	if at > 0 && out[at-1] != '\n' {
		text = append(text, eol...)
	}
	if at > 0 {
		text = append(text, eol...)
	}
	text = append(text, block...)
	return splice(out, at, at, text), nil
}

// decodeTOML decodes a client's TOML file, or says where it does not parse.
func decodeTOML(path string, data []byte) (map[string]any, error) {
	var m map[string]any
	if _, err := toml.Decode(string(data), &m); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, unreadable(path, fmt.Sprintf("line %d: %s", pe.Position.Line, pe.Message))
		}
		return nil, unreadable(path, err.Error())
	}
	return m, nil
}

// editTOML changes KEY.NAME in s to entry (removes it when nil), where doc
// is s decoded: in place when the result holds exactly that change, else
// by encoding the whole changed document again, which keeps its values but
// not its comments or layout; whole then says why.
func editTOML(path string, s []byte, doc map[string]any, key, name string, entry any) (next []byte, whole string, err error) {
	_, had := doc[key]
	servers, _ := doc[key].(map[string]any)
	if servers == nil {
		servers = map[string]any{}
		doc[key] = servers
	}
	if entry == nil {
		delete(servers, name)
	} else {
		servers[name] = entry
	}
	next, err = tomlEdit(s, key, name, entry, had)
	switch {
	case errors.Is(err, errTOMLInline):
		whole = fmt.Sprintf("its %s cannot take a table of their own (an inline table, or dotted keys)", key)
	case err != nil:
		whole = fmt.Sprintf("agentctl could not edit its %s in place (%v)", key, err)
	default:
		var got map[string]any
		if _, err := toml.Decode(string(next), &got); err == nil {
			if _, ok := got[key]; !ok && len(servers) == 0 {
				// The entry was the only table under KEY: the file
				// without it has no KEY at all, which is the same.
				got[key] = map[string]any{}
			}
			if sameTOML(got, doc) {
				return next, "", nil
			}
		}
		whole = fmt.Sprintf("agentctl's edit of its %s in place did not read back as the same values", key)
	}
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(doc); err != nil {
		return nil, "", fmt.Errorf("%s: %w; nothing was changed", path, err)
	}
	return b.Bytes(), whole, nil
}

// sameTOML compares two decoded TOML documents as TOML encodes them (map
// keys sorted), which, unlike JSON, has nan and inf.
func sameTOML(a, b map[string]any) bool {
	var ea, eb bytes.Buffer
	if toml.NewEncoder(&ea).Encode(a) != nil || toml.NewEncoder(&eb).Encode(b) != nil {
		return sameValue(a, b)
	}
	return bytes.Equal(ea.Bytes(), eb.Bytes())
}

// wholeWarning is what connect and disconnect say of a TOML file they
// wrote again as a whole, and why.
func wholeWarning(path, why string) string {
	return fmt.Sprintf("%s was written again as a whole, since %s: its values are kept, but not its comments or layout; the file as it was is in its backup", path, why)
}
