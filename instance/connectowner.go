package instance

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
)

// Whose entry is it: what connect wrote, and the instance an entry starts
// or reaches.

// connectedRecord is what connect wrote into a client's file (a hash of
// it: an HTTP entry holds the instance's token), kept in the instance's
// directory so that disconnect knows the entry as agentctl wrote it after
// the instance's own changed (a rotated token).
type connectedRecord struct {
	Path  string `json:"path"`
	Entry string `json:"entry_sha256"`
}

func entryHash(v any) string {
	sum := sha256.Sum256([]byte(canonical(v)))
	return hex.EncodeToString(sum[:])
}

func connectedRecordPath(rec *Record, path string) string {
	sum := sha256.Sum256([]byte(path))
	return filepath.Join(rec.Dir, "connected-"+hex.EncodeToString(sum[:8])+".json")
}

// recordConnected keeps what connect wrote into path; it is only an aid to
// disconnect, so failing to keep it is no error.
func recordConnected(rec *Record, path string, entry any) {
	if rec.Dir == "" {
		return
	}
	if _, err := os.Stat(rec.Dir); err != nil {
		return
	}
	data, err := json.Marshal(connectedRecord{Path: path, Entry: entryHash(entry)})
	if err == nil {
		_ = writeAtomic(connectedRecordPath(rec, path), data, 0o600)
	}
}

func forgetConnected(rec *Record, path string) {
	if rec.Dir != "" {
		_ = os.Remove(connectedRecordPath(rec, path))
	}
}

// canonical is an entry (or a block file's text) in one form for
// comparison: member order and numbers as written kept.
func canonical(v any) string {
	switch t := v.(type) {
	case []byte:
		return "text:" + string(t)
	case string:
		return "text:" + t
	}
	if b, err := encodeOrderedJSON(v, ""); err == nil {
		return string(b)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func notOurs(path, key, id, verb string, old any) error {
	whose := "it starts something else"
	if other := entryInstance(old); other != "" {
		whose = "it starts instance " + other
	}
	how := "Give this instance another --server-name (agentctl instance create), or pass --force to replace it anyway"
	if verb == "remove" {
		how = "It is not this instance's to remove; pass --force to remove it anyway"
	}
	return invalidf("%s: the entry %s is not instance %s's (%s); nothing was changed. %s", path, key, id, whose, how)
}

func joinKey(key, server string) string {
	if key == "" {
		return server
	}
	return key + "." + server
}

// startsInstance reports whether an entry (or a block file's text) starts
// instance id, as [entryInstance] finds it.
func startsInstance(v any, id string) bool {
	return entryInstance(v) == id
}

// entryInstance is the agentctl instance an entry (or a block file's text)
// starts, or "": the argument of --instance (or --instance=ID) after "mcp",
// "serve" in a list of arguments, whatever other flags come between (the
// last, as the command line takes it; none after a "--"); or the instance
// id in an http(s) URL (the default URL's path is /instances/ID/mcp). A
// string is read as words, so that a block file's `args: ["mcp", ...]` and
// a shell command's text are lists too. Lists come before what they hold,
// and members in order (a map's by sorted key); the first found wins.
func entryInstance(v any) string {
	switch t := v.(type) {
	case string:
		if id := argsInstance(strings.FieldsFunc(t, func(r rune) bool {
			return unicode.IsSpace(r) || strings.ContainsRune(`,[]"'`, r)
		})); id != "" {
			return id
		}
		return urlInstance(t)
	case []string:
		return argsInstance(t)
	case []any:
		ss := make([]string, len(t))
		for i, e := range t {
			ss[i], _ = e.(string)
		}
		if id := argsInstance(ss); id != "" {
			return id
		}
		for _, e := range t {
			if id := entryInstance(e); id != "" {
				return id
			}
		}
	case *jsonObject:
		for _, k := range t.keys {
			if id := entryInstance(t.vals[k]); id != "" {
				return id
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if id := entryInstance(t[k]); id != "" {
				return id
			}
		}
	}
	return ""
}

// argsInstance is the value of --instance in the arguments after the first
// "mcp", "serve" in args, or "".
func argsInstance(args []string) string {
	i := 0
	for ; i+1 < len(args) && (args[i] != "mcp" || args[i+1] != "serve"); i++ {
	}
	id := ""
	for i += 2; i < len(args) && args[i] != "--"; i++ {
		switch a := args[i]; {
		case a == "--instance" && i+1 < len(args):
			i++
			id = args[i]
		case strings.HasPrefix(a, "--instance="):
			id = strings.TrimPrefix(a, "--instance=")
		}
	}
	return id
}

// urlInstance is the instance id in an http(s) URL in s (up to a quote,
// space or newline): the first word of it, letters and digits between
// other characters, that is an instance id; or "".
func urlInstance(s string) string {
	for rest := s; ; {
		i := strings.Index(rest, "http://")
		if j := strings.Index(rest, "https://"); j >= 0 && (i < 0 || j < i) {
			i = j
		}
		if i < 0 {
			return ""
		}
		rest = rest[i:]
		u := rest
		if end := strings.IndexAny(u, "\" \n"); end >= 0 {
			u = u[:end]
		}
		for _, w := range strings.FieldsFunc(u, func(r rune) bool {
			return (r < '0' || r > '9') && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z')
		}) {
			if isID(w) {
				return w
			}
		}
		rest = rest[len("http"):]
	}
}

// sameValue compares two entries as JSON.
func sameValue(a, b any) bool {
	ea, err1 := encodeOrderedJSON(a, "")
	eb, err2 := encodeOrderedJSON(b, "")
	if err1 == nil && err2 == nil {
		return bytes.Equal(ea, eb)
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}
