package instance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/agentctl/agentctl/mcpserver/mount"
)

// TestStoreConformance runs one table of behaviour checks against each
// backend of the store, SQLite and PostgreSQL, each check on a database of
// its own, and then compares what the two backends answered to the checks
// that note it: the same statements, written once, must give the same
// answers on both. Without PostgreSQL's programs the postgres half fails
// (testkit says how to install them); it never skips.
func TestStoreConformance(t *testing.T) {
	var mu sync.Mutex
	notes := map[string]map[string][]string{} // check → backend → notes
	backends := []struct {
		kind string
		// setup returns the function that makes a fresh database for a
		// check: its store URL ("" for SQLite in the check's state directory).
		setup func(t *testing.T) func(t *testing.T) StoreURL
	}{
		{"sqlite", func(*testing.T) func(*testing.T) StoreURL {
			return func(*testing.T) StoreURL { return "" }
		}},
		{"postgres", func(t *testing.T) func(*testing.T) StoreURL {
			p := testkit.SharedPostgres(t)
			return func(t *testing.T) StoreURL { return StoreURL(p.NewDatabase(t)) }
		}},
	}
	for _, b := range backends {
		t.Run(b.kind, func(t *testing.T) {
			fresh := b.setup(t)
			for _, c := range conformanceChecks {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					e := &confEnv{kind: b.kind, dir: t.TempDir()}
					e.url = fresh(t)
					c.run(t, e)
					if t.Failed() {
						return
					}
					mu.Lock()
					defer mu.Unlock()
					if notes[c.name] == nil {
						notes[c.name] = map[string][]string{}
					}
					notes[c.name][b.kind] = e.notes
				})
			}
			if b.kind == "postgres" {
				// A server of its own: the shared one must not be stopped.
				t.Run("listener reconnects after a server restart", func(t *testing.T) {
					t.Parallel()
					confRestart(t)
				})
			}
		})
	}
	t.Run("backends agree", func(t *testing.T) {
		for _, c := range conformanceChecks {
			s, okS := notes[c.name]["sqlite"]
			p, okP := notes[c.name]["postgres"]
			if !okS || !okP {
				t.Logf("%s: not compared: it failed on a backend (see there)", c.name)
				continue
			}
			if !slices.Equal(s, p) {
				t.Errorf("%s: the backends answered differently:\n%s", c.name, confDiff(s, p))
			}
		}
	})
}

// conformanceChecks are the checks each backend passes, each on a fresh
// database.
var conformanceChecks = []struct {
	name string
	run  func(t *testing.T, e *confEnv)
}{
	{"get by id label prefix and upper case", confGet},
	{"labels are unique", confLabelUnique},
	{"concurrent creates of one label", confLabelRace},
	{"record round trip", confRoundTrip},
	{"records and list options", confList},
	{"tokens", confTokens},
	{"questions and answers", confQuestions},
	{"answer by reference", confAnswerRef},
	{"inbox", confInbox},
	{"events and status", confEvents},
	{"events resume under concurrent writers", confEventsResume},
	{"runs", confRuns},
	{"update", confUpdate},
	{"concurrent updates lose nothing", confUpdateRace},
	{"delete", confDelete},
	{"watch", confWatch},
	{"two stores on one database", confTwoStores},
	{"migrations", confMigrations},
	{"open errors name the database never the password", confOpenErrors},
}

// confWait is how long a check waits for what must come: far beyond a
// notification's latency on a loaded machine, so that only a lost one
// fails.
const confWait = 20 * time.Second

// confEnv is one check's database on one backend.
type confEnv struct {
	kind  string   // "sqlite" or "postgres"
	dir   string   // the state directory of the check's first host
	url   StoreURL // the database: "" for SQLite in dir
	notes []string // what the check answered, compared across backends
}

// note records an answer to compare with the other backend's; it must
// hold nothing that differs between runs (ids, paths, times).
func (e *confEnv) note(format string, args ...any) {
	e.notes = append(e.notes, fmt.Sprintf(format, args...))
}

// open opens a Store on the check's database in its state directory, as
// another process of the same host does.
func (e *confEnv) open(t *testing.T, opts ...Option) *Store {
	t.Helper()
	return confOpen(t, e.dir, e.url, opts...)
}

// elsewhere opens a Store on the check's database from another state
// directory, as another host does (SQLite: the same file, named with
// sqlite:PATH).
func (e *confEnv) elsewhere(t *testing.T, opts ...Option) *Store {
	t.Helper()
	u := e.url
	if e.kind == "sqlite" {
		u = StoreURL("sqlite:" + filepath.Join(e.dir, DBFile))
	}
	return confOpen(t, t.TempDir(), u, opts...)
}

func confOpen(t *testing.T, dir string, u StoreURL, opts ...Option) *Store {
	t.Helper()
	st, err := Open(context.Background(), dir, append([]Option{WithStore(u)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

var confCatalog = sync.OnceValues(func() (*agents.Catalog, error) { return agents.Load(agents.LoadOptions{}) })

// confOptions are the options of a create of agent labelled label (""
// for none). The create helper of the external tests (store_test.go) is
// out of this package's reach.
func confOptions(t *testing.T, agent, label string) CreateOptions {
	t.Helper()
	c, err := confCatalog()
	if err != nil {
		t.Fatal(err)
	}
	def, err := c.Lookup(agent)
	if err != nil {
		t.Fatal(err)
	}
	return CreateOptions{Definition: def, Name: label, Workspace: t.TempDir(), Executable: "/opt/agentctl/bin/agentctl"}
}

func confCreate(t *testing.T, st *Store, agent, label string, mod func(*CreateOptions)) *Record {
	t.Helper()
	o := confOptions(t, agent, label)
	if mod != nil {
		mod(&o)
	}
	rec, err := st.CreateInstance(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// confClock is a clock the test sets, shared by stores used from several
// goroutines. It starts at midnight UTC a week ago: in the past, so that
// creates never take their own directories for leftovers (see
// [Store.Sweep]).
type confClock struct {
	mu sync.Mutex
	t  time.Time
}

func newConfClock() *confClock {
	return &confClock{t: time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -7)}
}

func (c *confClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *confClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// confErr names the kind of err, for notes and messages.
func confErr(err error) string {
	var nf *NotFoundError
	var amb *AmbiguousError
	var inv *InvalidError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &nf) && errors.Is(err, ErrDeleted):
		return "deleted"
	case errors.As(err, &nf):
		return "not found"
	case errors.As(err, &amb):
		return "ambiguous"
	case errors.As(err, &inv):
		return "invalid"
	}
	return "other error: " + err.Error()
}

// wantErr fails unless err is of kind (see confErr), and notes it.
func (e *confEnv) wantErr(t *testing.T, what string, err error, kind string) {
	t.Helper()
	got := confErr(err)
	if got != kind {
		t.Errorf("%s: %s (%v), want %s", what, got, err, kind)
	}
	e.note("%s: %s", what, got)
}

func confJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func confReceives(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(confWait):
		t.Fatalf("%s: nothing received within %v", what, confWait)
	}
}

// sqliteSettled waits out, and drains, the wake a SQLite watch's start
// may bring.
func sqliteSettled(ch <-chan struct{}) {
	time.Sleep(2 * SQLiteWatchInterval)
	select {
	case <-ch:
	default:
	}
}

// confQuiet fails if ch receives within d: a wake for something else.
func confQuiet(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Errorf("%s: received, want nothing", what)
	case <-time.After(d):
	}
}

func confDiff(a, b []string) string {
	var out strings.Builder
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			fmt.Fprintf(&out, "  %d: sqlite   %q\n     postgres %q\n", i, x, y)
		}
	}
	return out.String()
}

func confIDs(recs []*Record) map[string]int {
	m := map[string]int{}
	for i, r := range recs {
		m[r.ID] = i
	}
	return m
}

// confGet: Get resolves an id, a label, a unique id prefix and the
// upper-case forms of ids and prefixes, from any store of the database;
// a shared prefix is ambiguous, naming the ids; what matches nothing is
// not found.
func confGet(t *testing.T, e *confEnv) {
	ctx := context.Background()
	clk := newConfClock()
	st := e.open(t, WithClock(clk.now))
	a := confCreate(t, st, "auggie", "alpha", nil)
	b := confCreate(t, st, "codex", "", nil) // the same millisecond: a's time prefix
	clk.advance(time.Hour)
	c := confCreate(t, st, "opencode", "gamma", nil)
	if a.ID[:10] != b.ID[:10] || a.ID >= b.ID || c.ID[:10] == a.ID[:10] {
		t.Fatalf("ids %s %s %s: want the first two made in one millisecond, in order, and the third later", a.ID, b.ID, c.ID)
	}
	lcp := 0
	for lcp < len(a.ID) && a.ID[lcp] == b.ID[lcp] {
		lcp++
	}
	other := e.elsewhere(t)
	for _, tc := range []struct {
		what, ref string
		want      *Record
	}{
		{"id", a.ID, a},
		{"label", "alpha", a},
		{"another label", "gamma", c},
		{"upper-case id", strings.ToUpper(b.ID), b},
		{"unique prefix", c.ID[:10], c},
		{"upper-case unique prefix", strings.ToUpper(c.ID[:10]), c},
		{"prefix one past the shared part", a.ID[:lcp+1], a},
		{"the other's", b.ID[:lcp+1], b},
	} {
		for i, s := range []*Store{st, other} {
			r, err := s.Get(ctx, tc.ref)
			if err != nil || r.ID != tc.want.ID {
				t.Errorf("store %d: Get(%s %q) = %v, %v; want %s", i, tc.what, tc.ref, r, err, tc.want.ID)
				continue
			}
			if r.Name != tc.want.Name || r.Agent != tc.want.Agent {
				t.Errorf("store %d: Get(%s) = label %q agent %q, want %q %q", i, tc.what, r.Name, r.Agent, tc.want.Name, tc.want.Agent)
			}
		}
		e.note("%s: found", tc.what)
	}

	for _, ref := range []string{a.ID[:10], strings.ToUpper(a.ID[:10]), a.ID[:lcp]} {
		_, err := other.Get(ctx, ref)
		var amb *AmbiguousError
		if !errors.As(err, &amb) || !errors.Is(err, ErrConflict) {
			t.Errorf("Get(%q) (shared prefix): %v, want an AmbiguousError", ref, err)
			continue
		}
		// The reference as given (not lower-cased as ids are).
		if !slices.Equal(amb.Matches, []string{a.ID, b.ID}) || amb.Ref != ref {
			t.Errorf("Get(%q): ambiguous %q matching %v, want %v", ref, amb.Ref, amb.Matches, []string{a.ID, b.ID})
		}
		for _, id := range []string{a.ID, b.ID} {
			if !strings.Contains(err.Error(), id) {
				t.Errorf("%q does not name %s", err, id)
			}
		}
		e.note("shared prefix: ambiguous among %d", len(amb.Matches))
	}

	var missing string // c's id but its last character
	for _, ch := range crockford {
		if byte(ch) != c.ID[25] {
			missing = c.ID[:25] + string(ch)
			break
		}
	}
	// A label is matched as written: labels differ by case (Alpha and
	// alpha may both exist), so "ALPHA" is no reference to alpha, whose
	// delete it was.
	for _, ref := range []string{"nosuch", "7zzzzzzzzz", missing, strings.ToUpper(missing), "ALPHA", "Gamma"} {
		_, err := st.Get(ctx, ref)
		var nf *NotFoundError
		if !errors.As(err, &nf) || !errors.Is(err, ErrNotFound) || errors.Is(err, ErrDeleted) || !strings.EqualFold(nf.Ref, ref) || nf.What != "instance" {
			t.Errorf("Get(%q): %v, want a NotFoundError for it", ref, err)
		}
		e.wantErr(t, "missing ref", err, "not found")
	}
	_, err := st.Get(ctx, "")
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("Get(\"\"): %v, want ErrInvalid", err)
	}
	ids, err := other.IDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{a.ID: "alpha", b.ID: "", c.ID: "gamma"}; fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("IDs = %v, want %v", ids, want)
	}
}

