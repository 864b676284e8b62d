package instance

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/mcpserver/mount"
	"github.com/oklog/ulid/v2"
)

// DefaultServerName is [CreateOptions.ServerName]'s default.
const DefaultServerName = "agentctl"

// CreateOptions are the inputs of [Store.CreateInstance].
type CreateOptions struct {
	// Definition is the resolved agent definition; its capabilities are snapshotted.
	Definition *agents.Definition
	// Name is an optional label, unique among instances.
	Name string
	// Workspace is the directory the agent works in; it must exist.
	Workspace string
	// ServerName is the key S under which the endpoint is injected (default "agentctl").
	ServerName string
	// QuestionTimeout bounds how long ask_user_question waits. 0 records
	// none: the endpoint then waits its own default,
	// [github.com/agentctl/agentctl/mcpserver.DefaultQuestionTimeout], which
	// provision.Create records instead.
	QuestionTimeout time.Duration
	// Executable is the absolute path of the agentctl binary the client starts.
	Executable string
	// NoTrust leaves out "trust": true for clients that support it.
	NoTrust bool
	// AskVia, when set, overrides the definition's question policy for
	// every kind of run ([agents.Questions]): the instance's questions
	// always go to the store, or always to the client when it can ask.
	AskVia agents.AskVia
	// ToolPrefixMode is recorded as given (default [mount.PrefixModeMountName]).
	ToolPrefixMode string
	// Mounts are the mounts with their prefixes already resolved.
	Mounts []mount.Resolved
	// Transport is how the client reaches the endpoint: stdio (the zero
	// value: the client starts `agentctl mcp serve`) or http (the client
	// connects to Transport.URL, default [DefaultHTTPURL] for the id, with
	// the instance's token as a bearer header).
	Transport Transport
	// Files, when set, returns files to write into the instance directory
	// (relative path -> content), such as instructions.md and skills, for the
	// record being created. An error aborts the create.
	Files func(*Record) (map[string][]byte, error)
}

// newID returns a new instance or question id: a lower-case ULID, unique and
// sortable by creation time (strictly increasing within a process; ids made
// by several processes in the same millisecond order arbitrarily).
func (s *Store) newID(t time.Time) string {
	s.idMu.Lock()
	defer s.idMu.Unlock()
	return strings.ToLower(ulid.MustNew(ulid.Timestamp(t), s.entropy).String())
}

var serverNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_-]*$`) })

// MaxServerNameLength keeps room for tool names within clients' 64-character limit.
const MaxServerNameLength = 32

// ValidateServerName checks that S is safe in every client's tool names:
// lower-case letters, digits, '_' and '-', starting with a letter, no "__"
// (clients use it as a separator), not ending in '_' or '-'.
func ValidateServerName(s string) error {
	const how = "use lower-case letters, digits, '-' and single '_', starting with a letter, for example \"agentctl\" or \"my-tools\""
	switch {
	case s == "":
		return invalidf("server name is empty; %s", how)
	case len(s) > MaxServerNameLength:
		return invalidf("server name %q is %d characters; at most %d keep tool names within clients' limits", s, len(s), MaxServerNameLength)
	case !(s[0] >= 'a' && s[0] <= 'z'):
		return invalidf("server name %q starts with %q; it must start with a lower-case letter; %s", s, s[:1], how)
	case !serverNameRE().MatchString(s):
		bad := firstBadRune(s)
		return invalidf("server name %q contains %q, which clients reject or rewrite in tool names; %s", s, bad, how)
	case strings.Contains(s, "__"):
		return invalidf("server name %q contains \"__\", which clients use to separate server and tool; %s", s, how)
	case strings.HasSuffix(s, "_") || strings.HasSuffix(s, "-"):
		return invalidf("server name %q ends in %q; %s", s, s[len(s)-1:], how)
	}
	return nil
}

func firstBadRune(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r == '_' || r == '-' || r >= '0' && r <= '9') {
			return string(r)
		}
	}
	return ""
}

var labelRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`) })

// idLength is the length of an instance id (a ULID).
const idLength = ulid.EncodedSize

