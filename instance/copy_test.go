package instance_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/internal/testkit"
)

// The package's TestMain (live_test.go) does not stop a shared server, so
// the copy tests start their own: one for all of them.

// fleet is what a store was given by fillStore, to check a copy by.
type fleet struct {
	ids    []string
	tokens map[string]string // instance id → its token
}

// fillStore creates three instances in st, one labelled label (if not ""),
// with questions (one answered), events (with percents and without) and
// statuses; the first instance's row and record are made to name no host,
// as a record made before hosts were kept does.
func fillStore(t *testing.T, st *instance.Store, label string) fleet {
	t.Helper()
	ctx := context.Background()
	f := fleet{tokens: map[string]string{}}
	for i, agent := range []string{"claude-code", "auggie", "codex"} {
		rec := create(t, st, agent, func(o *instance.CreateOptions) {
			if i == 1 {
				o.Name = label
			}
		})
		f.ids = append(f.ids, rec.ID)
		f.tokens[rec.ID] = rec.NewToken()
	}
	pct := 40.0
	for i, id := range f.ids {
		for j, status := range []string{"running", "blocked", "done"}[:i+1] {
			var p *float64
			if j == 0 {
				p = &pct
			}
			if _, err := st.RecordProgress(ctx, id, "report_progress", status, "step "+status, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	q1, err := st.AddQuestion(ctx, f.ids[0], "which way?", []string{"left", "right"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Answer(ctx, f.ids[0], q1.ID, "LEFT", false); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddQuestion(ctx, f.ids[0], "proceed?", nil); err != nil {
		t.Fatal(err)
	}
	// Headless runs' output: two chunks of one instance's, one of another's.
	if err := st.AppendRunLog(ctx, f.ids[0], "run-1", bytes.Repeat([]byte("log line\n"), instance.RunLogChunk/9+10)); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendRunLog(ctx, f.ids[2], "run-2", []byte("done\n")); err != nil {
		t.Fatal(err)
	}
	legacy := `UPDATE instances SET host = '', record = ` + map[string]string{
		"sqlite":   `json_remove(record, '$.host')`,
		"postgres": `(record::jsonb - 'host')::text`,
	}[st.Kind()] + ` WHERE id = '` + f.ids[0] + `'`
	if err := st.ExecForTest(legacy); err != nil {
		t.Fatal(err)
	}
	// Its questions' copies of its host too, as the migration that added
	// them left them.
	if err := st.ExecForTest(`UPDATE questions SET host = '' WHERE instance_id = '` + f.ids[0] + `'`); err != nil {
		t.Fatal(err)
	}
	return f
}

// listing is everything a store holds of its instances, as the CLI reads it.
type listing struct {
	Instances []*instance.Listed
	Events    map[string][]*instance.Event
	Questions map[string][]*instance.Question
}

func listAll(t *testing.T, st *instance.Store) listing {
	t.Helper()
	ctx := context.Background()
	l := listing{Events: map[string][]*instance.Event{}, Questions: map[string][]*instance.Question{}}
	for r, err := range st.Records(ctx, instance.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		l.Instances = append(l.Instances, r)
		ev, err := st.Events(ctx, r.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		qs, err := st.Questions(ctx, r.ID, true)
		if err != nil {
			t.Fatal(err)
		}
		l.Events[r.ID], l.Questions[r.ID] = ev, qs
	}
	return l
}

// checkCopied checks that dst holds what src does, the records that named
// no host naming host.
func checkCopied(t *testing.T, src, dst *instance.Store, f fleet, host string) {
	t.Helper()
	ctx := context.Background()
	want, got := listAll(t, src), listAll(t, dst)
	if len(want.Instances) != len(got.Instances) {
		t.Fatalf("%d instances copied, want %d", len(got.Instances), len(want.Instances))
	}
	for i, w := range want.Instances {
		g := got.Instances[i]
		if w.Host == "" {
			c := *w.Record
			c.Host = host
			w = &instance.Listed{Record: &c, Status: w.Status, OpenQuestions: w.OpenQuestions}
		}
		if !reflect.DeepEqual(w, g) {
			wj, _ := json.Marshal(w)
			gj, _ := json.Marshal(g)
			t.Errorf("instance %s:\n got %s\nwant %s", w.ID, gj, wj)
		}
		if g.Host != host {
			t.Errorf("instance %s: host %q, want %q", g.ID, g.Host, host)
		}
	}
	if !reflect.DeepEqual(want.Events, got.Events) {
		t.Errorf("events differ (sequence numbers included):\n got %s\nwant %s", js(got.Events), js(want.Events))
	}
	if !reflect.DeepEqual(want.Questions, got.Questions) {
		t.Errorf("questions differ:\n got %s\nwant %s", js(got.Questions), js(want.Questions))
	}
	// Run logs: each instance's output, whole and in order.
	for _, id := range f.ids {
		w, err := src.RunLog(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		g, err := dst.RunLog(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		if logText(w) != logText(g) {
			t.Errorf("instance %s: run log %q copied as %q", id, logText(w), logText(g))
		}
	}
	// The inbox shows each open question with its instance's label, agent
	// and host as the target has them (the host the copy gave included).
	inbox, err := dst.Inbox(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*instance.Listed{}
	for _, r := range got.Instances {
		byID[r.ID] = r
	}
	for _, q := range inbox {
		r := byID[q.InstanceID]
		if r == nil || q.InstanceName != r.Name || q.Agent != r.Agent || q.Host != r.Host {
			t.Errorf("inbox question %s: label %q, agent %q, host %q; its instance: %s", q.ID, q.InstanceName, q.Agent, q.Host, js(r))
		}
	}
	if len(inbox) == 0 {
		t.Error("the copy's inbox is empty; the fleet has an open question")
	}
	// The host is in the column too (instance list --host).
	n := 0
	for _, err := range dst.Records(ctx, instance.ListOptions{Host: host}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != len(f.ids) {
		t.Errorf("list --host %s: %d instances, want %d", host, n, len(f.ids))
	}
	for id, tok := range f.tokens {
		if ok, err := dst.CheckToken(ctx, id, tok); err != nil || !ok {
			t.Errorf("instance %s's token does not check in the target: %v, %v", id, ok, err)
		}
	}
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

// logText is a run log's chunks as run id and data, in order.
func logText(cs []instance.LogChunk) string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(c.RunID + ":" + string(c.Data) + "|")
	}
	return b.String()
}

// checkStats compares the counts of a copy.
func checkStats(t *testing.T, what string, got instance.CopyStats, want [4][2]int) {
	t.Helper()
	for i, tc := range []instance.TableCopy{got.Instances, got.Tokens, got.Questions, got.Events} {
		if tc.Copied != want[i][0] || tc.Skipped != want[i][1] {
			t.Errorf("%s: %s: copied %d, skipped %d; want %d, %d (%s)", what,
				[]string{"instances", "tokens", "questions", "events"}[i], tc.Copied, tc.Skipped, want[i][0], want[i][1], js(got))
		}
	}
}

// maxSeq is the largest event number of a listing.
func maxSeq(l listing) int64 {
	var m int64
	for _, evs := range l.Events {
		for _, e := range evs {
			m = max(m, e.Seq)
		}
	}
	return m
}

// fileSums are the SHA-256 of the SQLite files of st.
func fileSums(t *testing.T, path string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	for _, f := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out[f] = sha256.Sum256(b)
	}
	return out
}

func openAt(t *testing.T, dir string, u string, host string) *instance.Store {
	t.Helper()
	st, err := instance.Open(context.Background(), dir, instance.WithStore(instance.StoreURL(u)), instance.WithHost(host))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestCopyStore(t *testing.T) {
	t.Parallel()
	pg := testkit.StartPostgres(t)
	ctx := context.Background()

	t.Run("SQLiteToPostgres", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		src := openAt(t, dir, "", "host-a")
		f := fillStore(t, src, "fix-login")
		dst := openAt(t, dir, pg.NewDatabase(t), "host-a")

		before := fileSums(t, filepath.Join(dir, instance.DBFile))
		want := listAll(t, src)
		st, err := instance.CopyStore(ctx, src, dst, instance.CopyOptions{Host: "host-a"})
		if err != nil {
			t.Fatal(err)
		}
		checkStats(t, "first copy", st, [4][2]int{{3, 0}, {3, 0}, {2, 0}, {6, 0}})
		if st.HostSet != 1 || st.Renumbered != 0 || len(st.Conflicts) != 0 || st.Copied() != 17 || st.RunLogs.Copied != 3 {
			t.Errorf("first copy: %s", js(st))
		}
		checkCopied(t, src, dst, f, "host-a")
		// The source is as it was: the record without a host still has
		// none, and not a byte of its files changed.
		if !reflect.DeepEqual(listAll(t, src), want) {
			t.Error("the copy changed what the source holds")
		}
		if after := fileSums(t, filepath.Join(dir, instance.DBFile)); !reflect.DeepEqual(before, after) {
			t.Error("the copy wrote to the source's database files")
		}

		again, err := instance.CopyStore(ctx, src, dst, instance.CopyOptions{Host: "host-a"})
		if err != nil {
			t.Fatal(err)
		}
		checkStats(t, "second copy", again, [4][2]int{{0, 3}, {0, 3}, {0, 2}, {0, 6}})
		if again.Copied() != 0 || len(again.Conflicts) != 0 || again.RunLogs.Skipped != 3 {
			t.Errorf("second copy: %s", js(again))
		}

		// A new event in the target numbers after the copied ones.
		seq, err := dst.RecordProgress(ctx, f.ids[0], "report_progress", "running", "after the move", nil)
		if err != nil {
			t.Fatal(err)
		}
		if m := maxSeq(want); seq <= m {
			t.Errorf("a new event after the copy got seq %d, not above the copied %d", seq, m)
		}
	})

	t.Run("PostgresToSQLite", func(t *testing.T) {
		t.Parallel()
		src := openAt(t, t.TempDir(), pg.NewDatabase(t), "host-p")
		f := fillStore(t, src, "")
		dir := t.TempDir()
		dst := openAt(t, dir, "sqlite:"+filepath.Join(dir, "moved.db"), "host-p")
		st, err := instance.CopyStore(ctx, src, dst, instance.CopyOptions{Host: "host-p"})
		if err != nil {
			t.Fatal(err)
		}
		checkStats(t, "first copy", st, [4][2]int{{3, 0}, {3, 0}, {2, 0}, {6, 0}})
		checkCopied(t, src, dst, f, "host-p")
		again, err := instance.CopyStore(ctx, src, dst, instance.CopyOptions{Host: "host-p"})
		if err != nil {
			t.Fatal(err)
		}
		if again.Copied() != 0 || len(again.Conflicts) != 0 {
			t.Errorf("second copy: %s", js(again))
		}
		seq, err := dst.RecordProgress(ctx, f.ids[2], "report_progress", "running", "after the move", nil)
		if err != nil {
			t.Fatal(err)
		}
		if m := maxSeq(listAll(t, src)); seq <= m {
			t.Errorf("a new event after the copy got seq %d, not above the copied %d", seq, m)
		}
	})

	// Two hosts' SQLite stores into one PostgreSQL database: their events
	// are numbered from 1 in each, so the second host's are renumbered,
	// in order; labels taken are reported and their instances left out;
	// a third copy of either copies nothing.
	t.Run("TwoHostsIntoOne", func(t *testing.T) {
		t.Parallel()
		shared := pg.NewDatabase(t)
		a := openAt(t, t.TempDir(), "", "host-a")
		fa := fillStore(t, a, "same-label")
		b := openAt(t, t.TempDir(), "", "host-b")
		fb := fillStore(t, b, "same-label")
		dst := openAt(t, t.TempDir(), shared, "host-a")

		if _, err := instance.CopyStore(ctx, a, dst, instance.CopyOptions{Host: "host-a"}); err != nil {
			t.Fatal(err)
		}
		st, err := instance.CopyStore(ctx, b, dst, instance.CopyOptions{Host: "host-b"})
		if err != nil {
			t.Fatal(err)
		}
		// fb.ids[1] is labelled as fa.ids[1]: left out with its token and
		// its two events.
		checkStats(t, "second host", st, [4][2]int{{2, 1}, {2, 1}, {2, 0}, {4, 2}})
		if len(st.Conflicts) != 1 || st.Conflicts[0].ID != fb.ids[1] || !st.Conflicts[0].LeftOut ||
			!strings.Contains(st.Conflicts[0].Reason, fa.ids[1]) || len(st.LeftOut()) != 1 {
			t.Errorf("conflicts: %s", js(st.Conflicts))
		}
		if st.Renumbered != 4 {
			t.Errorf("renumbered %d events, want 4 (those of host b, numbered as host a's)", st.Renumbered)
		}
		got := listAll(t, dst)
		wantB := listAll(t, b)
		for _, id := range []string{fb.ids[0], fb.ids[2]} {
			g, w := got.Events[id], wantB.Events[id]
			if len(g) != len(w) {
				t.Fatalf("instance %s: %d events, want %d", id, len(g), len(w))
			}
			for i := range w {
				if g[i].Status != w[i].Status || g[i].Message != w[i].Message || (i > 0 && g[i].Seq <= g[i-1].Seq) {
					t.Errorf("instance %s event %d: got %s, want %s (in order)", id, i, js(g[i]), js(w[i]))
				}
			}
		}
		for i, id := range fa.ids {
			if !reflect.DeepEqual(got.Events[id], listAll(t, a).Events[id]) {
				t.Errorf("host a's instance %d: events changed by host b's copy", i)
			}
		}
		if _, ok := got.Events[fb.ids[1]]; ok {
			t.Errorf("the instance left out is in the target")
		}
		if ok, _ := dst.CheckToken(ctx, fb.ids[0], fb.tokens[fb.ids[0]]); !ok {
			t.Error("host b's token does not check")
		}

		for src, conflicts := range map[*instance.Store]int{a: 0, b: 1} {
			again, err := instance.CopyStore(ctx, src, dst, instance.CopyOptions{Host: src.Host()})
			if err != nil {
				t.Fatal(err)
			}
			if again.Copied() != 0 || len(again.Conflicts) != conflicts {
				t.Errorf("copy again from %s: %s", src.Host(), js(again))
			}
		}

		// The target's record changed since (a run there): not
		// overwritten, and said so.
		if err := dst.ExecForTest(`UPDATE instances SET record = jsonb_set(record::jsonb, '{workspace}', '"/elsewhere"')::text WHERE id = '` + fa.ids[2] + `'`); err != nil {
			t.Fatal(err)
		}
		st, err = instance.CopyStore(ctx, a, dst, instance.CopyOptions{Host: "host-a"})
		if err != nil {
			t.Fatal(err)
		}
		if st.Copied() != 0 || len(st.Conflicts) != 1 || st.Conflicts[0].ID != fa.ids[2] || st.Conflicts[0].LeftOut ||
			!strings.Contains(st.Conflicts[0].Reason, "record") || st.Instances.Conflicting != 1 || st.Instances.Skipped != 3 {
			t.Errorf("copy over a changed record: %s", js(st))
		}
		if r, err := dst.Get(ctx, fa.ids[2]); err != nil || r.Workspace != "/elsewhere" {
			t.Errorf("the target's record was overwritten: %v, %v", r, err)
		}

		// A new event in the source since the first copy is copied, under
		// its own number when that is free.
		seq, err := a.RecordProgress(ctx, fa.ids[0], "report_progress", "done", "later", nil)
		if err != nil {
			t.Fatal(err)
		}
		st, err = instance.CopyStore(ctx, a, dst, instance.CopyOptions{Host: "host-a"})
		if err != nil {
			t.Fatal(err)
		}
		if st.Events.Copied != 1 || st.Copied() != 1 {
			t.Errorf("copy of one new event: %s", js(st))
		}
		evs, err := dst.Events(ctx, fa.ids[0], 0)
		if err != nil {
			t.Fatal(err)
		}
		if last := evs[len(evs)-1]; last.Message != "later" {
			t.Errorf("the new event is not the instance's last: %s", js(evs))
		} else if st.Renumbered == 0 && last.Seq != seq {
			t.Errorf("the new event kept no number: %d, want %d", last.Seq, seq)
		}
	})

	// More rows than a statement copies at once, of every table.
	t.Run("ManyRows", func(t *testing.T) {
		t.Parallel()
		src := openAt(t, t.TempDir(), "", "h")
		const n = 450
		for _, q := range []string{
			`WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ` + fmt.Sprint(n) + `)
			INSERT INTO instances (id, name, agent, created_at, record, host)
			SELECT printf('01kzz%021d', i), CASE WHEN i % 3 = 0 THEN 'label-' || i END, 'auggie', '2026-01-01T00:00:00.000000000Z',
				json_object('id', printf('01kzz%021d', i), 'agent', 'auggie'), CASE WHEN i % 2 = 0 THEN 'other' ELSE '' END FROM k`,
			`INSERT INTO instance_tokens (instance_id, hash) SELECT id, randomblob(32) FROM instances`,
			`INSERT INTO questions (id, instance_id, question, choices, status, asked_at) SELECT 'q' || id, id, 'why?', '[]', 'open', '' FROM instances`,
			`WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 5)
			INSERT INTO events (instance_id, at, tool, status, message, percent) SELECT id, '', 'report_progress', 'running', 'm' || i, i * 10 FROM instances, k ORDER BY id, i`,
		} {
			if err := src.ExecForTest(q); err != nil {
				t.Fatal(err)
			}
		}
		dst := openAt(t, t.TempDir(), pg.NewDatabase(t), "h")
		st, err := instance.CopyStore(ctx, src, dst, instance.CopyOptions{Host: "h"})
		if err != nil {
			t.Fatal(err)
		}
		checkStats(t, "many rows", st, [4][2]int{{n, 0}, {n, 0}, {n, 0}, {5 * n, 0}})
		if st.HostSet != n/2+n%2 {
			t.Errorf("host set on %d records, want %d", st.HostSet, n/2+n%2)
		}
		if m, err := dst.CountForTest(`SELECT count(*) FROM instances WHERE host = 'h' AND record LIKE '%"host": "h"}'`); err != nil || m != st.HostSet {
			t.Errorf("%d records name host h in their column and record, want %d (%v)", m, st.HostSet, err)
		}
		again, err := instance.CopyStore(ctx, src, dst, instance.CopyOptions{Host: "h"})
		if err != nil {
			t.Fatal(err)
		}
		checkStats(t, "many rows again", again, [4][2]int{{0, n}, {0, n}, {0, n}, {0, 5 * n}})
		if len(again.Conflicts) != 0 {
			t.Errorf("conflicts: %s", js(again.Conflicts))
		}
	})

	t.Run("SameDatabase", func(t *testing.T) {
		t.Parallel()
		u := pg.NewDatabase(t)
		a := openAt(t, t.TempDir(), u, "h")
		fillStore(t, a, "")
		// The same database spelled otherwise: localhost, not 127.0.0.1.
		b := openAt(t, t.TempDir(), strings.Replace(u, "127.0.0.1", "localhost", 1), "h")
		_, err := instance.CopyStore(ctx, a, b, instance.CopyOptions{})
		if !errors.Is(err, instance.ErrInvalid) || !strings.Contains(err.Error(), "same database") {
			t.Errorf("PostgreSQL into itself: %v", err)
		}
		if strings.Contains(err.Error(), pg.Password()) {
			t.Errorf("the error shows the password: %v", err)
		}
		// Another database of the same server is another database.
		c := openAt(t, t.TempDir(), pg.NewDatabase(t), "h")
		if _, err := instance.CopyStore(ctx, a, c, instance.CopyOptions{}); err != nil {
			t.Errorf("into another database of the same server: %v", err)
		}

		dir := t.TempDir()
		s1 := openAt(t, dir, "", "h")
		s2 := openAt(t, t.TempDir(), filepath.Join(dir, ".", instance.DBFile), "h")
		if _, err := instance.CopyStore(ctx, s1, s2, instance.CopyOptions{}); !errors.Is(err, instance.ErrInvalid) {
			t.Errorf("SQLite into itself: %v", err)
		}
	})

	t.Run("DryRun", func(t *testing.T) {
		t.Parallel()
		src := openAt(t, t.TempDir(), "", "h")
		fillStore(t, src, "x")
		dst := openAt(t, t.TempDir(), pg.NewDatabase(t), "h")
		st, err := instance.CopyStore(ctx, src, dst, instance.CopyOptions{Host: "h", DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		checkStats(t, "dry run", st, [4][2]int{{3, 0}, {3, 0}, {2, 0}, {6, 0}})
		if !st.DryRun {
			t.Error("dry_run not set")
		}
		if n, err := dst.Count(ctx); err != nil || n != 0 {
			t.Errorf("a dry run left %d instances in the target (%v)", n, err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if st, err := instance.CopyStore(cctx, src, dst, instance.CopyOptions{}); err == nil || st.Copied() != 0 {
			t.Errorf("a cancelled copy: %s, %v", js(st), err)
		}
		if n, err := dst.Count(ctx); err != nil || n != 0 {
			t.Errorf("a cancelled copy left %d instances in the target (%v)", n, err)
		}
		// Nothing moved the identity either: the first event is 1.
		rec := create(t, dst, "auggie", nil)
		if seq, err := dst.RecordProgress(ctx, rec.ID, "report_progress", "running", "", nil); err != nil || seq != 1 {
			t.Errorf("first event after a dry run: seq %d, %v; want 1", seq, err)
		}
	})
}

// TestCopyRecordHost: the host is set in a record's JSON with every other
// byte kept (fields this agentctl does not know included).
func TestCopyRecordHost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := openAt(t, t.TempDir(), "", "h")
	rec := create(t, src, "auggie", nil)
	if err := src.ExecForTest(`UPDATE instances SET host = '', record = json_set(json_remove(record, '$.host'), '$.future_field', json('{"a":[1,2.50]}')) WHERE id = '` + rec.ID + `'`); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dst := openAt(t, dir, "", "h")
	st, err := instance.CopyStore(ctx, src, dst, instance.CopyOptions{Host: "far-host"})
	if err != nil || st.HostSet != 1 {
		t.Fatalf("%s, %v", js(st), err)
	}
	got, err := dst.Get(ctx, rec.ID)
	if err != nil || got.Host != "far-host" {
		t.Fatalf("%v, %v", got, err)
	}
	var one []string
	for r, err := range dst.Records(ctx, instance.ListOptions{Host: "far-host"}) {
		if err != nil {
			t.Fatal(err)
		}
		one = append(one, r.ID)
	}
	if !slices.Equal(one, []string{rec.ID}) {
		t.Errorf("list --host far-host: %v", one)
	}
	n, err := dst.CountForTest(`SELECT count(*) FROM instances WHERE record LIKE '%"future_field":{"a":[1,2.50]}%' AND record LIKE '%"host": "far-host"}'`)
	if err != nil || n != 1 {
		t.Errorf("the record's unknown field was not kept byte for byte, or the host not added at its end: %d, %v", n, err)
	}
}