// confLabelUnique: a second instance of a label is refused, from this
// host or another, and leaves nothing behind; the label is free again
// once its instance is deleted.
func confLabelUnique(t *testing.T, e *confEnv) {
	ctx := context.Background()
	st := e.open(t)
	first := confCreate(t, st, "auggie", "dup", nil)
	for i, s := range []*Store{st, e.elsewhere(t)} {
		rec, err := s.CreateInstance(ctx, confOptions(t, "codex", "dup"))
		var inv *InvalidError
		if !errors.As(err, &inv) || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `"dup"`) || rec != nil {
			t.Errorf("store %d: a second %q: %v, %v; want an InvalidError naming the label", i, "dup", rec, err)
		}
		e.wantErr(t, "second create of a label", err, "invalid")
	}
	recs, broken, err := st.List(ctx)
	if err != nil || len(broken) > 0 {
		t.Fatal(err, broken)
	}
	if len(recs) != 1 || recs[0].ID != first.ID {
		t.Errorf("after refused creates: %d instances, want only %s", len(recs), first.ID)
	}
	confOnlyDirs(t, st, first.ID)
	if _, err := st.Delete(ctx, "dup"); err != nil {
		t.Fatal(err)
	}
	again, err := st.CreateInstance(ctx, confOptions(t, "codex", "dup"))
	e.wantErr(t, "the label after its instance was deleted", err, "ok")
	if err == nil {
		if r, err := st.Get(ctx, "dup"); err != nil || r.ID != again.ID {
			t.Errorf("Get(dup) = %v, %v; want %s", r, err, again.ID)
		}
	}
}

// confOnlyDirs fails unless st's instances directory holds the
// directories of ids and nothing else (no staging leftovers).
func confOnlyDirs(t *testing.T, st *Store, ids ...string) {
	t.Helper()
	entries, err := os.ReadDir(st.instancesDir())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, en := range entries {
		if strings.HasPrefix(en.Name(), ".") && !strings.HasPrefix(en.Name(), ".staging-") && !strings.HasPrefix(en.Name(), ".deleting-") {
			continue // the disk-full reserve and the like
		}
		got = append(got, en.Name())
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(ids))
	if !slices.Equal(got, want) {
		t.Errorf("instance directories %v, want %v", got, want)
	}
}

// confLabelRace: creates of one label from 8 stores at once (8
// processes): exactly one wins, the others are refused as a duplicate
// label (no other error), and only the winner's directory is left.
func confLabelRace(t *testing.T, e *confEnv) {
	ctx := context.Background()
	const n = 8
	stores := make([]*Store, n)
	opts := make([]CreateOptions, n)
	for i := range n {
		stores[i] = e.open(t)
		opts[i] = confOptions(t, "auggie", "race")
	}
	recs := make([]*Record, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			recs[i], errs[i] = stores[i].CreateInstance(ctx, opts[i])
		})
	}
	close(start)
	wg.Wait()
	var winner *Record
	won := 0
	for i := range n {
		if errs[i] == nil {
			won++
			winner = recs[i]
			continue
		}
		var inv *InvalidError
		if !errors.As(errs[i], &inv) || !strings.Contains(errs[i].Error(), `"race"`) {
			t.Errorf("create %d: %v; want the label refused as taken", i, errs[i])
		}
	}
	e.note("%d of %d creates won", won, n)
	if won != 1 {
		t.Fatalf("%d of %d concurrent creates of one label succeeded, want exactly 1", won, n)
	}
	recs2, _, err := stores[n-1].List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs2) != 1 || recs2[0].ID != winner.ID || recs2[0].Name != "race" {
		t.Errorf("listed %d instances, want only the winner %s", len(recs2), winner.ID)
	}
	if ok, err := stores[0].CheckToken(ctx, winner.ID, winner.NewToken()); !ok || err != nil {
		t.Errorf("the winner's token: %v, %v", ok, err)
	}
	confOnlyDirs(t, stores[0], winner.ID)
}