// crockford is the alphabet of ids: Crockford's base32, lower-case.
const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// couldBeID reports whether ref could be an instance id or a prefix of one,
// now or later, in either case ([Store.Get] accepts upper-case ids): 1 to 26
// characters of Crockford's base32, the first 0-7 (a ULID's 48-bit
// timestamp leaves the first character at most 7 until the year 10889).
func couldBeID(ref string) bool {
	if ref == "" || len(ref) > idLength || ref[0] < '0' || ref[0] > '7' {
		return false
	}
	for _, c := range strings.ToLower(ref) {
		if !strings.ContainsRune(crockford, c) {
			return false
		}
	}
	return true
}

// isID reports whether id is an instance id exactly as stored (lower-case).
func isID(id string) bool {
	return len(id) == idLength && id == strings.ToLower(id) && couldBeID(id)
}

// ValidateLabel checks an instance label (--name): letters, digits, '.', '_'
// and '-', starting with a letter or digit, and never something that could
// be read as an instance id or id prefix. [Store.Get] looks a reference up as
// an id, then a label, then an id prefix; a label like "01jq3" would shadow
// (or, deleted, hand over to) the instance whose id starts so.
//
// The rule depends on no other instance, so a label valid today stays valid:
// a label is refused when it is 1 to 26 characters of Crockford's base32
// (digits and letters but i, l, o and u, in either case) starting with a
// digit from 0 to 7, as every id does.
func ValidateLabel(label string) error {
	if !labelRE().MatchString(label) {
		return invalidf("label %q: use letters, digits, '.', '_' and '-', starting with a letter or digit", label)
	}
	if couldBeID(label) {
		return invalidf("label %q could be read as an instance id or id prefix (ids are %d characters of 0-9 and a-z but i, l, o, u, starting with 0-7); "+
			"start the label with a letter, or include a '-' or one of i, l, o, u, for example \"run-%s\"", label, idLength, label)
	}
	return nil
}

