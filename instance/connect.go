package instance

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/agentctl/agentctl/agents"
)

// Connect scopes: the file a client reads for one project, or for the user.
const (
	ScopeWorkspace = "workspace"
	ScopeUser      = "user"
)

// ClientFiles is where an instance's client reads its MCP server,
// snapshotted from its definition's [mcp] at create: the instance's own
// file, the member that holds the servers in it, and the files `instance
// connect` edits ([agents.Connect]).
type ClientFiles struct {
	File    string         `json:"file"`
	Key     string         `json:"key"`
	Connect agents.Connect `json:"connect"`
}

// NewClientFiles is what a record keeps of m.
func NewClientFiles(m *agents.MCPConfig) *ClientFiles {
	return &ClientFiles{File: m.File, Key: m.Key, Connect: m.Connect}
}

// clientFiles is rec's, or, for a record made before records kept them,
// its catalog agent's or its format's; nil when unknown.
func clientFiles(rec *Record) *ClientFiles {
	if rec.Client != nil {
		return rec.Client
	}
	if m, ok := agents.CatalogMCP(rec.Agent, rec.ConfigFormat); ok {
		return NewClientFiles(&m)
	}
	return nil
}

// connectFile is how `instance connect` edits a client's file.
type connectFile struct {
	// Key is the member holding the servers (JSON, TOML); "" for a YAML
	// file, which holds only our server.
	Key string
	// Kind is how the file is edited: "json", "toml" or "yaml" (replaced
	// whole by the instance's own file).
	Kind string
}

// ConnectOptions are the inputs of [Connect] and [Disconnect].
type ConnectOptions struct {
	// Scope is [ScopeWorkspace] (default) or [ScopeUser].
	Scope string
	// Getenv reads HOME, XDG_CONFIG_HOME and CODEX_HOME (default os.Getenv).
	Getenv func(string) string
	// Force replaces (connect) or removes (disconnect) an entry under the
	// record's server name that does not start this instance.
	Force bool
}

// ConnectResult is what [Connect] or [Disconnect] did.
type ConnectResult struct {
	// Path is the file edited.
	Path string `json:"path"`
	// Target is the file edited when Path is a symbolic link: the file
	// the link names (its backups are kept beside it).
	Target string `json:"target,omitempty"`
	// Key is the entry's place in it, such as "mcpServers.agentctl".
	Key string `json:"key"`
	// Action is added, replaced or unchanged (connect), removed or absent
	// (disconnect).
	Action string `json:"action"`
	// Backup is the copy of the file as it was before agentctl first
	// changed it, when there is one: none when agentctl made the file.
	Backup string `json:"backup,omitempty"`
	// Previous is the copy of the file as it was before this change
	// (FILE.agentctl-bak.1; older ones are rotated to .2 ... .5).
	Previous string `json:"previous,omitempty"`
	// Warnings are what the user should know of the change: a TOML file
	// written again as a whole, without its comments.
	Warnings []string `json:"warnings"`
	// Scrubbed are the backups of the file that held the instance's
	// bearer token, which disconnect took it out of.
	Scrubbed []string `json:"scrubbed"`
}

