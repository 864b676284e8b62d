package instance_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/instance"
)

func openStore(t *testing.T) *instance.Store {
	t.Helper()
	st, err := instance.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func catalog(t *testing.T) *agents.Catalog {
	t.Helper()
	c, err := agents.Load(agents.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func create(t *testing.T, st *instance.Store, agent string, mod func(*instance.CreateOptions)) *instance.Record {
	t.Helper()
	def, err := catalog(t).Lookup(agent)
	if err != nil {
		t.Fatal(err)
	}
	o := instance.CreateOptions{Definition: def, Workspace: t.TempDir(), Executable: "/opt/agentctl/bin/agentctl"}
	if mod != nil {
		mod(&o)
	}
	rec, err := st.CreateInstance(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// serverEntry finds the entry under key S in any of the native formats.
func serverEntry(t *testing.T, format, path, server string) (command string, args []string, raw map[string]any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	switch format {
	case "codex":
		if _, err := toml.Decode(string(data), &doc); err != nil {
			t.Fatal(err)
		}
		doc = map[string]any{"mcpServers": doc["mcp_servers"]}
	case "goose", "continue":
		// YAML written with JSON-quoted scalars; check textually.
		s := string(data)
		if !strings.Contains(s, `"`+server+`"`) {
			t.Fatalf("%s: no %q key:\n%s", format, server, s)
		}
		return "", nil, nil
	default:
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	key := "mcpServers"
	switch format {
	case "vscode":
		key = "servers"
	case "opencode":
		key = "mcp"
	}
	servers, _ := doc[key].(map[string]any)
	entry, ok := servers[server].(map[string]any)
	if !ok {
		t.Fatalf("%s: no entry %q under %q in %s", format, server, key, data)
	}
	if tr, ok := entry["transport"].(map[string]any); ok { // grok
		if entry["name"] != server || tr["type"] != "stdio" {
			t.Fatalf("grok entry %v", entry)
		}
		entry = tr
	}
	switch c := entry["command"].(type) {
	case string:
		command = c
		for _, a := range entry["args"].([]any) {
			args = append(args, a.(string))
		}
	case []any: // opencode: one command array
		command = c[0].(string)
		for _, a := range c[1:] {
			args = append(args, a.(string))
		}
	}
	return command, args, entry
}

// TestCreateSnapshotsEveryCatalogAgent is the producer test: for every
// catalog agent, create writes the capability into the record and the native
// configuration under key S.
func TestCreateSnapshotsEveryCatalogAgent(t *testing.T) {
	st := openStore(t)
	for _, def := range catalog(t).Definitions() {
		t.Run(def.ID, func(t *testing.T) {
			rec := create(t, st, def.ID, func(o *instance.CreateOptions) { o.ServerName = "tools" })
			if rec.Capabilities != def.Capabilities {
				t.Fatalf("record capabilities %+v, definition %+v", rec.Capabilities, def.Capabilities)
			}
			got, err := st.Get(context.Background(), rec.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Capabilities != def.Capabilities || got.ServerName != "tools" || got.ConfigFormat != def.MCP.ConfigFormat {
				t.Fatalf("stored record %+v", got)
			}
			if !strings.HasPrefix(rec.MCPConfigPath, rec.Dir+string(filepath.Separator)) {
				t.Fatalf("config %s outside the instance directory %s", rec.MCPConfigPath, rec.Dir)
			}
			cmd, args, entry := serverEntry(t, rec.ConfigFormat, rec.MCPConfigPath, "tools")
			if entry == nil {
				return
			}
			want := []string{"mcp", "serve", "--instance", rec.ID, "--state-dir", st.Dir()}
			if cmd != "/opt/agentctl/bin/agentctl" || strings.Join(args, " ") != strings.Join(want, " ") {
				t.Fatalf("entry starts %q %q, want %q", cmd, args, want)
			}
			if def.MCP.Trust && entry["trust"] != true {
				t.Fatalf("%s must be trusted by default: %v", def.ID, entry)
			}
		})
	}
}

func TestNoTrust(t *testing.T) {
	st := openStore(t)
	rec := create(t, st, "gemini", func(o *instance.CreateOptions) { o.NoTrust = true })
	_, _, entry := serverEntry(t, "gemini", rec.MCPConfigPath, "agentctl")
	if _, ok := entry["trust"]; ok {
		t.Fatalf("trust written despite NoTrust: %v", entry)
	}
}

func TestRecordJSONContract(t *testing.T) {
	st := openStore(t)
	rec := create(t, st, "auggie", func(o *instance.CreateOptions) { o.Name = "fix-login" })
	b, _ := json.Marshal(rec)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "name", "agent", "created_at", "server_name", "capabilities", "workspace", "tool_prefix_mode", "mounts", "transport", "mcp_config_path"} {
		if _, ok := m[k]; !ok {
			t.Errorf("record JSON lacks %q: %s", k, b)
		}
	}
	tn := m["capabilities"].(map[string]any)["tool_names"].(map[string]any)
	if tn["namespacing"] != "suffix" || tn["template"] != "{tool}_{server}" || tn["max_length"] != 64.0 {
		t.Errorf("capabilities %v", tn)
	}
	// No question timeout given records none (the endpoint's default applies;
	// provision.Create records that default: TestCreateDefaults there).
	if m["question_timeout"] != "0s" || m["tool_prefix_mode"] != "mount-name" || m["transport"].(map[string]any)["kind"] != "stdio" {
		t.Errorf("defaults: %s", b)
	}
	if ms, ok := m["mounts"].([]any); !ok || len(ms) != 0 {
		t.Errorf("mounts must be [] not null: %s", b)
	}
}

func TestGetByIDPrefixAndLabel(t *testing.T) {
	st := openStore(t)
	a := create(t, st, "auggie", func(o *instance.CreateOptions) { o.Name = "alpha" })
	b := create(t, st, "codex", nil)
	ctx := context.Background()
	for ref, want := range map[string]string{a.ID: a.ID, "alpha": a.ID, b.ID: b.ID, b.ID[:len(b.ID)-2]: b.ID, strings.ToUpper(b.ID): b.ID} {
		got, err := st.Get(ctx, ref)
		if err != nil || got.ID != want {
			t.Errorf("Get(%q) = %v, %v; want %s", ref, got, err, want)
		}
	}
	if _, err := st.Get(ctx, "0"); !errors.Is(err, instance.ErrConflict) {
		t.Errorf("a prefix of both ids must be ambiguous, got %v", err)
	}
	if _, err := st.Get(ctx, "nosuch"); !errors.Is(err, instance.ErrNotFound) {
		t.Errorf("got %v", err)
	}
	if a.ID >= b.ID {
		t.Errorf("ids must sort by creation time: %s then %s", a.ID, b.ID)
	}
}

// TestAmbiguousPrefixSaysItListsSome: a prefix that more instances match
// than the error lists says there are more.
func TestAmbiguousPrefixSaysItListsSome(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	var ids []string
	for range 8 {
		ids = append(ids, create(t, st, "auggie", nil).ID)
	}
	for _, tc := range []struct {
		n    int
		more bool
	}{{7, true}, {6, false}, {2, false}} {
		// "0" matches every id (ULIDs of this century); drop the rest.
		for len(ids) > tc.n {
			if _, err := st.Delete(ctx, ids[len(ids)-1]); err != nil {
				t.Fatal(err)
			}
			ids = ids[:len(ids)-1]
		}
		_, err := st.Get(ctx, "0")
		var amb *instance.AmbiguousError
		if !errors.As(err, &amb) || amb.More != tc.more || len(amb.Matches) != min(tc.n, 6) ||
			strings.Contains(err.Error(), "and more") != tc.more || !strings.Contains(err.Error(), ids[0]) {
			t.Errorf("%d match: %v (%+v), want %d listed, more: %v", tc.n, err, amb, min(tc.n, 6), tc.more)
		}
	}
}

func TestDeleteRemovesRecordAndDirectory(t *testing.T) {
	st := openStore(t)
	rec := create(t, st, "claude-code", nil)
	ctx := context.Background()
	if _, err := st.AddQuestion(ctx, rec.ID, "q", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Delete(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(rec.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("directory left: %v", err)
	}
	if _, err := st.Get(ctx, rec.ID); !errors.Is(err, instance.ErrNotFound) {
		t.Fatalf("record left: %v", err)
	}
	if qs, _ := st.Questions(ctx, rec.ID, true); len(qs) != 0 {
		t.Fatalf("questions left: %v", qs)
	}
}

func TestCreateFailuresLeaveNothing(t *testing.T) {
	ctx := context.Background()
	check := func(t *testing.T, st *instance.Store, wantRecords int) {
		t.Helper()
		recs, broken, err := st.List(ctx)
		if err != nil || len(recs) != wantRecords || len(broken) != 0 {
			t.Fatalf("records %d, broken %v (%v), want %d", len(recs), broken, err, wantRecords)
		}
		entries, _ := os.ReadDir(filepath.Join(st.Dir(), "instances"))
		if len(entries) != wantRecords {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("instance directories %v, want %d", names, wantRecords)
		}
	}
	t.Run("fault after the files and the row", func(t *testing.T) {
		st := openStore(t)
		st.SetBeforeCommit(func() error { return errors.New("injected") })
		def, _ := catalog(t).Lookup("auggie")
		_, err := st.CreateInstance(ctx, instance.CreateOptions{Definition: def, Workspace: t.TempDir(), Executable: "/x/agentctl"})
		if err == nil || err.Error() != "injected" {
			t.Fatalf("got %v", err)
		}
		check(t, st, 0)
	})
	t.Run("label taken", func(t *testing.T) {
		st := openStore(t)
		create(t, st, "auggie", func(o *instance.CreateOptions) { o.Name = "x" })
		def, _ := catalog(t).Lookup("codex")
		_, err := st.CreateInstance(ctx, instance.CreateOptions{Definition: def, Name: "x", Workspace: t.TempDir(), Executable: "/x/agentctl"})
		if !errors.Is(err, instance.ErrInvalid) {
			t.Fatalf("got %v", err)
		}
		check(t, st, 1)
	})
	t.Run("bad input", func(t *testing.T) {
		st := openStore(t)
		def, _ := catalog(t).Lookup("auggie")
		for _, o := range []instance.CreateOptions{
			{Definition: def, Workspace: "/nonexistent/dir", Executable: "/x/agentctl"},
			{Definition: def, Workspace: t.TempDir(), Executable: "relative/agentctl"},
			{Definition: def, Workspace: t.TempDir(), Executable: "/x/agentctl", ServerName: "my server"},
			{Definition: def, Workspace: t.TempDir(), Executable: "/x/agentctl", Name: "bad label!"},
			{Definition: def, Workspace: t.TempDir(), Executable: "/x/agentctl", QuestionTimeout: -time.Second},
		} {
			if _, err := st.CreateInstance(ctx, o); !errors.Is(err, instance.ErrInvalid) {
				t.Errorf("%+v: got %v", o, err)
			}
		}
		check(t, st, 0)
	})
}

func TestValidateServerName(t *testing.T) {
	for _, ok := range []string{"agentctl", "a", "my-tools", "tools_2", strings.Repeat("a", 32)} {
		if err := instance.ValidateServerName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"":                      "empty",
		"my server":             `contains " "`,
		"a.b":                   `contains "."`,
		"Caps":                  `starts with "C"`,
		"cAps":                  `contains "A"`,
		"1abc":                  `starts with "1"`,
		"x__y":                  `"__"`,
		"x_":                    "ends in",
		strings.Repeat("a", 33): "at most 32",
	} {
		err := instance.ValidateServerName(bad)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want it to mention %s", bad, err, want)
		}
	}
}

func TestQuestionsAndEvents(t *testing.T) {
	st := openStore(t)
	rec := create(t, st, "auggie", nil)
	ctx := context.Background()
	if _, err := st.Answer(ctx, rec.ID, "", "x", false); !errors.Is(err, instance.ErrNotFound) {
		t.Fatalf("answer with nothing open: %v", err)
	}
	q1, _ := st.AddQuestion(ctx, rec.ID, "one?", []string{"a", "b"})
	if _, status, _ := st.PollAnswer(ctx, rec.ID, q1.ID); status == instance.QuestionAnswered {
		t.Fatal("answered before an answer")
	}
	got, err := st.Answer(ctx, rec.ID, "", "a", false)
	if err != nil || got.ID != q1.ID {
		t.Fatalf("%v %v", got, err)
	}
	if ans, status, _ := st.PollAnswer(ctx, rec.ID, q1.ID); status != instance.QuestionAnswered || ans != "a" {
		t.Fatalf("poll %q %v", ans, status)
	}
	if _, err := st.Answer(ctx, rec.ID, q1.ID, "b", false); !errors.Is(err, instance.ErrInvalid) {
		t.Fatalf("answering twice: %v", err)
	}
	q2, _ := st.AddQuestion(ctx, rec.ID, "two?", nil)
	q3, _ := st.AddQuestion(ctx, rec.ID, "three?", nil)
	if _, err := st.Answer(ctx, rec.ID, "", "x", false); !errors.Is(err, instance.ErrConflict) {
		t.Fatalf("two open questions need an id: %v", err)
	}
	if closed, _ := st.ExpireQuestion(ctx, rec.ID, q2.ID); !closed {
		t.Fatal("expire")
	}
	if q, _ := st.Question(ctx, rec.ID, q2.ID); q.Status != instance.QuestionExpired {
		t.Fatalf("expired question is %q", q.Status)
	}
	if _, err := st.Answer(ctx, rec.ID, q2.ID, "late", false); !errors.Is(err, instance.ErrInvalid) {
		t.Fatalf("answering an expired question: %v", err)
	}
	open, _ := st.Questions(ctx, rec.ID, false)
	if len(open) != 1 || open[0].ID != q3.ID {
		t.Fatalf("open %v", open)
	}
	all, _ := st.Questions(ctx, rec.ID, true)
	if len(all) != 3 || all[0].Status != "answered" || all[1].Status != "expired" {
		t.Fatalf("all %+v", all)
	}
	if closed, _ := st.CancelQuestion(ctx, rec.ID, q3.ID); !closed {
		t.Fatal("cancel")
	}
	if closed, _ := st.CancelQuestion(ctx, rec.ID, q3.ID); closed {
		t.Fatal("cancelled twice")
	}
	if q, _ := st.Question(ctx, rec.ID, q3.ID); q.Status != "cancelled" {
		t.Fatalf("cancelled question is %q", q.Status)
	}
	if open, _ := st.Questions(ctx, rec.ID, false); len(open) != 0 {
		t.Fatalf("open after cancel %v", open)
	}

	pct := 50.0
	seq1, _ := st.RecordProgress(ctx, rec.ID, "report_progress_agentctl", "running", "half", &pct)
	seq2, _ := st.RecordProgress(ctx, rec.ID, "report_progress_agentctl", "done", "all", nil)
	evs, _ := st.Events(ctx, rec.ID, 0)
	if len(evs) != 2 || evs[0].Seq != seq1 || *evs[0].Percent != 50 || evs[1].Percent != nil || evs[1].Status != "done" {
		t.Fatalf("events %+v", evs)
	}
	if evs, _ := st.Events(ctx, rec.ID, seq1); len(evs) != 1 || evs[0].Seq != seq2 {
		t.Fatalf("after: %+v", evs)
	}
}

// TestConcurrentOpenAndCreate: many stores opened at once on a fresh state
// directory (the migration race) all create their instance.
func TestConcurrentOpenAndCreate(t *testing.T) {
	dir := t.TempDir()
	def, _ := catalog(t).Lookup("auggie")
	ws := t.TempDir()
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := instance.Open(context.Background(), dir)
			if err != nil {
				errs <- err
				return
			}
			defer st.Close()
			_, err = st.CreateInstance(context.Background(), instance.CreateOptions{Definition: def, Workspace: ws, Executable: "/x/agentctl"})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	st, _ := instance.Open(context.Background(), dir)
	defer st.Close()
	if recs, _, _ := st.List(context.Background()); len(recs) != n {
		t.Fatalf("%d records, want %d", len(recs), n)
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	dir := t.TempDir()
	st, err := instance.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.ExecForTest("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := instance.Open(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "upgrade agentctl") {
		t.Fatalf("got %v", err)
	}
}

// TestWALStaysShort: stores left to the process's exit (CLI commands) never
// checkpoint on close, so the automatic checkpoint alone bounds the WAL,
// which every new process reads whole to rebuild its index: after hundreds
// of commits from many such stores it stays near walCheckpointPages (100)
// pages, not SQLite's default of 1,000.
func TestWALStaysShort(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	first, err := instance.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	rec := create(t, first, "opencode", nil)
	first.Close()
	for range 30 { // 30 "processes", 20 commits each
		st, err := instance.Open(ctx, dir, instance.ClosedByExit())
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			if _, err := st.AddEvent(ctx, instance.Event{InstanceID: rec.ID, At: time.Now(), Tool: "report_progress", Status: "working", Message: strings.Repeat("progress ", 40) + strconv.Itoa(i)}); err != nil {
				t.Fatal(err)
			}
		}
		st.Close()
	}
	fi, err := os.Stat(filepath.Join(dir, instance.DBFile+"-wal"))
	if err != nil {
		t.Fatal(err)
	}
	const frame = 4096 + 24
	if pages := fi.Size() / frame; pages > 150 {
		t.Fatalf("the WAL grew to %d pages over 600 commits; the automatic checkpoint should keep it near 100", pages)
	}
}

// TestAnswerTakesAChoice: a question asked with choices takes one of them
// (any case, stored as the choice is written); another answer is refused
// naming the choices, and other sends it as free text.
func TestAnswerTakesAChoice(t *testing.T) {
	st := openStore(t)
	rec := create(t, st, "auggie", nil)
	ctx := context.Background()
	q, _ := st.AddQuestion(ctx, rec.ID, "Which colour?", []string{"Red", "blue"})
	_, err := st.Answer(ctx, rec.ID, q.ID, "green", false)
	if !errors.Is(err, instance.ErrInvalid) || !strings.Contains(err.Error(), `"Red", "blue"`) || !strings.Contains(err.Error(), "--other") {
		t.Fatalf("an answer outside the choices: %v, want a refusal naming them and --other", err)
	}
	if got, err := st.Answer(ctx, rec.ID, q.ID, " red ", false); err != nil || got.Answer != "Red" {
		t.Fatalf("a choice in another case: %+v %v, want Red", got, err)
	}
	q2, _ := st.AddQuestion(ctx, rec.ID, "Which colour now?", []string{"red", "blue"})
	if got, err := st.Answer(ctx, rec.ID, q2.ID, "green", true); err != nil || got.Answer != "green" {
		t.Fatalf("free text with other: %+v %v", got, err)
	}
	// A choice typed in another Unicode form (a decomposed é, as macOS
	// keyboards give) is that choice.
	q4, _ := st.AddQuestion(ctx, rec.ID, "Where?", []string{"caf\u00e9", "bar"})
	if got, err := st.Answer(ctx, rec.ID, q4.ID, "Cafe\u0301", false); err != nil || got.Answer != "caf\u00e9" {
		t.Fatalf("a choice in another Unicode form: %+v %v, want café", got, err)
	}
	// A choice with a line break, as a browser sends it back (its HTML
	// parser makes LF of CRLF, its form CRLF of LF), is that choice.
	q6, _ := st.AddQuestion(ctx, rec.ID, "Which?", []string{"first\r\nsecond", "plain"})
	if got, err := st.Answer(ctx, rec.ID, q6.ID, "first\nsecond", false); err != nil || got.Answer != "first\r\nsecond" {
		t.Fatalf("a choice with CRLF sent back with LF: %+v %v", got, err)
	}
	q7, _ := st.AddQuestion(ctx, rec.ID, "Which now?", []string{"first\nsecond", "plain"})
	if got, err := st.Answer(ctx, rec.ID, q7.ID, "first\r\nsecond", false); err != nil || got.Answer != "first\nsecond" {
		t.Fatalf("a choice with LF sent back with CRLF: %+v %v", got, err)
	}
	// An answer that matches several choices but for case says so,
	// rather than that it matches none.
	q5, _ := st.AddQuestion(ctx, rec.ID, "Sure?", []string{"Yes", "yes", "No"})
	if _, err := st.Answer(ctx, rec.ID, q5.ID, "YES", false); err == nil || !strings.Contains(err.Error(), `matches 2 of its choices but for letter case ("Yes", "yes")`) {
		t.Fatalf("an answer matching two choices: %v", err)
	}
	q3, _ := st.AddQuestion(ctx, rec.ID, "Anything?", nil)
	if got, err := st.Answer(ctx, rec.ID, q3.ID, "whatever", false); err != nil || got.Answer != "whatever" {
		t.Fatalf("a question without choices takes any answer: %+v %v", got, err)
	}
}

// TestRecordRedactedTransportURL: a password in an HTTP instance's --url
// is hidden from instance show and list -o json, as a mount URL's is.
func TestRecordRedactedTransportURL(t *testing.T) {
	st := openStore(t)
	rec := create(t, st, "claude-code", func(o *instance.CreateOptions) {
		o.Transport = instance.Transport{Kind: instance.TransportHTTP, URL: "http://u:PW-secret@127.0.0.1:7821/instances/{id}/mcp"}
	})
	r := rec.Redacted()
	if strings.Contains(r.Transport.URL, "PW-secret") || !strings.HasPrefix(r.Transport.URL, "http://redacted@127.0.0.1:7821/instances/"+rec.ID) {
		t.Fatalf("redacted URL %q", r.Transport.URL)
	}
	if !strings.Contains(rec.Transport.URL, "PW-secret") {
		t.Fatal("Redacted changed the record")
	}
}