// CreateInstance resolves nothing and guesses nothing: it snapshots the
// definition's capabilities into a new record, writes the client's native MCP
// configuration into the instance's directory and stores the record. It is
// all-or-nothing: on any error no record and no directory are left behind;
// on a full file system the error is a [*DiskFullError]. It first makes
// the reserve that lets a delete work on a full disk, if it is missing and
// there is room (see space.go).
func (s *Store) CreateInstance(ctx context.Context, o CreateOptions) (rec *Record, err error) {
	defer func() {
		if err != nil {
			rec, err = nil, s.diskFull("create an instance", "", "", err)
		}
	}()
	if o.Definition == nil {
		return nil, invalidf("no agent definition")
	}
	if o.ServerName == "" {
		o.ServerName = DefaultServerName
	}
	if err := ValidateServerName(o.ServerName); err != nil {
		return nil, err
	}
	if o.Name != "" {
		if err := ValidateLabel(o.Name); err != nil {
			return nil, err
		}
	}
	if o.QuestionTimeout < 0 {
		return nil, invalidf("question timeout %s is negative", o.QuestionTimeout)
	}
	if !filepath.IsAbs(o.Executable) {
		return nil, invalidf("the agentctl executable path %q is not absolute", o.Executable)
	}
	ws, err := filepath.Abs(o.Workspace)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		return nil, invalidf("workspace %s is not a directory; pass an existing directory with --workspace", ws)
	}

	tr, err := checkTransport(o.Transport)
	if err != nil {
		return nil, err
	}
	token, err := NewToken()
	if err != nil {
		return nil, err
	}
	now := s.stamp()
	id := s.newID(now)
	if tr.Kind == TransportHTTP {
		tr.URL = expandURL(tr.URL, id)
	}
	caps := o.Definition.Capabilities
	caps.Questions = caps.Questions.WithDefaults()
	if o.AskVia != "" {
		if !slices.Contains(agents.AskVias, o.AskVia) {
			return nil, invalidf("invalid question place %q: use store or client", o.AskVia)
		}
		caps.Questions.Headless, caps.Questions.Interactive = o.AskVia, o.AskVia
	}
	rec = &Record{
		ID: id, Name: o.Name, Agent: o.Definition.ID, CreatedAt: now,
		ServerName:      o.ServerName,
		Capabilities:    caps,
		ConfigFormat:    o.Definition.MCP.ConfigFormat,
		Client:          NewClientFiles(&o.Definition.MCP),
		Workspace:       ws,
		ToolPrefixMode:  cmp.Or(o.ToolPrefixMode, string(mount.PrefixModeMountName)),
		Mounts:          append([]mount.Resolved{}, o.Mounts...),
		Transport:       tr,
		Dir:             filepath.Join(s.instancesDir(), id),
		Host:            s.host,
		NoTrust:         o.NoTrust,
		QuestionTimeout: Duration(o.QuestionTimeout),
	}

	s.sweepLeftovers(ctx)
	s.ensureReserve()
	// Stage every file in a private directory, then publish it with one rename
	// inside the transaction that inserts the record.
	staging, err := os.MkdirTemp(s.instancesDir(), ".staging-"+id+"-")
	if err != nil {
		return nil, fmt.Errorf("create instance directory: %w", err)
	}
	published := false
	defer func() {
		if !published {
			os.RemoveAll(staging)
		}
	}()
	if err := os.WriteFile(filepath.Join(staging, StoreMarker), []byte(s.identity()+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("write the instance directory's store marker: %w", err)
	}
	entry := s.EndpointEntry(rec, o.Executable)
	if tr.Kind == TransportHTTP {
		entry = ServerEntry{URL: tr.URL, Headers: map[string]string{"Authorization": BearerHeader(token)}}
	}
	entry.Trust = o.Definition.MCP.Trust && !o.NoTrust
	// A question timeout of 0 (only in direct store tests: provision.Create
	// records the endpoint's default) writes no tool-call timeout.
	entry.ToolTimeout = ClientToolTimeout(o.Definition, o.QuestionTimeout)
	rel, err := WriteClientConfig(staging, &o.Definition.MCP, rec.ServerName, entry)
	if err != nil {
		return nil, fmt.Errorf("write %s MCP configuration: %w", rec.Agent, err)
	}
	rec.MCPConfigPath = filepath.Join(rec.Dir, rel)
	rec.Files = []string{rel}
	if o.Files != nil {
		files, err := o.Files(rec)
		if err != nil {
			return nil, err
		}
		written, err := writeFiles(staging, files)
		if err != nil {
			return nil, err
		}
		rec.Files = append(rec.Files, written...)
	}

	raw, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	tx, err := s.db.BeginTx(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var name any
	if rec.Name != "" {
		name = rec.Name
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM instances WHERE name = ?`, rec.Name).Scan(&n); err != nil {
			return nil, err
		}
		if n > 0 {
			return nil, &InvalidError{Msg: fmt.Sprintf("an instance labelled %q already exists; choose another --name or delete it first", rec.Name)}
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO instances (id, name, agent, created_at, record, host) VALUES (?, ?, ?, ?, ?, ?)`,
		rec.ID, name, rec.Agent, now.Format(timeFormat), string(raw), rec.Host); err != nil {
		if s.db.be.isUnique(err) && rec.Name != "" {
			// Another process took the label since the check above
			// (PostgreSQL checks it at the insert, not at BEGIN).
			return nil, &InvalidError{Msg: fmt.Sprintf("an instance labelled %q already exists; choose another --name or delete it first", rec.Name)}
		}
		return nil, err
	}
	if err := setTokenHash(ctx, tx, rec.ID, token); err != nil {
		return nil, err
	}
	if s.beforeCommit != nil {
		if err := s.beforeCommit(); err != nil {
			return nil, err
		}
	}
	if err := os.Rename(staging, rec.Dir); err != nil {
		return nil, fmt.Errorf("publish instance directory: %w", err)
	}
	if err := tx.Commit(); err != nil {
		os.RemoveAll(rec.Dir)
		return nil, err
	}
	published = true
	rec.token = token
	return rec, nil
}

// writeFiles writes files into dir (each atomically: a temporary file, then a
// rename) and returns their relative paths, sorted.
func writeFiles(dir string, files map[string][]byte) ([]string, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		if !filepath.IsLocal(name) {
			return nil, invalidf("file %q would be written outside the instance directory", name)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := writeFileAtomic(filepath.Join(dir, name), files[name]); err != nil {
			return nil, fmt.Errorf("write %s: %w", name, err)
		}
	}
	return names, nil
}

func writeFileAtomic(path string, data []byte) error { return writeAtomic(path, data, 0o644) }

// UpdateInstance changes an instance's record under a write lock: fn edits
// the record and returns the files to (re)write into its directory. The
// record and the files change together or not at all (files are written
// before the commit; on a failed commit the old record stays and the
// rewritten files are restored from their previous contents).
func (s *Store) UpdateInstance(ctx context.Context, ref string, fn func(*Record) (write map[string][]byte, err error)) (*Record, error) {
	r, err := s.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	tx, err := s.db.BeginTx(ctx) // BEGIN IMMEDIATE: one writer at a time
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if err := tx.lock(ctx, "instance:"+r.ID); err != nil {
		return nil, err
	}
	var raw string
	if err := tx.QueryRowContext(ctx, `SELECT record FROM instances WHERE id = ?`, r.ID).Scan(&raw); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, &NotFoundError{What: "instance", Ref: ref, Deleted: true, Hint: "another agentctl deleted it while this command ran"}
		}
		return nil, err
	}
	if r, err = decodeRecord(r.ID, raw); err != nil {
		return nil, err
	}
	// fn sees, and the files go to, this host's directory; the record
	// keeps its own host's (see [Store.localize]).
	restore := s.localize(r)
	if s.Foreign(r) {
		if err := os.MkdirAll(r.Dir, 0o700); err != nil {
			return nil, err
		}
	}
	write, err := fn(r)
	if err != nil {
		return nil, err
	}
	// A delete moves the directory aside before it waits for the write
	// lock this holds: writing the files would make the directory again,
	// which no record would name once the delete commits.
	if _, err := os.Lstat(r.Dir); errors.Is(err, os.ErrNotExist) {
		return nil, &NotFoundError{What: "instance", Ref: ref, Deleted: true, Hint: "another agentctl is deleting it"}
	}
	// Keep what we overwrite, to restore it if the commit fails.
	backup := map[string][]byte{}
	for name := range write {
		if old, err := os.ReadFile(filepath.Join(r.Dir, name)); err == nil {
			backup[name] = old
		}
	}
	written, err := writeFiles(r.Dir, write)
	if err != nil {
		return nil, err
	}
	for _, name := range written {
		if !slices.Contains(r.Files, name) {
			r.Files = append(r.Files, name)
		}
	}
	restore()
	b, err := json.Marshal(r)
	s.localize(r)
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE instances SET record = ? WHERE id = ?`, string(b), r.ID); err != nil {
		return nil, err
	}
	// Endpoints serving the instance read it again (serving.Follow).
	if err := tx.notify(ctx, chanRecords, r.ID); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		for name := range write {
			if old, ok := backup[name]; ok {
				_ = writeFileAtomic(filepath.Join(r.Dir, name), old)
			} else {
				_ = os.Remove(filepath.Join(r.Dir, name))
			}
		}
		return nil, err
	}
	return r, nil
}

// leftoverAge is how old a staging or deleting directory, or an instance
// directory without a record, must be before a create removes it: one that
// a crash left behind, never one in use.
const leftoverAge = time.Hour

// sweepEvery is how often a create sweeps leftovers (see [Store.Sweep]): a
// create reads the marker's time, not the instances directory, so its cost
// does not grow with the store.
const sweepEvery = time.Hour

// sweepMarker is the file in the state directory whose modification time
// says when a create last swept.
const sweepMarker = ".last-sweep"

// sweepLeftovers runs [Store.Sweep] when the last sweep is older than
// [sweepEvery].
func (s *Store) sweepLeftovers(ctx context.Context) {
	marker := filepath.Join(s.dir, sweepMarker)
	if fi, err := os.Stat(marker); err == nil && s.now().Sub(fi.ModTime()) < sweepEvery {
		return
	}
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		return
	}
	now := s.now()
	_ = os.Chtimes(marker, now, now)
	_, _ = s.Sweep(ctx)
}

// StoreMarker is the file in an instance's directory that names the store
// its record is in ([Store.identity]): a state directory can hold the
// directories of several stores' instances (after `store migrate`, or with
// AGENTCTL_STORE set for some commands only), and [Store.Sweep] must not
// take another store's instance for a leftover of its own.
const StoreMarker = ".store"

// identity names the store for [StoreMarker]: its SQLite file's absolute
// path, or its PostgreSQL server and database (no user, password or
// parameters).
func (s *Store) identity() string {
	if s.sqlitePath != "" {
		p, err := filepath.Abs(s.sqlitePath)
		if err != nil {
			p = s.sqlitePath
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		return "sqlite:" + p
	}
	if u, err := url.Parse(string(s.url)); err == nil && u.Host != "" {
		return "postgres://" + u.Host + u.Path
	}
	return RedactStore(string(s.url))
}

// storeOf is the store an instance directory (or a delete's .deleting-
// one) at path names in its [StoreMarker]; false when it has none (made
// by an older agentctl: it may be any store's).
func storeOf(path string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(path, StoreMarker))
	return strings.TrimSpace(string(b)), err == nil
}

// Sweep removes what a create or delete killed half-way left, and returns
// the paths it removed: .staging-* directories (never published), and
// instance directories and .deleting-* ones that no record names (a
// create killed between publishing its directory and committing its
// record; a delete killed after removing its record) and that are this
// store's ([StoreMarker]; a .deleting- one of an older agentctl, without
// a marker, too): another store's instances may share the state
// directory. A .deleting- directory whose instance still has its record
// (a delete killed, or stalled, before removing it) is put back instead,
// so that the instance works again (and a new delete deletes it whole). A
// young directory is never touched: a create publishes the directory
// (renames its staging directory into place) inside the transaction that
// inserts the record, before the commit, so for a moment a live instance's
// directory has no committed record. `instance create` sweeps at most once
// an hour; `agentctl gc` sweeps at once.
func (s *Store) Sweep(ctx context.Context) ([]string, error) {
	entries, err := os.ReadDir(s.instancesDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	own := s.identity()
	var removed []string
	for _, e := range entries {
		name := e.Name()
		staging := strings.HasPrefix(name, ".staging-")
		deleting, isDeleting := strings.CutPrefix(name, ".deleting-")
		if !staging && !isDeleting && !(e.IsDir() && isID(name)) {
			continue
		}
		fi, err := e.Info()
		if err != nil || s.now().Sub(fi.ModTime()) <= leftoverAge {
			continue
		}
		path := filepath.Join(s.instancesDir(), name)
		if !staging {
			id := name
			if isDeleting {
				id = deleting
			}
			ok, err := s.Exists(ctx, id)
			if err != nil {
				return removed, err
			}
			if ok && isDeleting {
				// Its delete did not finish: the instance is whole again.
				if _, err := os.Lstat(filepath.Join(s.instancesDir(), id)); errors.Is(err, os.ErrNotExist) {
					_ = os.Rename(path, filepath.Join(s.instancesDir(), id))
				}
				continue
			}
			if ok {
				continue
			}
			// Another store's instance may share the state directory: a
			// directory is removed only when its marker names this store.
			// An instance directory without a marker may be any store's;
			// a .deleting- one without one (a delete of an older
			// agentctl) is removed as before.
			switch store, marked := storeOf(path); {
			case marked && store != own, !marked && !isDeleting:
				continue
			}
		}
		if err := os.RemoveAll(path); err != nil {
			return removed, err
		}
		removed = append(removed, path)
	}
	return removed, nil
}

// RequestRestart asks the endpoints serving instance ref, on every host,
// to restart its external servers named in servers (all of them when
// empty): their times in the record's [Record.Restarts] change, which the
// endpoints follow. It is an
// [InvalidError] when the instance has no external server, or none of
// that name.
func (s *Store) RequestRestart(ctx context.Context, ref string, servers []string) (*Record, error) {
	return s.UpdateInstance(ctx, ref, func(r *Record) (map[string][]byte, error) {
		var have []string
		for _, m := range r.Mounts {
			if m.Kind == mount.KindServer {
				have = append(have, m.Name)
			}
		}
		if len(have) == 0 {
			return nil, invalidf("instance %s has no external MCP server to restart (its knowledge bases are served in-process); add one with `agentctl instance mount add %s --mcp NAME=COMMAND`", r.ID, r.ID)
		}
		for _, n := range servers {
			if !slices.Contains(have, n) {
				// Not found, as `mount remove` of a mount that is not there.
				return nil, &NotFoundError{What: "external MCP server", Ref: n, Hint: fmt.Sprintf("instance %s's servers: %s", r.ID, strings.Join(have, ", "))}
			}
		}
		if r.Restarts == nil {
			r.Restarts = map[string]time.Time{}
		}
		at := s.stamp()
		if len(servers) == 0 {
			servers = []string{RestartAll}
		}
		for _, n := range servers {
			r.Restarts[n] = at
		}
		return nil, nil
	})
}
