package agents

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

//go:generate go run ./internal/gencatalog

// The catalog (catalog/*.toml) is built into the binary as Go values
// (catalog_gen.go, written by internal/gencatalog through Decode), not as
// TOML to decode at every start.

// SourceCatalog is the [Definition.Source] of definitions embedded in the binary.
const SourceCatalog = "catalog"

// ErrUnknownAgent is returned (wrapped in [*UnknownAgentError]) for an id that no
// definition has.
var ErrUnknownAgent = errors.New("unknown agent")

// UnknownAgentError names the unknown id and the known ones.
type UnknownAgentError struct {
	ID    string
	Known []string
	// Dir is the directory of user definitions ("" when none is read).
	Dir string
}

func (e *UnknownAgentError) Error() string {
	where := "the agents directory"
	if e.Dir != "" {
		where = e.Dir
		switch fi, err := os.Stat(e.Dir); {
		case err != nil:
			where += ", which does not exist"
		case !fi.IsDir():
			where += ", which is not a directory (--agents-dir, AGENTCTL_AGENTS_DIR and agents_dir name a directory)"
		}
	}
	return fmt.Sprintf("unknown agent %q; known agents: %s (add your own in a TOML file under %s)",
		e.ID, strings.Join(e.Known, ", "), where)
}

func (e *UnknownAgentError) Unwrap() error { return ErrUnknownAgent }

// Catalog is the set of agent definitions in force: the embedded catalog with
// user definitions layered over it. A broken user file does not hide the rest:
// it is kept in [Catalog.Problems] and makes [Catalog.Lookup] of the id it was
// meant to define fail with that file's error.
type Catalog struct {
	defs     map[string]*Definition
	problems []*FileProblem
	userDir  string
}

// FileProblem is a user definition file that could not be used.
type FileProblem struct {
	File string
	// ID is the id the file was meant to define: its id key if that much could
	// be read, else the file's base name.
	ID  string
	Err error
}

func (p *FileProblem) Error() string { return p.Err.Error() }
func (p *FileProblem) Unwrap() error { return p.Err }

// LoadOptions says where user definitions are.
type LoadOptions struct {
	// UserDir holds user definitions (*.toml). A missing directory is not an error.
	UserDir string
	// Only, when set, takes only the catalog's definition with this id
	// (catalog/<id>.toml) and the user definitions: what a command that
	// needs one known agent pays, instead of the whole catalog. The
	// catalog then knows fewer agents: an error listing the known ones
	// should come from a full load.
	Only string
}

// Load reads the embedded catalog and the user definitions.
func Load(opts LoadOptions) (*Catalog, error) {
	c := &Catalog{defs: map[string]*Definition{}, userDir: opts.UserDir}
	for _, d := range catalogDefinitions() {
		if opts.Only == "" || d.ID == opts.Only {
			c.defs[d.ID] = d
		}
	}
	if opts.UserDir == "" {
		return c, nil
	}
	files, err := filepath.Glob(filepath.Join(opts.UserDir, "*.toml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	seen := map[string]string{}
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), ".") {
			continue // an editor's lock or backup (.#x.toml, .x.toml.swp), or hidden on purpose
		}
		data, err := os.ReadFile(f)
		if err == nil {
			var d *Definition
			// A file with a catalog id overrides what it sets of the
			// catalog's definition (with Only, whichever it is).
			d, err = decodeOver(f, data, catalogDefinition(declaredID(data)))
			if err == nil {
				if prev, dup := seen[d.ID]; dup {
					err = &DecodeError{File: f, Line: keyLines(data).find("id"), Key: "id",
						Msg: fmt.Sprintf("id %q is already defined by %s; each id may be defined once", d.ID, prev)}
				} else {
					seen[d.ID] = f
					d.Source = f
					c.defs[d.ID] = d
					continue
				}
			}
		}
		c.problems = append(c.problems, &FileProblem{File: f, ID: guessID(f, data), Err: err})
	}
	return c, nil
}

// catalogDefinition is the catalog's definition with this id, or nil.
func catalogDefinition(id string) *Definition {
	for _, d := range catalogDefinitions() {
		if d.ID == id {
			return d
		}
	}
	return nil
}

// declaredID is the id a file sets, or "" when it sets none or does not parse.
func declaredID(data []byte) string {
	var partial struct {
		ID string `toml:"id"`
	}
	if _, err := tomlDecodeLoose(data, &partial); err == nil {
		return partial.ID
	}
	return ""
}

// guessID reads the id a broken file was meant to define.
func guessID(file string, data []byte) string {
	if id := declaredID(data); id != "" {
		return id
	}
	for _, line := range strings.Split(string(data), "\n") {
		if m := keyRE().FindStringSubmatch(line); m != nil && m[1] == "id" {
			v := strings.TrimSpace(line[strings.IndexByte(line, '=')+1:])
			if i := strings.IndexByte(v, '#'); i >= 0 {
				v = strings.TrimSpace(v[:i])
			}
			return strings.Trim(v, `"'`)
		}
	}
	return strings.TrimSuffix(filepath.Base(file), ".toml")
}

// Lookup returns the definition with this id. If a broken user file was meant
// to define it, that file's error is returned instead.
func (c *Catalog) Lookup(id string) (*Definition, error) {
	for _, p := range c.problems {
		if p.ID == id {
			return nil, p
		}
	}
	if d, ok := c.defs[id]; ok {
		return d, nil
	}
	return nil, &UnknownAgentError{ID: id, Known: c.IDs(), Dir: c.userDir}
}

// IDs returns the ids of the usable definitions, sorted.
func (c *Catalog) IDs() []string {
	ids := make([]string, 0, len(c.defs))
	for id := range c.defs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Definitions returns the usable definitions sorted by id, excluding ids that a
// broken user file was meant to override.
func (c *Catalog) Definitions() []*Definition {
	broken := map[string]bool{}
	for _, p := range c.problems {
		broken[p.ID] = true
	}
	var out []*Definition
	for _, id := range c.IDs() {
		if !broken[id] {
			out = append(out, c.defs[id])
		}
	}
	return out
}

// Problems returns the user files that could not be used.
func (c *Catalog) Problems() []*FileProblem { return c.problems }