func resolveConnect(rec *Record, o ConnectOptions) (connectFile, string, error) {
	scope := o.Scope
	if scope == "" {
		scope = ScopeWorkspace
	}
	if scope != ScopeWorkspace && scope != ScopeUser {
		return connectFile{}, "", invalidf("unknown scope %q; use %s or %s", scope, ScopeWorkspace, ScopeUser)
	}
	cf := clientFiles(rec)
	if cf == nil {
		return connectFile{}, "", invalidf("agentctl knows no file that %s (format %q) reads; pass the instance's own file %s to the client", rec.Agent, rec.ConfigFormat, rec.MCPConfigPath)
	}
	f := connectFile{Key: cf.Key, Kind: agents.FileKind(cf.File)}
	if f.Kind == "yaml" {
		f.Key = ""
	}
	path, reads := cf.Connect.Workspace, cf.Connect.WorkspaceReads
	if scope == ScopeUser {
		path, reads = cf.Connect.User, cf.Connect.UserReads
	}
	if path == "" {
		return f, "", invalidf("%s has no %s file agentctl can connect: %s", rec.Agent, scope,
			cmp.Or(reads, "its definition names none; pass the instance's own file "+rec.MCPConfigPath+" to the client"))
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	xdg := "${XDG_CONFIG_HOME:-~/.config}"
	app := xdg
	if runtime.GOOS == "darwin" {
		app = "~/Library/Application Support"
	}
	named := path // as the definition writes it
	path = strings.NewReplacer("{server}", rec.ServerName, "{xdgconfig}", xdg, "{appconfig}", app).Replace(path)
	var unset []string
	path = os.Expand(path, func(v string) string {
		name, def, hasDef := strings.Cut(v, ":-")
		val := cmp.Or(getenv(name), def)
		if val == "" && !hasDef {
			unset = append(unset, name)
		}
		return val
	})
	if len(unset) > 0 {
		return f, "", invalidf("%s is not set, and %s's %s file (%s) is found through it: set it, or give a default in the definition (${%s:-DEFAULT})",
			unset[0], rec.Agent, scope, named, unset[0])
	}
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		home := getenv("HOME")
		if home == "" {
			return f, "", invalidf("HOME is not set; set it to find %s's %s file", rec.Agent, scope)
		}
		path = filepath.Join(home, rest)
	} else if scope == ScopeUser && !filepath.IsAbs(path) {
		return f, "", invalidf("%s's %s file is %q, not an absolute path: set the variables it names to directories (%s)", rec.Agent, scope, path, named)
	} else if !filepath.IsAbs(path) {
		path = filepath.Join(rec.Workspace, path)
	}
	return f, filepath.Clean(path), nil
}

// InstanceEntry is the entry the instance's own configuration file gives
// its server (from [ClientEntry] at create), as the client's file holds
// it; for a Continue block, the whole file.
func InstanceEntry(rec *Record) (any, error) {
	data, err := os.ReadFile(rec.MCPConfigPath)
	if err != nil {
		return nil, fmt.Errorf("read the instance's configuration: %w", err)
	}
	cf := clientFiles(rec)
	if cf == nil {
		return nil, invalidf("agentctl knows no file that %s (format %q) reads", rec.Agent, rec.ConfigFormat)
	}
	switch agents.FileKind(cf.File) {
	case "yaml":
		return data, nil
	case "toml":
		var doc map[string]any
		if _, err := toml.Decode(string(data), &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", rec.MCPConfigPath, err)
		}
		servers, _ := doc[cf.Key].(map[string]any)
		if e, ok := servers[rec.ServerName]; ok {
			return e, nil
		}
	default:
		doc, err := parseOrderedJSON(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rec.MCPConfigPath, err)
		}
		if servers, ok := memberObject(doc, cf.Key); ok {
			if e, ok := servers.get(rec.ServerName); ok {
				return e, nil
			}
		}
	}
	return nil, fmt.Errorf("%s has no entry %q; recreate the instance", rec.MCPConfigPath, rec.ServerName)
}

func memberObject(doc any, key string) (*jsonObject, bool) {
	o, ok := doc.(*jsonObject)
	if !ok {
		return nil, false
	}
	v, ok := o.get(key)
	if !ok {
		return nil, false
	}
	m, ok := v.(*jsonObject)
	return m, ok
}