// confRoundTrip: the record Get returns is the record CreateInstance
// returned, byte for byte in JSON (host, mounts, transport, files and
// all), by id, by label, from another host and in listings.
func confRoundTrip(t *testing.T, e *confEnv) {
	ctx := context.Background()
	clk := newConfClock()
	st := e.open(t, WithHost("host-a"), WithClock(clk.now))
	rec := confCreate(t, st, "claude-code", "round-trip", func(o *CreateOptions) {
		o.Mounts = []mount.Resolved{
			{Mount: mount.Mount{Kind: mount.KindKB, Name: "notes", Path: "/srv/kb/notes", ReadOnly: true, MaxBytes: 1 << 20},
				EffectivePrefix: "notes", PrefixOrigin: mount.OriginDerived},
			{Mount: mount.Mount{Kind: mount.KindServer, Name: "gh", ToolPrefix: "gh", Command: "gh-mcp", Args: []string{"--stdio", "ünïcødé ✓"},
				Env: map[string]string{"GH_TOKEN": "s3cret", "QUOTE": `a "quoted" \ value`}, Timeout: mount.Duration(30 * time.Second)},
				EffectivePrefix: "gh", PrefixOrigin: mount.OriginExplicit},
		}
		o.Transport = Transport{Kind: TransportHTTP, URL: "https://agents.example/{id}/mcp"}
		o.QuestionTimeout = 5 * time.Minute
		o.Files = func(*Record) (map[string][]byte, error) {
			return map[string][]byte{"instructions.md": []byte("Be brief.\n")}, nil
		}
	})
	if rec.Host != "host-a" {
		t.Errorf("host %q, want host-a", rec.Host)
	}
	if !slices.Contains(rec.Files, "instructions.md") || len(rec.Mounts) != 2 || rec.Transport.URL != "https://agents.example/"+rec.ID+"/mcp" {
		t.Fatalf("created record %+v lacks what was asked", rec)
	}
	want := confJSON(t, rec)
	// Another host (another host name) sees the record at its own
	// directory for the instance, where it serves and runs it; another
	// state directory of the same host name sees it as stored.
	sameHost := e.elsewhere(t, WithHost("host-a"))
	other := e.elsewhere(t, WithHost("host-b"))
	wantOther := confJSON(t, confLocalized(rec, other))
	if wantOther == want {
		t.Fatal("the record as another host sees it is the record as created")
	}
	read := []struct {
		what string
		want string
		fn   func() (*Record, error)
	}{
		{"Get by id", want, func() (*Record, error) { return st.Get(ctx, rec.ID) }},
		{"Get by label", want, func() (*Record, error) { return st.Get(ctx, "round-trip") }},
		{"Get by upper-case id", want, func() (*Record, error) { return st.Get(ctx, strings.ToUpper(rec.ID)) }},
		{"Get from another state directory of the host", want, func() (*Record, error) { return sameHost.Get(ctx, rec.ID) }},
		{"List from another state directory of the host", want, func() (*Record, error) { return confOnly(sameHost.List(ctx)) }},
		{"Records", want, func() (*Record, error) {
			for l, err := range st.Records(ctx, ListOptions{Host: "host-a"}) {
				if err != nil {
					return nil, err
				}
				return l.Record, nil
			}
			return nil, errors.New("nothing listed")
		}},
		{"Get from another host", wantOther, func() (*Record, error) { return other.Get(ctx, rec.ID) }},
		{"Get by label from another host", wantOther, func() (*Record, error) { return other.Get(ctx, "round-trip") }},
		{"List from another host", wantOther, func() (*Record, error) { return confOnly(other.List(ctx)) }},
	}
	for _, r := range read {
		got, err := r.fn()
		if err != nil {
			t.Errorf("%s: %v", r.what, err)
			continue
		}
		if g := confJSON(t, got); g != r.want {
			t.Errorf("%s: the record differs from the one created:\n got  %s\n want %s", r.what, g, r.want)
		}
		if got.NewToken() != "" {
			t.Errorf("%s: a read record carries a token", r.what)
		}
	}
	norm := strings.NewReplacer(rec.ID, "<id>", st.Dir(), "<state>", rec.Workspace, "<workspace>",
		rec.CreatedAt.Format(time.RFC3339Nano), "<created>")
	e.note("record: %s", norm.Replace(want))

	// A run's start and end set last_run in place (PostgreSQL: through
	// jsonb): the rest of the record reads back as it was.
	run := Run{ID: st.NewRunID(), Program: "claude", Mode: RunInteractive, PID: 77, StartedAt: clk.now()}
	seq, err := st.StartRun(ctx, rec.ID, run, Event{Tool: RunTool, Status: StatusRunning, Message: "start"})
	if err != nil {
		t.Fatal(err)
	}
	ended, code := clk.now().Add(time.Minute), 3
	run.EndedAt, run.ExitCode, run.Signal = &ended, &code, "SIGTERM"
	if _, err := st.EndRun(ctx, rec.ID, seq, run, Event{Tool: RunTool, Status: StatusFailed, Message: "end"}); err != nil {
		t.Fatal(err)
	}
	withRun := *rec
	run.Host = st.Host() // the host the run is on, set by the store
	withRun.LastRun = &run
	for i, s := range []*Store{st, other} {
		got, err := s.Get(ctx, rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := confJSON(t, got), confJSON(t, confLocalized(&withRun, s)); g != w {
			t.Errorf("store %d: the record after a run:\n got  %s\n want %s", i, g, w)
		}
	}
}

// confLocalized is r as a store of another host name reads it: its
// directory and configuration under that store's state directory.
func confLocalized(r *Record, st *Store) *Record {
	c := *r
	if r.Host == st.Host() {
		return &c
	}
	c.Dir = filepath.Join(st.Dir(), "instances", r.ID)
	rel, err := filepath.Rel(r.Dir, r.MCPConfigPath)
	if err != nil {
		panic(err)
	}
	c.MCPConfigPath = filepath.Join(c.Dir, rel)
	return &c
}

func confOnly(recs []*Record, broken []*CorruptRecordError, err error) (*Record, error) {
	switch {
	case err != nil:
		return nil, err
	case len(broken) > 0:
		return nil, broken[0]
	case len(recs) != 1:
		return nil, fmt.Errorf("%d records listed, want 1", len(recs))
	}
	return recs[0], nil
}

// confList: Records' filters (limit keeping the newest and yielding them
// oldest first, agent, status, since, host, together) and each listed
// instance's latest status and open questions, read from either host.
func confList(t *testing.T, e *confEnv) {
	ctx := context.Background()
	clk := newConfClock()
	day := clk.now()
	a := e.open(t, WithHost("host-a"), WithClock(clk.now))
	b := e.elsewhere(t, WithHost("host-b"), WithClock(clk.now))
	var recs []*Record
	for _, c := range []struct {
		st    *Store
		agent string
		hour  int
	}{{a, "auggie", 13}, {b, "claude-code", 15}, {a, "auggie", 18}, {b, "codex", 22}} {
		clk.advance(day.Add(time.Duration(c.hour) * time.Hour).Sub(clk.now()))
		recs = append(recs, confCreate(t, c.st, c.agent, "", nil))
	}
	clk.advance(time.Hour)
	for _, ev := range []struct {
		st     *Store
		i      int
		status string
	}{{a, 0, StatusRunning}, {b, 0, StatusDone}, {b, 2, StatusRunning}, {b, 3, StatusBlocked}} {
		if _, err := ev.st.RecordProgress(ctx, recs[ev.i].ID, "report_progress", ev.status, ev.status, nil); err != nil {
			t.Fatal(err)
		}
	}
	ask := func(st *Store, i int) string {
		t.Helper()
		clk.advance(time.Second)
		id, err := st.AskQuestion(ctx, recs[i].ID, "Which?", nil)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	ask(a, 0)
	ask(b, 0)
	if _, err := a.Answer(ctx, recs[0].ID, ask(a, 0), "this", false); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.ExpireQuestion(ctx, recs[1].ID, ask(b, 1)); !ok || err != nil {
		t.Fatal(ok, err)
	}
	ask(a, 3)

	all := []int{0, 1, 2, 3}
	for _, tc := range []struct {
		name string
		o    ListOptions
		want []int
	}{
		{"all", ListOptions{}, all},
		{"limit keeps the newest, oldest first", ListOptions{Limit: 2}, []int{2, 3}},
		{"limit 1", ListOptions{Limit: 1}, []int{3}},
		{"limit over the count", ListOptions{Limit: 10}, all},
		{"agent", ListOptions{Agent: "auggie"}, []int{0, 2}},
		{"agent and limit", ListOptions{Agent: "auggie", Limit: 1}, []int{2}},
		{"unknown agent", ListOptions{Agent: "nobody"}, nil},
		{"since is inclusive to the millisecond", ListOptions{Since: day.Add(15 * time.Hour)}, []int{1, 2, 3}},
		{"since just after", ListOptions{Since: day.Add(15*time.Hour + time.Millisecond)}, []int{2, 3}},
		{"since before the epoch", ListOptions{Since: time.Unix(-10, 0)}, all},
		{"since after all", ListOptions{Since: day.Add(48 * time.Hour)}, nil},
		{"status running", ListOptions{Status: StatusRunning}, []int{2}},
		{"status done is the latest report", ListOptions{Status: StatusDone}, []int{0}},
		{"status blocked", ListOptions{Status: StatusBlocked}, []int{3}},
		{"status failed", ListOptions{Status: StatusFailed}, nil},
		{"host a", ListOptions{Host: "host-a"}, []int{0, 2}},
		{"host b", ListOptions{Host: "host-b"}, []int{1, 3}},
		{"host b, limit 1", ListOptions{Host: "host-b", Limit: 1}, []int{3}},
		{"host b, agent codex", ListOptions{Host: "host-b", Agent: "codex"}, []int{3}},
		{"host a, agent codex", ListOptions{Host: "host-a", Agent: "codex"}, nil},
		{"unknown host", ListOptions{Host: "host-c"}, nil},
		{"everything at once", ListOptions{Agent: "auggie", Status: StatusRunning, Since: day, Host: "host-a", Limit: 5}, []int{2}},
	} {
		for si, st := range []*Store{a, b} {
			var got []int
			idx := confIDs(recs)
			for l, err := range st.Records(ctx, tc.o) {
				if err != nil {
					t.Fatal(err)
				}
				i, ok := idx[l.ID]
				if !ok {
					t.Fatalf("%s: listed an unknown instance %s", tc.name, l.ID)
				}
				got = append(got, i)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("store %d, %s (%+v): got %v, want %v", si, tc.name, tc.o, got, tc.want)
			}
			if si == 0 {
				e.note("%s: %v", tc.name, got)
			}
		}
	}

	wantStatus := []string{StatusDone, "", StatusRunning, StatusBlocked}
	wantOpen := []int{2, 0, 0, 1}
	wantHost := []string{"host-a", "host-b", "host-a", "host-b"}
	for si, st := range []*Store{a, b} {
		n := 0
		for l, err := range st.Records(ctx, ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			i := confIDs(recs)[l.ID]
			n++
			if l.Status != wantStatus[i] || l.OpenQuestions != wantOpen[i] || l.Host != wantHost[i] {
				t.Errorf("store %d: instance %d listed with status %q, %d open questions, host %q; want %q, %d, %q",
					si, i, l.Status, l.OpenQuestions, l.Host, wantStatus[i], wantOpen[i], wantHost[i])
			}
			one, err := st.Listing(ctx, l.Record)
			if err != nil || one.Status != l.Status || one.OpenQuestions != l.OpenQuestions {
				t.Errorf("store %d: Listing of instance %d = %+v, %v; want what Records says", si, i, one, err)
			}
			if si == 0 {
				e.note("instance %d: status %q, %d open, %s", i, l.Status, l.OpenQuestions, l.Host)
			}
		}
		if n != len(recs) {
			t.Errorf("store %d: %d listed, want %d", si, n, len(recs))
		}
	}
}

// confTokens: an instance's token checks, nothing else does (another
// instance's, a wrong one, an unknown instance); the record never holds
// it; a rotation invalidates the old token at once, everywhere.
func confTokens(t *testing.T, e *confEnv) {
	ctx := context.Background()
	st := e.open(t)
	other := e.elsewhere(t)
	a := confCreate(t, st, "codex", "tokened", func(o *CreateOptions) {
		o.Transport = Transport{Kind: TransportHTTP, URL: "https://agents.example/{id}/mcp"}
	})
	b := confCreate(t, st, "auggie", "", nil)
	tokA, tokB := a.NewToken(), b.NewToken()
	if !strings.HasPrefix(tokA, TokenPrefix) || tokA == tokB {
		t.Fatalf("tokens %q and %q", tokA, tokB)
	}
	check := func(what string, s *Store, id, token string, want bool) {
		t.Helper()
		ok, err := s.CheckToken(ctx, id, token)
		if err != nil || ok != want {
			t.Errorf("CheckToken (%s) = %v, %v; want %v", what, ok, err, want)
		}
		e.note("%s: %v", what, ok)
	}
	unknown, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range []*Store{st, other} {
		check(fmt.Sprint(i, ": own token"), s, a.ID, tokA, true)
		check(fmt.Sprint(i, ": b's own token"), s, b.ID, tokB, true)
		check(fmt.Sprint(i, ": another instance's token"), s, a.ID, tokB, false)
		check(fmt.Sprint(i, ": a new token"), s, a.ID, unknown, false)
		check(fmt.Sprint(i, ": the token with a character more"), s, a.ID, tokA+"x", false)
		check(fmt.Sprint(i, ": the token but its last character"), s, a.ID, tokA[:len(tokA)-1], false)
		check(fmt.Sprint(i, ": empty"), s, a.ID, "", false)
		check(fmt.Sprint(i, ": an unknown instance"), s, "01kaaaaaaaaaaaaaaaaaaaaaaa", tokA, false)
		check(fmt.Sprint(i, ": a label for an id"), s, "tokened", tokA, false)
	}
	// LIKE's _ matches any character, and a token's prefix ends with one
	// (an unescaped '%agt_%' matched ids and paths holding "agt"), so the
	// patterns are escaped: the prefix and each token, literally.
	for _, lit := range []string{TokenPrefix, tokA, tokB} {
		n, err := st.CountForTest(`SELECT count(*) FROM instances WHERE record LIKE ? ESCAPE '!'`, "%"+likeLiteral(lit)+"%")
		if err != nil || n != 0 {
			t.Errorf("%d records hold %q (%v), want none", n, lit, err)
		}
	}
	// The same query finds what a record does hold, so the check above can fail.
	if n, err := st.CountForTest(`SELECT count(*) FROM instances WHERE record LIKE ? ESCAPE '!'`, "%"+likeLiteral(a.ID)+"%"); err != nil || n != 1 {
		t.Errorf("%d records hold instance a's id (%v), want 1", n, err)
	}
	if r, err := other.Get(ctx, a.ID); err != nil || r.NewToken() != "" {
		t.Errorf("a read record's token: %v", err)
	}
	data, err := os.ReadFile(a.MCPConfigPath)
	if err != nil || !strings.Contains(string(data), tokA) {
		t.Fatalf("the HTTP instance's configuration lacks its token (%v)", err)
	}

	home := t.TempDir()
	rot, err := other.RotateToken(ctx, "tokened", func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if rot.Token == tokA || !strings.HasPrefix(rot.Token, TokenPrefix) || rot.Record.ID != a.ID {
		t.Fatalf("rotation %+v", rot)
	}
	for i, s := range []*Store{st, other} {
		check(fmt.Sprint(i, ": the old token after a rotation"), s, a.ID, tokA, false)
		check(fmt.Sprint(i, ": the new token"), s, a.ID, rot.Token, true)
		check(fmt.Sprint(i, ": b's token after a's rotation"), s, b.ID, tokB, true)
	}
	// The rotating store is on another host: the instance's files are on
	// this one and stay as they were.
	e.note("rewritten by another host: %d", len(rot.Rewritten))
	rot2, err := st.RotateToken(ctx, a.ID, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(a.MCPConfigPath)
	if len(rot2.Rewritten) != 1 || !strings.Contains(string(data), rot2.Token) || strings.Contains(string(data), tokA) {
		t.Errorf("rotation on the instance's host rewrote %v; the file holds the new token: %v", rot2.Rewritten, strings.Contains(string(data), rot2.Token))
	}
	check("the first rotation's token after a second", other, a.ID, rot.Token, false)
	check("the second rotation's token", other, a.ID, rot2.Token, true)
}

// confQuestions: asking, listing open and all, answering (a choice
// matched regardless of case and stored as written, a non-choice refused,
// free text with other, no second answer), expiring and cancelling (false
// once answered), PollAnswer, and questions kept to their instance.
func confQuestions(t *testing.T, e *confEnv) {
	ctx := context.Background()
	clk := newConfClock()
	st := e.open(t, WithClock(clk.now))
	other := e.elsewhere(t, WithClock(clk.now))
	a := confCreate(t, st, "auggie", "asker", nil)
	b := confCreate(t, st, "codex", "", nil)
	tick := func() { clk.advance(time.Second) }

	tick()
	q1, err := st.AskQuestion(ctx, a.ID, "Proceed?", []string{"Yes", "No"})
	if err != nil {
		t.Fatal(err)
	}
	tick()
	q2, err := other.AddQuestion(ctx, a.ID, "Which name?", nil)
	if err != nil {
		t.Fatal(err)
	}
	if q2.Status != QuestionOpen || q2.InstanceID != a.ID || q2.Choices == nil || len(q2.Choices) != 0 || !q2.AskedAt.Equal(clk.now()) {
		t.Errorf("AddQuestion = %+v", q2)
	}
	tick()
	qb, err := st.AskQuestion(ctx, b.ID, "b's question?", nil)
	if err != nil {
		t.Fatal(err)
	}
	open, err := other.Questions(ctx, a.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 2 || open[0].ID != q1 || open[1].ID != q2.ID || open[0].Text != "Proceed?" ||
		!slices.Equal(open[0].Choices, []string{"Yes", "No"}) || open[1].Choices == nil {
		t.Fatalf("open questions %s", confJSON(t, open))
	}
	if got := confJSON(t, open[1]); got != confJSON(t, q2) {
		t.Errorf("Questions gives %s, AddQuestion gave %s", got, confJSON(t, q2))
	}

	_, err = st.Answer(ctx, a.ID, "", "Yes", false)
	var amb *AmbiguousError
	if errors.As(err, &amb) && !slices.Equal(amb.Matches, []string{q1, q2.ID}) {
		t.Errorf("answer without an id names %v, want %v", amb.Matches, []string{q1, q2.ID})
	}
	e.wantErr(t, "answer without an id, two open", err, "ambiguous")

	_, err = other.Answer(ctx, a.ID, q1, "maybe", false)
	e.wantErr(t, "answer that is not a choice", err, "invalid")
	if err != nil && (!strings.Contains(err.Error(), `"Yes"`) || !strings.Contains(err.Error(), `"No"`)) {
		t.Errorf("the refusal %q does not name the choices", err)
	}
	if ans, status, err := st.PollAnswer(ctx, a.ID, q1); ans != "" || status != QuestionOpen || err != nil {
		t.Errorf("PollAnswer after a refused answer = %q, %v, %v", ans, status, err)
	}

	tick()
	got, err := other.Answer(ctx, a.ID, q1, "  yes ", false)
	if err != nil {
		t.Fatal(err)
	}
	if got.Answer != "Yes" || got.Status != QuestionAnswered || got.AnsweredAt == nil || !got.AnsweredAt.Equal(clk.now()) {
		t.Errorf("Answer = %s; want Yes as the choice is written, answered now", confJSON(t, got))
	}
	for i, s := range []*Store{st, other} {
		if ans, status, err := s.PollAnswer(ctx, a.ID, q1); ans != "Yes" || status != QuestionAnswered || err != nil {
			t.Errorf("store %d: PollAnswer = %q, %v, %v; want Yes, true", i, ans, status, err)
		}
	}
	_, err = st.Answer(ctx, a.ID, q1, "No", false)
	e.wantErr(t, "a second answer", err, "invalid")
	for _, f := range []struct {
		what string
		fn   func(context.Context, string, string) (bool, error)
	}{{"expire", st.ExpireQuestion}, {"cancel", other.CancelQuestion}} {
		ok, err := f.fn(ctx, a.ID, q1)
		if ok || err != nil {
			t.Errorf("%s an answered question: %v, %v; want false", f.what, ok, err)
		}
		e.note("%s an answered question: %v", f.what, ok)
	}

	tick()
	got, err = st.Answer(ctx, a.ID, "", "Alice", false) // the one open question
	if err != nil || got.ID != q2.ID || got.Answer != "Alice" {
		t.Errorf("answer without an id, one open: %v, %v", got, err)
	}
	tick()
	q3, _ := st.AskQuestion(ctx, a.ID, "Colour?", []string{"Red", "Green"})
	got, err = other.Answer(ctx, a.ID, q3, "  blue-ish ", true)
	if err != nil || got.Answer != "  blue-ish " {
		t.Errorf("free text with other: %v, %v; want it as written", got, err)
	}
	tick()
	q4, _ := st.AskQuestion(ctx, a.ID, "Case?", []string{"Ok", "OK"})
	_, err = st.Answer(ctx, a.ID, q4, "ok", false)
	e.wantErr(t, "a case-insensitive match of two choices", err, "invalid")
	if got, err = st.Answer(ctx, a.ID, q4, "OK", false); err != nil || got.Answer != "OK" {
		t.Errorf("the exact choice: %v, %v", got, err)
	}
	tick()
	q5, _ := other.AskQuestion(ctx, a.ID, "Expires?", nil)
	if ok, err := st.ExpireQuestion(ctx, a.ID, q5); !ok || err != nil {
		t.Errorf("expire an open question: %v, %v", ok, err)
	}
	if ok, err := other.ExpireQuestion(ctx, a.ID, q5); ok || err != nil {
		t.Errorf("expire it again: %v, %v; want false", ok, err)
	}
	if ans, status, err := other.PollAnswer(ctx, a.ID, q5); ans != "" || status != QuestionExpired || err != nil {
		t.Errorf("PollAnswer of an expired question = %q, %v, %v", ans, status, err)
	}
	_, err = st.Answer(ctx, a.ID, q5, "late", false)
	e.wantErr(t, "answer an expired question", err, "invalid")
	tick()
	q6, _ := st.AskQuestion(ctx, a.ID, "Cancelled?", nil)
	if ok, err := other.CancelQuestion(ctx, a.ID, q6); !ok || err != nil {
		t.Errorf("cancel an open question: %v, %v", ok, err)
	}
	_, err = st.Answer(ctx, a.ID, "", "anything", false)
	e.wantErr(t, "answer without an id, none open", err, "not found")

	all, err := other.Questions(ctx, a.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	var summary []string
	for _, q := range all {
		if q.InstanceID != a.ID {
			t.Errorf("a's questions hold %s of %s", q.ID, q.InstanceID)
		}
		summary = append(summary, q.Text+"="+q.Status+":"+q.Answer)
	}
	want := []string{"Proceed?=answered:Yes", "Which name?=answered:Alice", "Colour?=answered:  blue-ish ",
		"Case?=answered:OK", "Expires?=expired:", "Cancelled?=cancelled:"}
	if !slices.Equal(summary, want) {
		t.Errorf("all questions, oldest first:\n got  %q\n want %q", summary, want)
	}
	e.note("questions: %q", summary)
	if open, err := st.Questions(ctx, a.ID, false); err != nil || len(open) != 0 {
		t.Errorf("open questions at the end: %d, %v", len(open), err)
	}
	if q, err := st.Question(ctx, a.ID, q3); err != nil || q.Answer != "  blue-ish " || !slices.Equal(q.Choices, []string{"Red", "Green"}) {
		t.Errorf("Question(q3) = %v, %v", q, err)
	}

	// Questions belong to their instance.
	_, err = st.Question(ctx, a.ID, qb)
	e.wantErr(t, "another instance's question", err, "not found")
	_, err = st.Answer(ctx, a.ID, qb, "x", false)
	e.wantErr(t, "answer another instance's question", err, "not found")
	_, _, err = other.PollAnswer(ctx, a.ID, qb)
	e.wantErr(t, "poll another instance's question", err, "not found")
	if bq, err := st.Questions(ctx, b.ID, false); err != nil || len(bq) != 1 || bq[0].ID != qb {
		t.Errorf("b's questions: %v, %v", bq, err)
	}
	// Answers from several stores at once: one is taken, the others are
	// refused, and the one taken is the one stored.
	tick()
	qr, _ := st.AskQuestion(ctx, a.ID, "Race?", []string{"Yes", "No"})
	answers := make([]*Question, 6)
	errs := make([]error, len(answers))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			<-start
			answers[i], errs[i] = []*Store{st, other}[i%2].Answer(ctx, a.ID, qr, []string{"Yes", "No"}[i/3], false)
		})
	}
	close(start)
	wg.Wait()
	taken := ""
	for i, err := range errs {
		switch confErr(err) {
		case "ok":
			if taken != "" {
				t.Errorf("concurrent answers: %q and %q both taken", taken, answers[i].Answer)
			}
			taken = answers[i].Answer
		case "invalid":
		default:
			t.Errorf("concurrent answer %d: %v", i, err)
		}
	}
	if ans, status, err := other.PollAnswer(ctx, a.ID, qr); status != QuestionAnswered || err != nil || ans != taken || taken == "" {
		t.Errorf("after concurrent answers: PollAnswer = %q, %v, %v; the answer taken was %q", ans, status, err, taken)
	}
	e.note("concurrent answers: one taken: %v", taken != "")

	_, _, err = st.PollAnswer(ctx, a.ID, "01kaaaaaaaaaaaaaaaaaaaaaaa")
	e.wantErr(t, "poll an unknown question", err, "not found")
	_, err = st.AskQuestion(ctx, "01kaaaaaaaaaaaaaaaaaaaaaaa", "Anyone?", nil)
	e.wantErr(t, "ask for an unknown instance", err, "deleted")
}

// confAnswerRef: AnswerRef answers as Get and Answer do, in one statement
// when the instance is named by id or label and the question is open and
// without choices (or the answer is free text); anything else, declined by
// that statement untouched, is answered or refused as Answer would. On
// PostgreSQL the one statement wakes the waiting watch, as Answer's does.
func confAnswerRef(t *testing.T, e *confEnv) {
	ctx := context.Background()
	clk := newConfClock()
	st := e.open(t, WithClock(clk.now))
	other := e.elsewhere(t, WithClock(clk.now))
	a := confCreate(t, st, "auggie", "asker", nil)
	b := confCreate(t, st, "codex", "", nil)
	ask := func(r *Record, choices ...string) string {
		t.Helper()
		clk.advance(time.Second)
		qid, err := st.AskQuestion(ctx, r.ID, "Go on?", choices)
		if err != nil {
			t.Fatal(err)
		}
		return qid
	}
	state := func(qid string) string {
		t.Helper()
		q, err := st.Question(ctx, a.ID, qid)
		if err != nil {
			t.Fatal(err)
		}
		return q.Status + ":" + q.Answer
	}

	if e.kind == "postgres" {
		// The first watch wakes once the store listens; after that, a
		// wake is a notification.
		primer, stop := st.WatchEvents(ctx, "primer")
		confReceives(t, primer, "the first watch, once the listener listens")
		stop()
	}
	// The one statement, by id and by label: the question as answered.
	for _, ref := range []string{a.ID, "asker"} {
		qid := ask(a)
		wake, stop := st.WatchAnswer(ctx, qid)
		defer stop()
		clk.advance(time.Second)
		got, err := other.answerDirect(ctx, ref, qid, "ship it", false)
		if err != nil || got == nil {
			t.Fatalf("answerDirect(%s) = %v, %v; want it answered in one statement", ref, got, err)
		}
		want := &Question{ID: qid, InstanceID: a.ID, Text: "Go on?", Choices: []string{}, Status: QuestionAnswered,
			Answer: "ship it", AskedAt: clk.now().Add(-time.Second)}
		now := clk.now()
		want.AnsweredAt = &now
		if confJSON(t, got) != confJSON(t, want) {
			t.Errorf("answerDirect(%s) =\n %s, want\n %s", ref, confJSON(t, got), confJSON(t, want))
		}
		if wake != nil {
			confReceives(t, wake, "the answer's notification")
		}
		if q, err := st.Question(ctx, a.ID, qid); err != nil || confJSON(t, q) != confJSON(t, want) {
			t.Errorf("the stored question %s, %v; want %s", confJSON(t, q), err, confJSON(t, want))
		}
		if ans, status, err := st.PollAnswer(ctx, a.ID, qid); ans != "ship it" || status != QuestionAnswered || err != nil {
			t.Errorf("PollAnswer = %q, %v, %v", ans, status, err)
		}
	}
	qc := ask(a, "Yes", "No")
	if got, err := other.answerDirect(ctx, a.ID, qc, "free text", true); err != nil || got == nil || got.Answer != "free text" {
		t.Errorf("answerDirect of free text to a question with choices = %v, %v; want it answered", got, err)
	}

	// Declined by the statement, the question untouched; AnswerRef then
	// answers or refuses as Answer does.
	qa, qb := ask(a, "Yes", "No"), ask(b)
	answered := ask(a)
	if _, err := st.AnswerRef(ctx, a.ID, answered, "first", false); err != nil {
		t.Fatal(err)
	}
	prefix := a.ID[:len(a.ID)-4]
	qp, qu := ask(a), ask(a)
	for _, c := range []struct{ what, ref, qid string }{
		{"a question with choices", a.ID, qa},
		{"another instance's question", a.ID, qb},
		{"an answered question", a.ID, answered},
		{"an id prefix", prefix, qp},
		{"an id in upper case", strings.ToUpper(a.ID), qu},
		{"an unknown label", "nobody", qp},
	} {
		before := ""
		if c.qid != qb {
			before = state(c.qid)
		}
		if got, err := other.answerDirect(ctx, c.ref, c.qid, "  yes ", false); got != nil || err != nil {
			t.Errorf("answerDirect, %s = %v, %v; want it declined", c.what, got, err)
		}
		if c.qid != qb {
			if after := state(c.qid); after != before {
				t.Errorf("answerDirect, %s: the question went from %s to %s", c.what, before, after)
			}
		}
	}
	got, err := other.AnswerRef(ctx, a.ID, qa, "  yes ", false)
	if err != nil || got.Answer != "Yes" {
		t.Errorf("AnswerRef, a question with choices: %v, %v; want the choice as written", got, err)
	}
	_, err = other.AnswerRef(ctx, "asker", qb, "x", false)
	e.wantErr(t, "AnswerRef, another instance's question", err, "not found")
	_, err = other.AnswerRef(ctx, a.ID, answered, "again", false)
	e.wantErr(t, "AnswerRef, an answered question", err, "invalid")
	_, err = other.AnswerRef(ctx, "nobody", qp, "x", false)
	e.wantErr(t, "AnswerRef, an unknown label", err, "not found")
	// A blank answer is refused on every path, the question left open.
	before := state(qp)
	for _, blank := range []string{"", " \t\n"} {
		_, err = other.AnswerRef(ctx, a.ID, qp, blank, false)
		e.wantErr(t, fmt.Sprintf("AnswerRef, the answer %q", blank), err, "invalid")
		_, err = other.AnswerRef(ctx, "asker", qp, blank, true)
		e.wantErr(t, fmt.Sprintf("AnswerRef by label with other, the answer %q", blank), err, "invalid")
		_, err = other.Answer(ctx, a.ID, qp, blank, false)
		e.wantErr(t, fmt.Sprintf("Answer, the answer %q", blank), err, "invalid")
	}
	if after := state(qp); after != before {
		t.Errorf("a blank answer took the question from %s to %s", before, after)
	}
	for _, c := range []struct{ what, ref, qid string }{{"an id prefix", prefix, qp}, {"an id in upper case", strings.ToUpper(a.ID), qu}} {
		if got, err := other.AnswerRef(ctx, c.ref, c.qid, "fine", false); err != nil || got.ID != c.qid || got.Answer != "fine" {
			t.Errorf("AnswerRef, %s: %v, %v", c.what, got, err)
		}
	}
	if got, err := other.AnswerRef(ctx, b.ID, "", "the one", false); err != nil || got.ID != qb {
		t.Errorf("AnswerRef without a question id, one open: %v, %v", got, err)
	}
	all, err := st.Questions(ctx, a.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	var summary []string
	for _, q := range all {
		summary = append(summary, q.Status+":"+q.Answer)
	}
	e.note("answers: %q", summary)
}

// confInbox: the open questions of every instance of every host, oldest
// first, with their instance's label, agent and host; a limit keeps the
// oldest.
func confInbox(t *testing.T, e *confEnv) {
	ctx := context.Background()
	clk := newConfClock()
	a := e.open(t, WithHost("host-a"), WithClock(clk.now))
	b := e.elsewhere(t, WithHost("host-b"), WithClock(clk.now))
	ra := confCreate(t, a, "auggie", "alpha", nil)
	rb := confCreate(t, b, "codex", "", nil)
	ask := func(st *Store, r *Record, text string, choices []string) string {
		t.Helper()
		clk.advance(time.Second)
		id, err := st.AskQuestion(ctx, r.ID, text, choices)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	qa1 := ask(b, ra, "a first?", []string{"x", "y"}) // asked through the other host's store
	qb1 := ask(a, rb, "b first?", nil)
	qa2 := ask(a, ra, "a answered?", nil)
	qb2 := ask(b, rb, "b expired?", nil)
	qa3 := ask(a, ra, "a last?", nil)
	if _, err := b.Answer(ctx, ra.ID, qa2, "done", false); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.ExpireQuestion(ctx, rb.ID, qb2); !ok || err != nil {
		t.Fatal(ok, err)
	}
	type row struct{ id, text, instance, label, agent, host, status string }
	want := []row{
		{qa1, "a first?", ra.ID, "alpha", "auggie", "host-a", QuestionOpen},
		{qb1, "b first?", rb.ID, "", "codex", "host-b", QuestionOpen},
		{qa3, "a last?", ra.ID, "alpha", "auggie", "host-a", QuestionOpen},
	}
	for si, st := range []*Store{a, b} {
		for _, limit := range []int{0, 2, 10} {
			in, err := st.Inbox(ctx, limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []row
			for _, q := range in {
				got = append(got, row{q.ID, q.Text, q.InstanceID, q.InstanceName, q.Agent, q.Host, q.Status})
				if !q.AskedAt.After(clk.now().Add(-time.Hour)) || q.AnsweredAt != nil {
					t.Errorf("inbox question %s: asked %v, answered %v", q.ID, q.AskedAt, q.AnsweredAt)
				}
			}
			w := want
			if limit > 0 && limit < len(w) {
				w = w[:limit]
			}
			if !slices.Equal(got, w) {
				t.Errorf("store %d, Inbox(%d):\n got  %+v\n want %+v", si, limit, got, w)
			}
			if si == 0 {
				e.note("Inbox(%d): %d questions", limit, len(got))
			}
		}
	}
	in, err := a.Inbox(ctx, 1)
	if err != nil || len(in) != 1 || !slices.Equal(in[0].Choices, []string{"x", "y"}) {
		t.Fatalf("Inbox(1) = %v, %v", in, err)
	}
	norm := strings.NewReplacer(qa1, "<q>", ra.ID, "<id>", in[0].AskedAt.Format(time.RFC3339Nano), "<asked>")
	e.note("inbox JSON: %s", norm.Replace(confJSON(t, in[0])))
}

// confEvents: sequence numbers increase across instances and stores,
// Events(after) resumes after any of them, an event reads back as
// recorded, and the listing's status follows the latest event.
func confEvents(t *testing.T, e *confEnv) {
	ctx := context.Background()
	clk := newConfClock()
	st := e.open(t, WithClock(clk.now))
	other := e.elsewhere(t, WithClock(clk.now))
	a := confCreate(t, st, "auggie", "", nil)
	b := confCreate(t, st, "codex", "", nil)
	status := func(r *Record) string {
		t.Helper()
		l, err := other.Listing(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return l.Status
	}
	if s := status(a); s != "" {
		t.Errorf("status before any event %q", s)
	}
	pct := 42.5
	var seqs []int64
	add := func(s *Store, r *Record, st, msg string, p *float64) *Event {
		t.Helper()
		clk.advance(time.Millisecond)
		ev, err := s.AddEvent(ctx, Event{InstanceID: r.ID, Tool: "report_progress", Status: st, Message: msg, Percent: p})
		if err != nil {
			t.Fatal(err)
		}
		if ev.InstanceID != r.ID || ev.RunID != "" || !ev.At.Equal(clk.now()) || ev.Status != st {
			t.Errorf("AddEvent = %s", confJSON(t, ev))
		}
		if len(seqs) > 0 && ev.Seq <= seqs[len(seqs)-1] {
			t.Errorf("seq %d after %d: want increasing", ev.Seq, seqs[len(seqs)-1])
		}
		seqs = append(seqs, ev.Seq)
		if got := status(r); got != st {
			t.Errorf("the listing's status after a %q event: %q", st, got)
		}
		e.note("status after %s: %s", st, status(r))
		return ev
	}
	e1 := add(st, a, StatusRunning, "start", nil)
	eb := add(other, b, StatusBlocked, "b waits", nil)
	e2 := add(other, a, StatusBlocked, "waiting", &pct)
	clk.advance(time.Millisecond)
	s3, err := st.RecordProgress(ctx, a.ID, "report_progress", StatusRunning, "again", nil)
	if err != nil || s3 <= e2.Seq {
		t.Fatalf("RecordProgress = %d, %v; want a seq above %d", s3, err, e2.Seq)
	}
	e4 := add(st, a, StatusDone, "finished", nil)
	if err := other.RecordUnanswered(ctx, a.ID, "ask_user_question", "no answer"); err != nil {
		t.Fatal(err)
	}
	e.note("status after an unanswered question: %s", status(a))
	if s := status(b); s != StatusBlocked {
		t.Errorf("b's status %q: another instance's events moved it", s)
	}

	evs, err := other.Events(ctx, a.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 5 {
		t.Fatalf("%d events of a, want 5", len(evs))
	}
	for i, want := range []*Event{e1, e2, nil, e4} {
		if want == nil {
			continue
		}
		if got := confJSON(t, evs[i]); got != confJSON(t, want) {
			t.Errorf("event %d reads back as %s, was recorded as %s", i, got, confJSON(t, want))
		}
	}
	if evs[1].Percent == nil || *evs[1].Percent != 42.5 || evs[0].Percent != nil {
		t.Errorf("percents %v %v", evs[0].Percent, evs[1].Percent)
	}
	if evs[2].Seq != s3 || evs[4].Status != StatusUnanswered || evs[4].Tool != "ask_user_question" {
		t.Errorf("events 2 and 4: %s %s", confJSON(t, evs[2]), confJSON(t, evs[4]))
	}
	var summary []string
	for _, ev := range evs {
		summary = append(summary, ev.Status+":"+ev.Message)
	}
	e.note("events: %q", summary)
	for _, tc := range []struct {
		after int64
		want  int // index of the first event yielded
	}{{0, 0}, {e1.Seq, 1}, {eb.Seq, 1}, {e2.Seq, 2}, {s3, 3}, {e4.Seq, 4}, {evs[4].Seq, 5}, {evs[4].Seq + 1000, 5}} {
		got, err := st.Events(ctx, a.ID, tc.after)
		if err != nil {
			t.Fatal(err)
		}
		if got == nil || confJSON(t, got) != confJSON(t, evs[tc.want:]) {
			t.Errorf("Events(after %d): %d events, want the %d from %d", tc.after, len(got), len(evs)-tc.want, tc.want)
		}
	}
	bev, err := st.Events(ctx, b.ID, 0)
	if err != nil || len(bev) != 1 || bev[0].Seq != eb.Seq {
		t.Errorf("b's events: %v, %v", bev, err)
	}
	for l, err := range st.Records(ctx, ListOptions{Status: StatusDone}) {
		t.Errorf("--status done lists %v (%v) after a's later unanswered event", l, err)
	}
	_, err = st.AddEvent(ctx, Event{InstanceID: "01kaaaaaaaaaaaaaaaaaaaaaaa", Tool: "t", Status: StatusRunning})
	e.wantErr(t, "an event of an unknown instance", err, "deleted")
}

// confEventsResume: writers on two stores add events to one instance
// while a follower reads with Events(after the last it saw): it sees every
// event exactly once, in order; events of one instance commit in the
// order of their sequence numbers.
func confEventsResume(t *testing.T, e *confEnv) {
	ctx := context.Background()
	stores := []*Store{e.open(t), e.elsewhere(t)}
	rec := confCreate(t, stores[0], "auggie", "", nil)
	noise := confCreate(t, stores[0], "codex", "", nil)
	const writers, each = 4, 40
	done := make(chan struct{})
	var seen []*Event
	var ferr error
	var fwg sync.WaitGroup
	fwg.Go(func() {
		var after int64
		for {
			last := false
			select {
			case <-done:
				last = true
			default:
			}
			evs, err := stores[1].Events(ctx, rec.ID, after)
			if err != nil {
				ferr = err
				return
			}
			for _, ev := range evs {
				seen = append(seen, ev)
				after = ev.Seq
			}
			if last {
				return
			}
		}
	})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			st := stores[w%2]
			for i := range each {
				if _, err := st.RecordProgress(ctx, rec.ID, "report_progress", StatusRunning, fmt.Sprintf("w%d-%03d", w, i), nil); err != nil {
					t.Error(err)
					return
				}
				if i%4 == 0 {
					if _, err := st.RecordProgress(ctx, noise.ID, "report_progress", StatusRunning, "noise", nil); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(done)
	fwg.Wait()
	if ferr != nil {
		t.Fatal(ferr)
	}
	all, err := stores[0].Events(ctx, rec.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != writers*each {
		t.Fatalf("%d events stored, want %d", len(all), writers*each)
	}
	if len(seen) != len(all) {
		t.Errorf("the follower saw %d events, %d were stored: resuming after the last seen missed some", len(seen), len(all))
	}
	next := map[int]int{}
	for i, ev := range seen {
		if i > 0 && ev.Seq <= seen[i-1].Seq {
			t.Errorf("the follower saw seq %d after %d", ev.Seq, seen[i-1].Seq)
		}
		var w, n int
		if _, err := fmt.Sscanf(ev.Message, "w%d-%d", &w, &n); err != nil || ev.InstanceID != rec.ID {
			t.Fatalf("the follower saw %s", confJSON(t, ev))
		}
		if n != next[w] {
			t.Errorf("writer %d's event %d came after its %d", w, n, next[w]-1)
		}
		next[w] = n + 1
	}
	e.note("%d events seen by the follower, %d stored", len(seen), len(all))
}

// confRuns: StartRun sets last_run and its event carries the run's id, as
// every event does while the run is open, whoever records it; EndRun adds
// its final event unless the model reported done or failed after the
// run's start, and ends last_run either way.
func confRuns(t *testing.T, e *confEnv) {
	ctx := context.Background()
	clk := newConfClock()
	st := e.open(t, WithClock(clk.now))
	other := e.elsewhere(t, WithClock(clk.now))
	rec := confCreate(t, st, "claude-code", "", nil)
	report := func(s *Store, status, msg string) *Event {
		t.Helper()
		clk.advance(time.Second)
		ev, err := s.AddEvent(ctx, Event{InstanceID: rec.ID, Tool: "report_progress", Status: status, Message: msg})
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	lastRun := func() *Run {
		t.Helper()
		r, err := other.LastRun(ctx, rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := lastRun(); r != nil {
		t.Fatalf("last_run before any run: %+v", r)
	}
	if ev := report(st, StatusDone, "before any run"); ev.RunID != "" {
		t.Errorf("an event outside a run has run %q", ev.RunID)
	}

	type outcome struct {
		model []string // the model's reports during the run (tool report_progress), or "run:STATUS" for the run tool's own
		final string   // EndRun's event status
		added bool
	}
	var runIDs []string
	for i, tc := range []outcome{
		{model: []string{StatusRunning}, final: StatusDone, added: true},
		{model: []string{StatusRunning, StatusDone}, final: StatusFailed, added: false},
		{model: []string{"run:" + StatusDone}, final: StatusFailed, added: true},
		// The model's last word stands, not an earlier one: work after a
		// final report ends as the run ends.
		{model: []string{StatusFailed, StatusRunning}, final: StatusDone, added: true},
		{model: []string{StatusDone, StatusBlocked, StatusRunning}, final: StatusFailed, added: true},
		// An unanswered question is no status: the done before it stands.
		{model: []string{StatusDone, StatusUnanswered}, final: StatusFailed, added: false},
		{model: nil, final: StatusFailed, added: true},
	} {
		clk.advance(time.Second)
		run := Run{Program: "claude", Mode: RunHeadless, PID: 4000 + i, StartedAt: clk.now()}
		if i%2 == 1 {
			run.ID = st.NewRunID()
		}
		starter := []*Store{st, other}[i%2]
		seq, err := starter.StartRun(ctx, rec.ID, run, Event{Tool: RunTool, Status: StatusRunning, Message: fmt.Sprintf("run %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		lr := lastRun()
		if lr == nil || lr.ID == "" || (run.ID != "" && lr.ID != run.ID) || lr.EndedAt != nil || lr.PID != run.PID || lr.Program != "claude" || !lr.StartedAt.Equal(run.StartedAt) {
			t.Fatalf("run %d: last_run after StartRun = %+v", i, lr)
		}
		runIDs = append(runIDs, lr.ID)
		evs, err := st.Events(ctx, rec.ID, seq-1)
		if err != nil || len(evs) != 1 || evs[0].Seq != seq || evs[0].RunID != lr.ID || evs[0].Tool != RunTool {
			t.Fatalf("run %d: the start event %v, %v", i, evs, err)
		}
		for j, m := range tc.model {
			tool := "report_progress"
			if s, ok := strings.CutPrefix(m, "run:"); ok {
				tool, m = RunTool, s
			}
			clk.advance(time.Second)
			ev, err := []*Store{st, other}[j%2].AddEvent(ctx, Event{InstanceID: rec.ID, Tool: tool, Status: m, Message: "model"})
			if err != nil {
				t.Fatal(err)
			}
			if ev.RunID != lr.ID {
				t.Errorf("run %d: an event during the run has run %q, want %q", i, ev.RunID, lr.ID)
			}
		}
		clk.advance(time.Second)
		end := *lr
		ended, code := clk.now(), 0
		end.EndedAt, end.ExitCode = &ended, &code
		added, err := []*Store{other, st}[i%2].EndRun(ctx, rec.ID, seq, end, Event{Tool: RunTool, Status: tc.final, Message: "end"})
		if err != nil {
			t.Fatal(err)
		}
		if added != tc.added {
			t.Errorf("run %d (model %v): EndRun added %v, want %v", i, tc.model, added, tc.added)
		}
		lr = lastRun()
		if lr.ID != runIDs[i] || lr.EndedAt == nil || !lr.EndedAt.Equal(ended) || lr.ExitCode == nil || *lr.ExitCode != 0 {
			t.Errorf("run %d: last_run after EndRun = %+v", i, lr)
		}
		after := report(other, StatusRunning, "after the run")
		if after.RunID != "" {
			t.Errorf("run %d: an event after the run's end has run %q", i, after.RunID)
		}
	}

	evs, err := st.Events(ctx, rec.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var summary []string
	for _, ev := range evs {
		run := slices.Index(runIDs, ev.RunID) + 1 // 0: none
		if ev.RunID != "" && run == 0 {
			t.Errorf("event %d has an unknown run %q", ev.Seq, ev.RunID)
		}
		tool := "model"
		if ev.Tool == RunTool {
			tool = "run"
		}
		summary = append(summary, fmt.Sprintf("%s %s run%d", tool, ev.Status, run))
	}
	e.note("events: %q", summary)
	// Each run's events: its start, the model's, its end when added; the
	// final one of each run carries its id.
	for i, id := range runIDs {
		var last *Event
		for _, ev := range evs {
			if ev.RunID == id {
				last = ev
			}
		}
		if last == nil || (last.Tool == RunTool && last.Message != "end") {
			t.Errorf("run %d: its last event %v", i, last)
		}
	}

	// A run whose client could not start: a run that ended as it started,
	// its one event failed and its own, seen from the other store.
	clk.advance(time.Second)
	ns := Run{ID: st.NewRunID(), Program: "missing-client", Mode: RunHeadless, StartedAt: clk.now(), StartError: "not installed"}
	if err := st.NotStarted(ctx, rec.ID, ns, Event{Tool: RunTool, Status: StatusFailed, Message: "missing-client could not start"}); err != nil {
		t.Fatal(err)
	}
	lr := lastRun()
	if lr.ID != ns.ID || lr.StartError != "not installed" || lr.EndedAt == nil || !lr.EndedAt.Equal(ns.StartedAt) || lr.ExitCode != nil || lr.PID != 0 {
		t.Errorf("last_run after NotStarted = %+v", lr)
	}
	evs, err = other.Events(ctx, rec.ID, evs[len(evs)-1].Seq)
	if err != nil || len(evs) != 1 || evs[0].RunID != ns.ID || evs[0].Status != StatusFailed || evs[0].Tool != RunTool {
		t.Errorf("NotStarted's events: %v, %v; want one failed event of run %s", evs, err, ns.ID)
	}
	e.note("not started: last_run start_error %q, ended at its start %v, events %d", lr.StartError, lr.EndedAt.Equal(ns.StartedAt), len(evs))
	err = st.NotStarted(ctx, "01kaaaaaaaaaaaaaaaaaaaaaaa", Run{Program: "x", StartedAt: clk.now()}, Event{Tool: RunTool, Status: StatusFailed})
	e.wantErr(t, "NotStarted of an unknown instance", err, "deleted")

	_, err = st.StartRun(ctx, "01kaaaaaaaaaaaaaaaaaaaaaaa", Run{Program: "x"}, Event{Tool: RunTool, Status: StatusRunning})
	e.wantErr(t, "StartRun of an unknown instance", err, "deleted")
	_, err = st.EndRun(ctx, "01kaaaaaaaaaaaaaaaaaaaaaaa", 0, Run{Program: "x"}, Event{Tool: RunTool, Status: StatusDone})
	e.wantErr(t, "EndRun of an unknown instance", err, "deleted")
}

// confUpdate: UpdateInstance changes the record and writes its files
// together, seen by every store; a refusal changes nothing.
func confUpdate(t *testing.T, e *confEnv) {
	ctx := context.Background()
	st := e.open(t)
	other := e.elsewhere(t)
	rec := confCreate(t, st, "auggie", "upd", nil)
	before := confJSON(t, rec)
	kb := mount.Resolved{Mount: mount.Mount{Kind: mount.KindKB, Name: "kb", Path: "/srv/kb"}, EffectivePrefix: "kb", PrefixOrigin: mount.OriginDerived}
	got, err := st.UpdateInstance(ctx, "upd", func(r *Record) (map[string][]byte, error) {
		r.QuestionTimeout = Duration(7 * time.Minute)
		r.Mounts = append(r.Mounts, kb)
		return map[string][]byte{"notes.md": []byte("hello\n")}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.QuestionTimeout != Duration(7*time.Minute) || len(got.Mounts) != 1 || got.Mounts[0].Name != "kb" || !slices.Contains(got.Files, "notes.md") {
		t.Errorf("UpdateInstance returned %s", confJSON(t, got))
	}
	for i, s := range []*Store{st, other} {
		r, err := s.Get(ctx, rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if confJSON(t, r) != confJSON(t, got) {
			t.Errorf("store %d: Get after the update:\n got  %s\n want %s", i, confJSON(t, r), confJSON(t, got))
		}
	}
	if data, err := os.ReadFile(filepath.Join(rec.Dir, "notes.md")); err != nil || string(data) != "hello\n" {
		t.Errorf("the file written by the update: %q, %v", data, err)
	}
	e.note("after the update: timeout %s, mounts %d, files %q", time.Duration(got.QuestionTimeout), len(got.Mounts), got.Files)

	refused := errors.New("refused")
	_, err = other.UpdateInstance(ctx, rec.ID, func(r *Record) (map[string][]byte, error) {
		r.ServerName = "changed"
		return nil, refused
	})
	if !errors.Is(err, refused) {
		t.Errorf("a refused update: %v, want the refusal", err)
	}
	if r, _ := st.Get(ctx, rec.ID); r == nil || confJSON(t, r) != confJSON(t, got) {
		t.Errorf("a refused update changed the record")
	}
	_, err = st.UpdateInstance(ctx, "nosuch", func(*Record) (map[string][]byte, error) { return nil, nil })
	e.wantErr(t, "update an unknown instance", err, "not found")
	if before == confJSON(t, got) {
		t.Error("the update changed nothing")
	}
}

// confUpdateRace: updates from 8 goroutines on two stores, each adding
// mounts, while runs start and end on the same record: no update is lost.
func confUpdateRace(t *testing.T, e *confEnv) {
	ctx := context.Background()
	stores := []*Store{e.open(t), e.elsewhere(t)}
	rec := confCreate(t, stores[0], "auggie", "", nil)
	const goroutines, each, runs = 8, 10, 5
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				name := fmt.Sprintf("m%d-%d", g, i)
				_, err := stores[g%2].UpdateInstance(ctx, rec.ID, func(r *Record) (map[string][]byte, error) {
					r.Mounts = append(r.Mounts, mount.Resolved{Mount: mount.Mount{Kind: mount.KindKB, Name: name, Path: "/kb/" + name}})
					return nil, nil
				})
				if err != nil {
					t.Errorf("update %s: %v", name, err)
					return
				}
			}
		})
	}
	var lastRunID string
	wg.Go(func() {
		for i := range runs {
			st := stores[i%2]
			run := Run{ID: st.NewRunID(), Program: "claude", Mode: RunHeadless, StartedAt: time.Now()}
			seq, err := st.StartRun(ctx, rec.ID, run, Event{Tool: RunTool, Status: StatusRunning, Message: "start"})
			if err != nil {
				t.Error(err)
				return
			}
			now := time.Now()
			run.EndedAt = &now
			if _, err := stores[1-i%2].EndRun(ctx, rec.ID, seq, run, Event{Tool: RunTool, Status: StatusDone, Message: "end"}); err != nil {
				t.Error(err)
				return
			}
			lastRunID = run.ID
		}
	})
	wg.Wait()
	r, err := stores[1].Get(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range r.Mounts {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	var want []string
	for g := range goroutines {
		for i := range each {
			want = append(want, fmt.Sprintf("m%d-%d", g, i))
		}
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("%d mounts after %d updates adding one each (lost: %v)", len(names), len(want), confMissing(want, names))
	}
	if r.LastRun == nil || r.LastRun.ID != lastRunID || r.LastRun.EndedAt == nil {
		t.Errorf("last_run %+v, want the last run %s, ended", r.LastRun, lastRunID)
	}
	evs, err := stores[0].Events(ctx, rec.ID, 0)
	if err != nil || len(evs) != 2*runs {
		t.Errorf("%d run events (%v), want %d", len(evs), err, 2*runs)
	}
	e.note("%d mounts, last run kept: %v", len(names), r.LastRun != nil && r.LastRun.ID == lastRunID)
}

func confMissing(want, got []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			out = append(out, w)
		}
	}
	return out
}

// confDelete: DeleteInstance removes the record, its questions, events,
// token and directory, leaves the others' alone, and a second delete is
// not found; the instance's calls then say it was deleted.
func confDelete(t *testing.T, e *confEnv) {
	ctx := context.Background()
	st := e.open(t)
	other := e.elsewhere(t)
	doomed := confCreate(t, st, "auggie", "doomed", nil)
	kept := confCreate(t, st, "codex", "kept", nil)
	var q string
	for _, r := range []*Record{doomed, kept} {
		var err error
		if q, err = st.AskQuestion(ctx, r.ID, "Really?", nil); err != nil {
			t.Fatal(err)
		}
		if _, err = st.AskQuestion(ctx, r.ID, "Sure?", []string{"y"}); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{StatusRunning, StatusBlocked} {
			if _, err := st.RecordProgress(ctx, r.ID, "report_progress", s, s, nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.StartRun(ctx, r.ID, Run{Program: "x", Mode: RunHeadless}, Event{Tool: RunTool, Status: StatusRunning}); err != nil {
			t.Fatal(err)
		}
	}
	qDoomed, _ := st.Questions(ctx, doomed.ID, false)
	rows := func(id string) string {
		t.Helper()
		var out []string
		for _, table := range []string{"instances WHERE id", "questions WHERE instance_id", "events WHERE instance_id", "instance_tokens WHERE instance_id"} {
			n, err := st.CountForTest(`SELECT count(*) FROM ` + table + ` = '` + id + `'`)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprint(n))
		}
		return strings.Join(out, " ")
	}
	if got := rows(doomed.ID); got != "1 2 3 1" {
		t.Fatalf("rows before the delete (instance, questions, events, token): %s", got)
	}
	del, err := st.Delete(ctx, "doomed")
	if err != nil {
		t.Fatal(err)
	}
	if del.ID != doomed.ID {
		t.Errorf("Delete returned %s, want %s", del.ID, doomed.ID)
	}
	if got := rows(doomed.ID); got != "0 0 0 0" {
		t.Errorf("rows of the deleted instance (instance, questions, events, token): %s, want none", got)
	}
	if got := rows(kept.ID); got != "1 2 3 1" {
		t.Errorf("rows of the kept instance: %s, want them all", got)
	}
	e.note("rows left: %s / kept: %s", rows(doomed.ID), rows(kept.ID))
	if _, err := os.Stat(doomed.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the deleted instance's directory: %v", err)
	}
	for i, s := range []*Store{st, other} {
		_, err := s.Get(ctx, doomed.ID)
		e.wantErr(t, fmt.Sprint(i, ": Get after the delete"), err, "not found")
		_, err = s.Get(ctx, "doomed")
		e.wantErr(t, fmt.Sprint(i, ": Get by label after the delete"), err, "not found")
		if ok, err := s.Exists(ctx, doomed.ID); ok || err != nil {
			t.Errorf("store %d: Exists after the delete: %v, %v", i, ok, err)
		}
		if ok, err := s.CheckToken(ctx, doomed.ID, doomed.NewToken()); ok || err != nil {
			t.Errorf("store %d: the deleted instance's token checks: %v, %v", i, ok, err)
		}
		if qs, err := s.Questions(ctx, doomed.ID, true); err != nil || len(qs) != 0 {
			t.Errorf("store %d: questions after the delete: %d, %v", i, len(qs), err)
		}
		if evs, err := s.Events(ctx, doomed.ID, 0); err != nil || len(evs) != 0 {
			t.Errorf("store %d: events after the delete: %d, %v", i, len(evs), err)
		}
	}
	_, _, err = other.PollAnswer(ctx, doomed.ID, qDoomed[0].ID)
	e.wantErr(t, "PollAnswer after the delete", err, "deleted")
	_, err = other.AddEvent(ctx, Event{InstanceID: doomed.ID, Tool: "t", Status: StatusRunning})
	e.wantErr(t, "AddEvent after the delete", err, "deleted")
	_, err = other.AskQuestion(ctx, doomed.ID, "Still there?", nil)
	e.wantErr(t, "AskQuestion after the delete", err, "deleted")
	_, err = other.ExpireQuestion(ctx, doomed.ID, qDoomed[0].ID)
	e.wantErr(t, "ExpireQuestion after the delete", err, "deleted")
	_, err = other.Listing(ctx, doomed)
	e.wantErr(t, "Listing after the delete", err, "deleted")
	_, err = other.Answer(ctx, doomed.ID, qDoomed[0].ID, "x", false)
	e.wantErr(t, "Answer after the delete", err, "not found")
	_, err = other.Delete(ctx, doomed.ID)
	e.wantErr(t, "a second delete", err, "not found")
	_, err = st.Delete(ctx, "doomed")
	e.wantErr(t, "a second delete by label", err, "not found")

	if ok, err := st.CheckToken(ctx, kept.ID, kept.NewToken()); !ok || err != nil {
		t.Errorf("the kept instance's token: %v, %v", ok, err)
	}
	if ans, status, err := st.PollAnswer(ctx, kept.ID, q); ans != "" || status == QuestionAnswered || err != nil {
		t.Errorf("the kept instance's question: %q, %v, %v", ans, status, err)
	}

	// Concurrent deletes of one instance from two processes: one deletes.
	racer := confCreate(t, st, "auggie", "racer", nil)
	sts := []*Store{st, e.open(t)}
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { _, errs[i] = sts[i%2].Delete(ctx, racer.ID) })
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch confErr(err) {
		case "ok":
			won++
		case "not found":
		default:
			t.Errorf("concurrent delete %d: %v", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d concurrent deletes succeeded, want 1", won, len(errs))
	}
	e.note("concurrent deletes: %d won", won)
	confOnlyDirs(t, st, kept.ID)
}

// confWatch: on PostgreSQL, WatchEvents, WatchAnswer and WatchRecord receive soon after
// another store (another process or host) records an event or an answer,
// for the watched key only, and not after the watch ends. On SQLite, which
// cannot say what changed, every watch receives soon after any commit of
// another store, and never while nothing is committed (after the wake its
// start may bring). A Poller following an instance sees another store's events,
// woken by the watch alone: it polls once an hour.
func confWatch(t *testing.T, e *confEnv) {
	ctx := context.Background()
	st := e.open(t)
	writer := e.elsewhere(t, WithHost("host-b"))
	a := confCreate(t, st, "auggie", "", nil)
	b := confCreate(t, st, "codex", "", nil)
	addEvent := func(r *Record, msg string) {
		t.Helper()
		if _, err := writer.AddEvent(ctx, Event{InstanceID: r.ID, Tool: "report_progress", Status: StatusRunning, Message: msg}); err != nil {
			t.Fatal(err)
		}
	}

	if e.kind == "sqlite" {
		// The file events wake the watchers, not the fallback (within
		// confWait otherwise).
		st.db.be.(*sqliteBackend).fallback = time.Hour
		settled := func(ch <-chan struct{}, what string) {
			t.Helper()
			if ch == nil {
				t.Fatalf("SQLite %s: a nil channel", what)
			}
			sqliteSettled(ch)
		}
		wa, stopA := st.WatchEvents(ctx, a.ID)
		settled(wa, "WatchEvents(a)")
		wq, stopQ := st.WatchAnswer(ctx, "01kaaaaaaaaaaaaaaaaaaaaaaa")
		defer stopQ()
		settled(wq, "WatchAnswer")
		wr, stopR := st.WatchRecord(ctx, b.ID)
		defer stopR()
		settled(wr, "WatchRecord(b)")
		confQuiet(t, wa, 4*SQLiteWatchInterval, "WatchEvents(a) while nothing is committed")
		addEvent(a, "for a")
		confReceives(t, wa, "WatchEvents(a) after another store's event of a")
		confReceives(t, wq, "WatchAnswer after another store's commit")
		confReceives(t, wr, "WatchRecord(b) after another store's commit")
		stopA()
		addEvent(a, "for a again")
		confReceives(t, wr, "WatchRecord(b) after the next commit")
		confQuiet(t, wa, 2*SQLiteWatchInterval, "a stopped watch")
	} else {
		// The first watch starts the store's listener, which wakes every
		// watch once it listens (what came before went unheard): after
		// that, a wake is a notification.
		primer, stopPrimer := st.WatchEvents(ctx, "primer")
		if primer == nil {
			t.Fatal("PostgreSQL WatchEvents: a nil channel")
		}
		confReceives(t, primer, "the first watch, once the listener listens")
		stopPrimer()

		wa, stopA := st.WatchEvents(ctx, a.ID)
		wa2, stopA2 := st.WatchEvents(ctx, a.ID)
		wb, stopB := st.WatchEvents(ctx, b.ID)
		defer stopA2()
		defer stopB()
		addEvent(b, "for b")
		confReceives(t, wb, "WatchEvents(b) after another host's event of b")
		confQuiet(t, wa, 300*time.Millisecond, "WatchEvents(a) after an event of b")
		addEvent(a, "for a")
		confReceives(t, wa, "WatchEvents(a) after another host's event of a")
		confReceives(t, wa2, "a second WatchEvents(a) after the same event")
		confQuiet(t, wb, 300*time.Millisecond, "WatchEvents(b) after an event of a")
		stopA()
		addEvent(a, "for a again")
		confReceives(t, wa2, "the remaining watch of a")
		confQuiet(t, wa, 300*time.Millisecond, "a stopped watch")

		qid, err := writer.AskQuestion(ctx, a.ID, "Go?", []string{"go", "stop"})
		if err != nil {
			t.Fatal(err)
		}
		wq, stopQ := st.WatchAnswer(ctx, qid)
		defer stopQ()
		if wq == nil {
			t.Fatal("PostgreSQL WatchAnswer: a nil channel")
		}
		if _, err := writer.Answer(ctx, a.ID, qid, "maybe", false); err == nil {
			t.Fatal("a non-choice was taken")
		}
		confQuiet(t, wq, 300*time.Millisecond, "WatchAnswer after a refused answer")
		if _, err := writer.Answer(ctx, a.ID, qid, "GO", false); err != nil {
			t.Fatal(err)
		}
		confReceives(t, wq, "WatchAnswer after another host's answer")
		if ans, status, err := st.PollAnswer(ctx, a.ID, qid); ans != "go" || status != QuestionAnswered || err != nil {
			t.Errorf("PollAnswer after the wake = %q, %v, %v", ans, status, err)
		}
		confQuiet(t, wb, 300*time.Millisecond, "WatchEvents(b) after an answer")

		// A record changed elsewhere (a mount added, a restart asked for)
		// wakes the endpoints that follow it: serving.Follow.
		wr, stopR := st.WatchRecord(ctx, a.ID)
		defer stopR()
		wrb, stopRB := st.WatchRecord(ctx, b.ID)
		defer stopRB()
		if _, err := writer.UpdateInstance(ctx, a.ID, func(r *Record) (map[string][]byte, error) {
			r.QuestionTimeout = Duration(time.Minute)
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
		confReceives(t, wr, "WatchRecord(a) after another host's change of a's record")
		confQuiet(t, wrb, 300*time.Millisecond, "WatchRecord(b) after a change of a's record")
	}

	// A follower of a, on this host, sees the other host's events.
	const interval = time.Hour // only a watch wakes the poller
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan string, 16)
	var wg sync.WaitGroup
	wg.Go(func() {
		p := &Poller{Source: st, Interval: interval}
		for ev, err := range p.Events(fctx, a.ID, true) {
			if err != nil {
				close(got)
				return
			}
			select {
			case got <- ev.Message:
			case <-fctx.Done():
				return
			}
		}
	})
	defer wg.Wait()
	defer cancel()
	next := func(want string) {
		t.Helper()
		select {
		case m, ok := <-got:
			if !ok || m != want {
				t.Fatalf("the follower yielded %q (%v), want %q", m, ok, want)
			}
		case <-time.After(confWait):
			t.Fatalf("the follower did not yield %q within %v", want, confWait)
		}
	}
	addEvent(a, "first")
	// Once it has yielded the events stored before, it is subscribed.
	var before []string
	evs, err := st.Events(ctx, a.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		before = append(before, ev.Message)
	}
	for _, m := range before {
		next(m)
	}
	addEvent(b, "not a's")
	addEvent(a, "followed")
	next("followed")
	e.note("the follower saw the stored events and then another host's")
}

// confTwoStores: two stores opened on one database (two processes of
// one host, and a third elsewhere) see each other's writes at once: a
// question asked through one is answered through another while the
// asker polls for it, as the endpoint does.
func confTwoStores(t *testing.T, e *confEnv) {
	ctx := context.Background()
	one, two := e.open(t), e.open(t)
	far := e.elsewhere(t, WithHost("far"))
	rec := confCreate(t, one, "auggie", "shared", nil)
	for i, s := range []*Store{two, far} {
		r, err := s.Get(ctx, "shared")
		if err != nil || confJSON(t, r) != confJSON(t, confLocalized(rec, s)) {
			t.Errorf("store %d: Get of another store's create = %v, %v", i+2, r, err)
		}
	}
	for i, pair := range []struct{ asker, answerer *Store }{{one, two}, {two, far}, {far, one}} {
		qid, err := pair.asker.AskQuestion(ctx, rec.ID, fmt.Sprintf("Question %d?", i), []string{"Yes", "No"})
		if err != nil {
			t.Fatal(err)
		}
		polled := make(chan string, 1)
		var wg sync.WaitGroup
		wg.Go(func() {
			deadline := time.Now().Add(confWait)
			for time.Now().Before(deadline) {
				ans, status, err := pair.asker.PollAnswer(ctx, rec.ID, qid)
				if err != nil {
					t.Error(err)
					break
				}
				if status == QuestionAnswered {
					polled <- ans
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
			close(polled)
		})
		open, err := pair.answerer.Questions(ctx, rec.ID, false)
		if err != nil || len(open) != 1 || open[0].ID != qid {
			t.Fatalf("pair %d: the answerer sees open questions %v, %v", i, open, err)
		}
		if _, err := pair.answerer.Answer(ctx, rec.ID, "", "no", false); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		ans, ok := <-polled
		if !ok || ans != "No" {
			t.Errorf("pair %d: the asker polled %q (%v), want No", i, ans, ok)
		}
		e.note("pair %d: polled %q", i, ans)
	}
	if _, err := two.RecordProgress(ctx, rec.ID, "report_progress", StatusBlocked, "from two", nil); err != nil {
		t.Fatal(err)
	}
	if evs, err := far.Events(ctx, rec.ID, 0); err != nil || len(evs) != 1 || evs[0].Message != "from two" {
		t.Errorf("another store's event: %v, %v", evs, err)
	}
	if l, err := one.Listing(ctx, rec); err != nil || l.Status != StatusBlocked || l.OpenQuestions != 0 {
		t.Errorf("listing after the other stores' writes: %+v, %v", l, err)
	}
	if _, err := far.Delete(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	ok, err := one.Exists(ctx, rec.ID)
	e.note("exists after another store's delete: %v %v", ok, err)
	if ok || err != nil {
		t.Errorf("Exists after another store's delete: %v, %v", ok, err)
	}
}

// confMigrations: 8 stores opening a fresh database at once all succeed
// and migrate it once; reopening it is a no-op, which does not wait for
// the lock migrators take; a database of a newer schema is refused,
// naming it.
func confMigrations(t *testing.T, e *confEnv) {
	ctx := context.Background()
	const n = 8
	stores := make([]*Store, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = Open(ctx, e.dir, WithStore(e.url))
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		if stores[i] != nil {
			t.Cleanup(func() { stores[i].Close() })
		}
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d of %d at once: %v", i+1, n, err)
		}
	}
	version := func(st *Store) (v, rows int) {
		t.Helper()
		var err error
		if e.kind == "sqlite" {
			err = st.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
			rows = 1
		} else {
			err = st.db.QueryRowContext(ctx, "SELECT max(version), count(*) FROM agentctl_schema").Scan(&v, &rows)
		}
		if err != nil {
			t.Fatal(err)
		}
		return v, rows
	}
	want := len(sqliteMigrations)
	if e.kind == "postgres" {
		want = len(pgMigrations)
	}
	if v, rows := version(stores[n-1]); v != want || rows != 1 {
		t.Errorf("schema version %d (%d rows), want %d", v, rows, want)
	}
	e.note("%d opens at once: all succeeded", n)
	rec := confCreate(t, stores[0], "auggie", "migrated", nil)
	if r, err := stores[n-1].Get(ctx, "migrated"); err != nil || r.ID != rec.ID {
		t.Errorf("another store's Get: %v, %v", r, err)
	}

	// Hold what a migrator must take (SQLite: the write lock; PostgreSQL:
	// the migrators' advisory lock): a reopen that does not wait for it
	// has nothing to migrate.
	tx, err := stores[1].db.BeginTx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e.kind == "postgres" {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?)`, int64(pgMigrateLock)); err != nil {
			t.Fatal(err)
		}
	}
	type opened struct {
		st  *Store
		err error
	}
	reopened := make(chan opened, 1)
	octx, cancel := context.WithCancel(ctx)
	go func() {
		st, err := Open(octx, e.dir, WithStore(e.url))
		reopened <- opened{st, err}
	}()
	var re opened
	select {
	case re = <-reopened:
	case <-time.After(confWait):
		t.Errorf("reopening a migrated database waited %v for the migration lock: it migrates again", confWait)
		tx.Rollback()
		cancel()
		re = <-reopened
	}
	cancel()
	tx.Rollback()
	if re.err != nil {
		t.Fatalf("reopen: %v", re.err)
	}
	t.Cleanup(func() { re.st.Close() })
	if v, rows := version(re.st); v != want || rows != 1 {
		t.Errorf("schema version after a reopen %d (%d rows), want %d", v, rows, want)
	}
	if r, err := re.st.Get(ctx, "migrated"); err != nil || r.ID != rec.ID || confJSON(t, r) != confJSON(t, rec) {
		t.Errorf("the record after a reopen: %v, %v", r, err)
	}

	// A newer schema is refused, naming the database.
	if e.kind == "sqlite" {
		_, err = re.st.db.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", want+1))
	} else {
		_, err = re.st.db.ExecContext(ctx, `UPDATE agentctl_schema SET version = ?`, want+1)
	}
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, e.dir, WithStore(e.url))
	if err == nil || !strings.Contains(err.Error(), "upgrade agentctl") || !strings.Contains(err.Error(), re.st.StoreName()) {
		t.Errorf("opening a newer schema: %v; want a refusal naming %s and saying to upgrade", err, re.st.StoreName())
	}
	e.note("newer schema refused: %v", err != nil)
}

// confOpenErrors: an error opening the store names the database and never
// holds its password, however the URL carries it.
func confOpenErrors(t *testing.T, e *confEnv) {
	ctx := context.Background()
	// Not a store at all: the URL is refused as it is shown, without its
	// password, on either backend.
	_, err := Open(ctx, t.TempDir(), WithStore("mysql://user:hunter2secret@db.example/agentctl"))
	if !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "hunter2secret") || !strings.Contains(err.Error(), "db.example/agentctl") {
		t.Errorf("an unknown kind of store: %v", err)
	}
	e.note("unknown kind: %s", confErr(err))

	if e.kind == "sqlite" {
		dir := t.TempDir()
		path := filepath.Join(dir, DBFile)
		if err := os.Mkdir(path, 0o700); err != nil { // a directory where the file goes
			t.Fatal(err)
		}
		_, err := Open(ctx, dir)
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("an unusable SQLite file: %v; want an error naming %s", err, path)
		}
		return
	}

	st := e.open(t)
	u, err := url.Parse(string(e.url))
	if err != nil {
		t.Fatal(err)
	}
	real, _ := u.User.Password()
	db := strings.TrimPrefix(u.Path, "/")
	if real == "" || db == "" {
		t.Fatalf("testkit's URL %s has no password or database", RedactStore(string(e.url)))
	}
	if strings.Contains(st.StoreName(), real) || !strings.Contains(st.StoreName(), db) {
		t.Errorf("StoreName %q", st.StoreName())
	}
	// The endpoint's entry names the store without its password.
	rec := confCreate(t, st, "auggie", "", nil)
	data, err := os.ReadFile(rec.MCPConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), real) || !strings.Contains(string(data), db) {
		t.Errorf("the client's configuration holds the password, or not the store:\n%s", data)
	}

	user := u.User.Username()
	for _, tc := range []struct {
		what string
		make func(wrong string) string
	}{
		{"wrong password", func(wrong string) string {
			v := *u
			v.User = url.UserPassword(user, wrong)
			return v.String()
		}},
		{"wrong password, unparsable option", func(wrong string) string {
			v := *u
			v.User = url.UserPassword(user, wrong)
			q := v.Query()
			q.Set("sslmode", "bogus")
			v.RawQuery = q.Encode()
			return v.String()
		}},
		{"wrong password as a parameter", func(wrong string) string {
			v := *u
			v.User = url.User(user)
			q := v.Query()
			q.Set("password", wrong)
			v.RawQuery = q.Encode()
			return v.String()
		}},
		{"no such database", func(string) string {
			v := *u
			v.Path = "/agentctl_no_such_database" // short: the server cuts names at 63 bytes
			return v.String()
		}},
		{"password as a parameter, unparsable option", func(wrong string) string {
			v := *u
			v.User = url.User(user)
			q := v.Query()
			q.Set("password", wrong)
			q.Set("sslmode", "bogus")
			v.RawQuery = q.Encode()
			return v.String()
		}},
	} {
		for _, wrong := range []string{"Wr0ngHunter2", "p@ss:w/rd?#%&é x"} {
			raw := tc.make(wrong)
			octx, cancel := context.WithTimeout(ctx, confWait)
			st, err := Open(octx, t.TempDir(), WithStore(StoreURL(raw)))
			cancel()
			if err == nil {
				st.Close()
				t.Errorf("%s: opened", tc.what)
				continue
			}
			msg := err.Error()
			for _, secret := range []string{wrong, url.QueryEscape(wrong), url.PathEscape(wrong), strings.TrimPrefix(url.UserPassword(user, wrong).String(), user+":"), real} {
				if strings.Contains(msg, secret) {
					t.Errorf("%s (%q): the error holds the password (as %q): %s", tc.what, wrong, secret, msg)
				}
			}
			tried, _ := url.Parse(raw)
			if name := strings.TrimPrefix(tried.Path, "/"); !strings.Contains(msg, name) {
				t.Errorf("%s: the error does not name the database %s: %s", tc.what, name, msg)
			}
			// A wrong password or option is no outage: trying again
			// will not help (see ErrUnavailable).
			if errors.Is(err, ErrUnavailable) {
				t.Errorf("%s: the error matches ErrUnavailable, but the server answered (it refused the password or the URL): %s", tc.what, msg)
			}
		}
	}
}

func confPassword(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return "", false
	}
	return u.User.Password()
}

// confRestart: on a server of its own, a watch still wakes after the
// server restarts: the store's listener reconnects (and wakes its
// watches, since it may have missed notifications meanwhile), and the
// stores' pools work again.
func confRestart(t *testing.T) {
	ctx := context.Background()
	p := testkit.StartPostgres(t)
	u := StoreURL(p.NewDatabase(t))
	watcher := confOpen(t, t.TempDir(), u)
	writer := confOpen(t, t.TempDir(), u)
	rec := confCreate(t, watcher, "auggie", "", nil)
	w, stop := watcher.WatchEvents(ctx, rec.ID)
	defer stop()
	if w == nil {
		t.Fatal("WatchEvents: a nil channel")
	}
	confReceives(t, w, "the first watch, once the listener listens")
	add := func(s *Store, msg string) {
		t.Helper()
		deadline := time.Now().Add(confWait)
		for {
			_, err := s.AddEvent(ctx, Event{InstanceID: rec.ID, Tool: "report_progress", Status: StatusRunning, Message: msg})
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("AddEvent %q: %v", msg, err)
			}
			// The first statement on a connection the restart closed
			// may fail; the pool then replaces it.
			t.Logf("AddEvent %q: %v; again", msg, err)
			time.Sleep(100 * time.Millisecond)
		}
	}
	add(writer, "before")
	confReceives(t, w, "an event before the restart")
	q, err := writer.AddQuestion(ctx, rec.ID, "before the restart?", nil)
	if err != nil {
		t.Fatal(err)
	}

	p.Stop(t)
	// Meanwhile the store is unavailable, which its errors say, naming
	// it without its password: the reads that wait it out (instance
	// questions ID --wait, wait, events --follow) tell it so.
	pw, _ := confPassword(string(u))
	down := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), watcher.StoreName()) || strings.Contains(err.Error(), pw) {
			t.Errorf("%s while the server is down: %v; want ErrUnavailable naming %s", what, err, watcher.StoreName())
		}
	}
	down("Ping", watcher.Ping(ctx))
	_, err = watcher.OpenQuestions(ctx, rec.ID)
	down("OpenQuestions", err)
	_, err = watcher.Questions(ctx, rec.ID, true)
	down("Questions", err)
	_, err = watcher.Question(ctx, rec.ID, q.ID)
	down("Question", err)
	_, err = watcher.Events(ctx, rec.ID, 0)
	down("Events", err)
	_, err = watcher.Exists(ctx, rec.ID)
	down("Exists", err)
	p.Start(t)
	confReceives(t, w, "the watch once the listener reconnected after the restart")
	add(writer, "after")
	confReceives(t, w, "an event after the restart")
	add(watcher, "from the watcher's own store")
	confReceives(t, w, "an event of the watcher's own store after the restart")
	evs, err := watcher.Events(ctx, rec.ID, 0)
	if err != nil || len(evs) != 3 {
		t.Errorf("events after the restart: %d, %v; want 3", len(evs), err)
	}
}

// likeLiteral escapes s for a LIKE pattern with ESCAPE '!', so that it
// matches s literally on SQLite and PostgreSQL alike.
func likeLiteral(s string) string {
	return strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace(s)
}