// Connect writes rec's server entry, under rec's server name, into the
// file its client reads by default in o.Scope ([ConnectPath]), keeping every
// other byte of that file: in JSON only the entry's own bytes are written
// (the rest keeps its formatting, its numbers as written, its escapes and
// even invalid UTF-8); in Codex's TOML only the entry's tables. The file is
// edited under a lock and replaced atomically with its mode, and only if
// no one changed it meanwhile ([editConfig]); before each change a copy is
// kept as FILE.agentctl-bak.1 (rotated up to .5), and before the first one
// as FILE.agentctl-bak. A file that does not parse is refused and left as it
// is. Connecting again changes nothing.
func Connect(rec *Record, o ConnectOptions) (*ConnectResult, error) {
	f, path, err := resolveConnect(rec, o)
	if err != nil {
		return nil, err
	}
	entry, err := InstanceEntry(rec)
	if err != nil {
		return nil, err
	}
	res := &ConnectResult{Path: path, Key: joinKey(f.Key, rec.ServerName), Warnings: []string{}, Scrubbed: []string{}}
	err = editConfig(path, res, func(data []byte, exists bool) (*fileEdit, error) {
		res.Action, res.Warnings = "", []string{}
		switch f.Kind {
		case "yaml":
			switch {
			case !exists:
				res.Action = "added"
			case bytes.Equal(data, entry.([]byte)):
				res.Action = "unchanged"
				return nil, nil
			case !o.Force && !startsInstance(string(data), rec.ID):
				return nil, notOurs(path, res.Key, rec.ID, "replace", string(data))
			default:
				res.Action = "replaced"
			}
			return &fileEdit{next: entry.([]byte)}, nil
		case "toml":
			doc := map[string]any{}
			if len(bytes.TrimSpace(bytes.TrimPrefix(data, utf8BOM))) > 0 {
				d, err := decodeTOML(path, data)
				if err != nil {
					return nil, err
				}
				doc = d
			}
			servers, ok := doc[f.Key].(map[string]any)
			if !ok && doc[f.Key] != nil {
				return nil, invalidf("%s: %s is not a table, which is where the client looks for its servers; nothing was changed: make it a table ([%s.NAME] sections), or move the file away", path, f.Key, f.Key)
			}
			old, exists := servers[rec.ServerName]
			if err := decide(res, exists, old, entry, o.Force, rec.ID, path); err != nil || res.Action == "unchanged" {
				return nil, err
			}
			next, whole, err := editTOML(path, data, doc, f.Key, rec.ServerName, entry)
			if err != nil {
				return nil, err
			}
			if whole != "" {
				res.Warnings = []string{wholeWarning(path, whole)}
			}
			return &fileEdit{next: next}, nil
		default:
			return connectJSON(path, data, f.Key, rec, entry, o.Force, res)
		}
	})
	if err != nil {
		return res, err
	}
	if res.Action != "" {
		recordConnected(rec, path, entry)
	}
	return res, nil
}

// connectJSON adds or replaces rec's entry in a JSON file, changing only
// the entry's bytes (or, where there were none, the servers object's).
func connectJSON(path string, data []byte, key string, rec *Record, entry any, force bool, res *ConnectResult) (*fileEdit, error) {
	bom := bytes.HasPrefix(data, utf8BOM)
	body := bytes.TrimPrefix(data, utf8BOM)
	name := rec.ServerName
	withBOM := func(b []byte) *fileEdit {
		if bom { // as the file had it
			b = append(append([]byte{}, utf8BOM...), b...)
		}
		return &fileEdit{next: b}
	}
	unit := jsonIndent(body)
	if len(bytes.TrimSpace(body)) == 0 {
		servers, top := newJSONObject(), newJSONObject()
		servers.set(name, entry)
		top.set(key, servers)
		next, err := encodeOrderedJSON(top, unit)
		if err != nil {
			return nil, fmt.Errorf("%s: %w; nothing was changed", path, err)
		}
		res.Action = "added"
		return withBOM(next), nil
	}
	root, err := scanJSON(body)
	if err != nil {
		return nil, unreadable(path, err.Error())
	}
	if root.kind != '{' {
		return nil, invalidf("%s is not a JSON object, which is what the client reads; nothing was changed: fix the file, or move it away", path)
	}
	var next []byte
	_, sv := root.member(key)
	switch {
	case sv == nil:
		servers := newJSONObject()
		servers.set(name, entry)
		next, err = jsonInsert(body, root, key, servers, unit)
		res.Action = "added"
	case sv.val.kind != '{':
		return nil, invalidf("%s: %q is not an object of servers by name, which is where the client looks for them; nothing was changed: fix the file, or move it away", path, key)
	default:
		_, m := sv.val.member(name)
		if m == nil {
			next, err = jsonInsert(body, sv.val, name, entry, unit)
			res.Action = "added"
			break
		}
		old, derr := decodeJSON(body[m.val.start:m.val.end])
		if derr != nil {
			return nil, unreadable(path, derr.Error())
		}
		if err := decide(res, true, old, entry, force, rec.ID, path); err != nil || res.Action == "unchanged" {
			return nil, err
		}
		ind, _ := lineIndent(body, m.keyStart)
		var val []byte
		if val, err = encodeAt(entry, ind, unit); err == nil {
			next = splice(body, m.val.start, m.val.end, lineEnds(body, val))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w; nothing was changed", path, err)
	}
	if err := checkJSONEdit(path, body, next, key, name, entry); err != nil {
		return nil, err
	}
	return withBOM(next), nil
}

// decide sets res.Action for an entry that exists (or not) as old, to be
// entry, or refuses to replace someone else's entry.
func decide(res *ConnectResult, exists bool, old, entry any, force bool, id, path string) error {
	switch {
	case !exists:
		res.Action = "added"
	case sameValue(old, entry):
		res.Action = "unchanged"
	case !force && !startsInstance(old, id):
		return notOurs(path, res.Key, id, "replace", old)
	default:
		res.Action = "replaced"
	}
	return nil
}

// Disconnect removes rec's entry from the file [Connect] writes, changing
// nothing else in it (an empty map is left when it was the last; a
// Continue block file is removed). Only an entry that is still what
// agentctl wrote (what connect wrote there, or what the instance would
// write now) is removed: an entry under rec's server name that starts
// something else, or that was changed since (by hand), is refused and left
// unless o.Force, which removes it anyway (a backup is kept, as for every
// change). An absent entry or file is no error (Action "absent").
func Disconnect(rec *Record, o ConnectOptions) (*ConnectResult, error) {
	f, path, err := resolveConnect(rec, o)
	if err != nil {
		return nil, err
	}
	res := &ConnectResult{Path: path, Key: joinKey(f.Key, rec.ServerName), Action: "absent", Warnings: []string{}, Scrubbed: []string{}}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		res.Scrubbed, res.Warnings = scrubBackups(resolveLink(path), instanceTokens(rec, nil))
		return res, nil
	}
	name := rec.ServerName
	var removed any // the entry removed
	err = editConfig(path, res, func(data []byte, exists bool) (*fileEdit, error) {
		res.Action, res.Warnings = "absent", []string{}
		removed = nil
		if !exists {
			return nil, nil
		}
		switch f.Kind {
		case "yaml":
			if err := removable(rec, path, res.Key, string(data), o.Force); err != nil {
				return nil, err
			}
			res.Action, removed = "removed", string(data)
			return &fileEdit{remove: true}, nil
		case "toml":
			if len(bytes.TrimSpace(bytes.TrimPrefix(data, utf8BOM))) == 0 {
				return nil, nil
			}
			doc, err := decodeTOML(path, data)
			if err != nil {
				return nil, err
			}
			servers, _ := doc[f.Key].(map[string]any)
			old, ok := servers[name]
			if !ok {
				return nil, nil
			}
			if err := removable(rec, path, res.Key, old, o.Force); err != nil {
				return nil, err
			}
			next, whole, err := editTOML(path, data, doc, f.Key, name, nil)
			if err != nil {
				return nil, err
			}
			if whole != "" {
				res.Warnings = []string{wholeWarning(path, whole)}
			}
			res.Action, removed = "removed", old
			return &fileEdit{next: next}, nil
		default:
			body := bytes.TrimPrefix(data, utf8BOM)
			if len(bytes.TrimSpace(body)) == 0 {
				return nil, nil
			}
			root, err := scanJSON(body)
			if err != nil {
				return nil, unreadable(path, err.Error())
			}
			_, sv := root.member(f.Key)
			if sv == nil || sv.val.kind != '{' {
				return nil, nil
			}
			i, m := sv.val.member(name)
			if m == nil {
				return nil, nil
			}
			old, err := decodeJSON(body[m.val.start:m.val.end])
			if err != nil {
				return nil, unreadable(path, err.Error())
			}
			if err := removable(rec, path, res.Key, old, o.Force); err != nil {
				return nil, err
			}
			next := jsonRemove(body, sv.val, i)
			if err := checkJSONEdit(path, body, next, f.Key, name, nil); err != nil {
				return nil, err
			}
			res.Action, removed = "removed", old
			return &fileEdit{next: append(data[:len(data)-len(body):len(data)-len(body)], next...)}, nil
		}
	})
	if err != nil {
		return res, err
	}
	if res.Action == "removed" {
		forgetConnected(rec, path)
	}
	var failed []string
	res.Scrubbed, failed = scrubBackups(resolveLink(path), instanceTokens(rec, removed))
	res.Warnings = append(res.Warnings, failed...)
	return res, nil
}

// instanceTokens are the bearer tokens of rec found in its own
// configuration and in removed (an entry taken out of a client's file),
// when that entry starts rec.
func instanceTokens(rec *Record, removed any) []string {
	var texts []string
	if e, err := InstanceEntry(rec); err == nil {
		texts = append(texts, canonical(e))
	}
	if removed != nil && startsInstance(removed, rec.ID) {
		texts = append(texts, canonical(removed))
	}
	var tokens []string
	for _, t := range texts {
		for _, tok := range tokenRE().FindAllString(t, -1) {
			if !slices.Contains(tokens, tok) {
				tokens = append(tokens, tok)
			}
		}
	}
	return tokens
}

// removable says whether disconnect may remove old, the entry under rec's
// server name: one that starts another instance or something else, or
// that is no longer what agentctl wrote, only with force.
func removable(rec *Record, path, key string, old any, force bool) error {
	if force {
		return nil
	}
	if !startsInstance(old, rec.ID) {
		return notOurs(path, key, rec.ID, "remove", old)
	}
	if wroteIt(rec, path, old) {
		return nil
	}
	return invalidf("%s: the entry %s was changed since agentctl connected it (it is neither what connect wrote nor what instance %s would write now); nothing was changed. "+
		"Remove it yourself, or pass --force to remove it anyway (the file is kept first as %s.1)", path, key, rec.ID, path+BackupSuffix)
}

// wroteIt reports whether old is what agentctl connected into path for
// rec, or what it would connect now.
func wroteIt(rec *Record, path string, old any) bool {
	if now, err := InstanceEntry(rec); err == nil && canonical(now) == canonical(old) {
		return true
	}
	if rec.Dir == "" {
		return false
	}
	data, err := os.ReadFile(connectedRecordPath(rec, path))
	if err != nil {
		return false
	}
	var r connectedRecord
	return json.Unmarshal(data, &r) == nil && r.Path == path && r.Entry == entryHash(old)
}

// Connected reports whether the file rec's client reads in o.Scope (the
// one connect edits there) holds an entry under rec's server name that
// starts this instance: what `instance run` checks for a client that reads
// MCP servers only from that file. It returns the file's path either way (or "" when
// the client reads none in that scope).
func Connected(rec *Record, o ConnectOptions) (string, bool) {
	f, path, err := resolveConnect(rec, o)
	if err != nil {
		return path, false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return path, false
	}
	var entry any
	switch f.Kind {
	case "yaml":
		entry = string(data)
	case "toml":
		var m map[string]any
		if _, err := toml.Decode(string(data), &m); err != nil {
			return path, false
		}
		servers, _ := m[f.Key].(map[string]any)
		entry = servers[rec.ServerName]
	default:
		body := bytes.TrimPrefix(data, utf8BOM)
		root, err := scanJSON(body)
		if err != nil {
			return path, false
		}
		if _, sv := root.member(f.Key); sv != nil && sv.val.kind == '{' {
			if _, m := sv.val.member(rec.ServerName); m != nil {
				entry, _ = decodeJSON(body[m.val.start:m.val.end])
			}
		}
	}
	return path, entry != nil && startsInstance(entry, rec.ID)
}
