package main

// Benchmarks of the PostgreSQL store (issue 24), through the built binary
// as real processes, each against its baseline in the same run, the two
// sides alternated iteration by iteration ([pairedProcesses]). The
// PostgreSQL server is the tests' own (testkit.StartPostgres): one per
// benchmark function, each store a database of its own on it. Stores are
// seeded in the benchmark's setup, through SQL where a real command would
// take too long (test code only; agentctl itself never writes SQL of its
// own to a store).
//
//	go test -run '^$' -bench 'StoreCommands|AnswerLatency|StoreScalePostgres|Inbox' -benchtime 20x -count 3 ./cmd/agentctl

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/jackc/pgx/v5"
	"github.com/oklog/ulid/v2"
)

// storeBenchTimeFormat is the store's fixed-width time text (instance's
// timeFormat), for the rows the benchmarks seed.
const storeBenchTimeFormat = "2006-01-02T15:04:05.000000000Z07:00"

// storeBenchPollInterval is how often a waiting ask_user_question reads
// the store: mcpserver.Config.PollInterval's default (100ms, set in
// mcpserver.New), which `mcp serve` and `serve` leave as it is (no flag or
// setting changes it). On SQLite, which has no notifications, it is the
// whole of the wait: an answer given at a random moment is seen after half
// of it on average.
const storeBenchPollInterval = 100 * time.Millisecond

// storeBenchEnv is [benchEnv] (an isolated HOME and state directory) on
// the store url: "" is SQLite in the state directory. An AGENTCTL_STORE
// or AGENTCTL_HOST of the caller's environment is left out.
func storeBenchEnv(b *testing.B, url string) []string {
	b.Helper()
	env, _ := benchEnv(b)
	env = slices.DeleteFunc(env, func(kv string) bool {
		return strings.HasPrefix(kv, "AGENTCTL_STORE=") || strings.HasPrefix(kv, "AGENTCTL_HOST=")
	})
	if url != "" {
		env = append(env, "AGENTCTL_STORE="+url)
	}
	return env
}

// storeBenchURL is the AGENTCTL_STORE of env, "" for SQLite.
func storeBenchURL(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "AGENTCTL_STORE="); ok {
			return v
		}
	}
	return ""
}

// openBenchStore opens the store of env in this process, as the command
// would.
func openBenchStore(b *testing.B, env []string) *instance.Store {
	b.Helper()
	st, err := instance.Open(context.Background(), envArgs(env)[1], instance.WithStore(instance.StoreURL(storeBenchURL(env))))
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// benchCreate runs `agentctl instance create --agent agent` in env and
// returns the new instance's id.
func benchCreate(b *testing.B, bin string, env []string, agent string) string {
	b.Helper()
	cmd := exec.Command(bin, "instance", "create", "--agent", agent, "--workspace", b.TempDir(), "-o", "json")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("instance create: %v\n%s", err, benchStderr(err))
	}
	var rec struct{ ID string }
	if err := json.Unmarshal(out, &rec); err != nil || rec.ID == "" {
		b.Fatalf("instance create -o json: %v\n%s", err, out)
	}
	return rec.ID
}

func benchStderr(err error) []byte {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.Stderr
	}
	return nil
}

// BenchmarkStoreCommands times `instance create` and `instance answer` on
// a local PostgreSQL against the same on SQLite (target: within 2x),
// alternately: ms-sqlite/median, ms-postgres/median and the median of the
// per-iteration ratios postgres/sqlite. Each `instance answer` answers a
// question of its own, asked beforehand through the store in this process
// (in batches, the store closed again before the commands run). The floor
// of a command on PostgreSQL, a program that only connects and reads the
// schema version (testdata/minimalpg), is timed against `instance answer`
// on PostgreSQL in answer_vs_floor: what the command adds above its
// connection.
//
//	go test -run '^$' -bench StoreCommands -benchtime 20x -count 3 ./cmd/agentctl
func BenchmarkStoreCommands(b *testing.B) {
	bin := realBinary(b)
	pg := testkit.StartPostgres(b)
	lite, post := storeBenchEnv(b, ""), storeBenchEnv(b, pg.NewDatabase(b))
	create := func(env []string) func() time.Duration {
		return func() time.Duration {
			return timeProcess(b, bin, env, "instance", "create", "--agent", "auggie", "--workspace", b.TempDir())
		}
	}
	b.Run("create", func(b *testing.B) {
		pairedProcesses(b, "sqlite", create(lite), "postgres", create(post))
	})
	liteQ := &benchQuestions{env: lite, id: benchCreate(b, bin, lite, "auggie")}
	postQ := &benchQuestions{env: post, id: benchCreate(b, bin, post, "auggie")}
	answer := func(q *benchQuestions) func() time.Duration {
		return func() time.Duration {
			qid := q.next(b)
			return timeProcess(b, bin, q.env, "instance", "answer", q.id, qid, "yes")
		}
	}
	b.Run("answer", func(b *testing.B) {
		pairedProcesses(b, "sqlite", answer(liteQ), "postgres", answer(postQ))
	})
	floor := testkit.Build(b, "minimalpg", staticBuild...)
	b.Run("answer_vs_floor", func(b *testing.B) {
		pairedProcesses(b, "floor", func() time.Duration { return timeProcess(b, floor, post) }, "postgres", answer(postQ))
	})
}

// benchQuestions are open questions of instance id in the store of env,
// one for each `instance answer` to answer.
type benchQuestions struct {
	env  []string
	id   string
	open []string
}

// next returns an open question, asking a batch of them (timer stopped)
// when none is left.
func (q *benchQuestions) next(b *testing.B) string {
	if len(q.open) == 0 {
		b.StopTimer()
		st := openBenchStore(b, q.env)
		for i := range 50 {
			qid, err := st.AskQuestion(context.Background(), q.id, fmt.Sprintf("benchmark question %d?", i), nil)
			if err != nil {
				b.Fatal(err)
			}
			q.open = append(q.open, qid)
		}
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	qid := q.open[0]
	q.open = q.open[1:]
	return qid
}

// BenchmarkAnswerLatency measures how long an answer given in one process
// takes to reach the ask_user_question call waiting in another (target:
// under 50 ms median on PostgreSQL). An `agentctl mcp serve --instance ID`
// process of a Claude Code instance, driven over stdio with newline
// JSON-RPC by a client that offers no elicitation (so the question goes to
// the store), calls ask_user_question as the client names it
// (ask_user_question_agentctl, `tools list`'s transport name); once the
// question is in the store, after a random pause of up to one poll
// interval (so that the answer lands at a random moment of the endpoint's
// polling, as a person's would), `agentctl instance answer ID QID TEXT`
// runs as a process. Reported, for PostgreSQL (LISTEN/NOTIFY, and a poll
// every 100ms) and SQLite (the poll alone; expected about 50 ms) in turn:
// from that process's exit to the tool call's response (ms-STORE/median,
// /p90; negative when the response came before the process had exited)
// and from its start (ms-STORE-from-start/median, /p90).
//
//	go test -run '^$' -bench AnswerLatency -benchtime 20x -count 3 ./cmd/agentctl
func BenchmarkAnswerLatency(b *testing.B) {
	bin := realBinary(b)
	pg := testkit.StartPostgres(b)
	sides := []*latencySide{
		{name: "postgres", env: storeBenchEnv(b, pg.NewDatabase(b))},
		{name: "sqlite", env: storeBenchEnv(b, "")},
	}
	for _, s := range sides {
		s.start(b, bin)
		s.round(b, bin) // warm: the endpoint's first call, its LISTEN connection
	}
	for i := 0; b.Loop(); i++ {
		for j := range sides {
			s := sides[(i+j)%len(sides)] // which goes first swaps
			exit, start := s.round(b, bin)
			s.fromExit, s.fromStart = append(s.fromExit, exit), append(s.fromStart, start)
		}
	}
	for _, s := range sides {
		b.ReportMetric(benchQuantileMs(s.fromExit, 0.5), "ms-"+s.name+"/median")
		b.ReportMetric(benchQuantileMs(s.fromExit, 0.9), "ms-"+s.name+"/p90")
		b.ReportMetric(benchQuantileMs(s.fromStart, 0.5), "ms-"+s.name+"-from-start/median")
		b.ReportMetric(benchQuantileMs(s.fromStart, 0.9), "ms-"+s.name+"-from-start/p90")
	}
}

// benchQuantileMs is the q-quantile of d in milliseconds: the value at
// index q*len(d) of d sorted (for 0.5, the median as [reportMedian] takes
// it).
func benchQuantileMs(d []time.Duration, q float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[min(int(q*float64(len(s))), len(s)-1)]) / float64(time.Millisecond)
}

// latencySide is one store of [BenchmarkAnswerLatency]: a Claude Code
// instance on it, its `mcp serve` process, and the latencies measured.
type latencySide struct {
	name string
	env  []string

	id    string          // the instance
	tool  string          // ask_user_question as its client names it
	store *instance.Store // this process's, to see the question arrive
	serve *benchStdioPeer
	calls int

	fromExit, fromStart []time.Duration
}

func (s *latencySide) start(b *testing.B, bin string) {
	b.Helper()
	s.id = benchCreate(b, bin, s.env, "claude-code")
	s.tool = benchToolName(b, bin, s.env, s.id, "ask_user_question")
	s.store = openBenchStore(b, s.env)
	b.Cleanup(func() { s.store.Close() })
	s.serve = startBenchStdioPeer(b, bin, s.env, "mcp", "serve", "--instance", s.id)
}

// round asks one question through the endpoint and answers it with
// `agentctl instance answer`; it returns the time from that process's exit
// and from its start to the call's response.
func (s *latencySide) round(b *testing.B, bin string) (fromExit, fromStart time.Duration) {
	b.Helper()
	s.calls++
	callID := 100 + s.calls
	text := fmt.Sprintf("answer %d", s.calls)
	s.serve.send(b, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"question":"Which database, %d?"}}}`,
		callID, s.tool, s.calls))
	qid := s.waitQuestion(b)
	time.Sleep(mrand.N(storeBenchPollInterval))
	cmd := exec.Command(bin, "instance", "answer", s.id, qid, text)
	cmd.Env = s.env
	started := time.Now()
	out, err := cmd.CombinedOutput()
	exited := time.Now()
	if err != nil {
		b.Fatalf("%s: instance answer: %v\n%s", s.name, err, out)
	}
	line := s.serve.await(b, callID, 30*time.Second)
	var resp struct {
		Result struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Answered bool   `json:"answered"`
				Answer   string `json:"answer"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line.data, &resp); err != nil || resp.Result.IsError ||
		!resp.Result.StructuredContent.Answered || resp.Result.StructuredContent.Answer != text {
		b.Fatalf("%s: ask_user_question answered %s, want the answer %q", s.name, line.data, text)
	}
	return line.at.Sub(exited), line.at.Sub(started)
}

// waitQuestion waits for the instance's one open question, the one the
// call in flight asked, and returns its id.
func (s *latencySide) waitQuestion(b *testing.B) string {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		qs, err := s.store.Questions(context.Background(), s.id, false)
		if err != nil {
			b.Fatal(err)
		}
		if len(qs) == 1 {
			return qs[0].ID
		}
		if len(qs) > 1 || time.Now().After(deadline) {
			b.Fatalf("%s: %d open questions, want the one of the call in flight; serve's stderr:\n%s", s.name, len(qs), s.serve.stderr())
		}
		time.Sleep(time.Millisecond)
	}
}

// benchToolName is the name instance id's client calls built-in base by
// (`tools list`'s transport name).
func benchToolName(b *testing.B, bin string, env []string, id, base string) string {
	b.Helper()
	cmd := exec.Command(bin, "tools", "list", "--instance", id, "-o", "json")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("tools list: %v\n%s", err, benchStderr(err))
	}
	var lists []struct {
		Tools []struct{ Base, Kind, Transport string }
	}
	if err := json.Unmarshal(out, &lists); err != nil {
		b.Fatalf("tools list -o json: %v\n%s", err, out)
	}
	for _, l := range lists {
		for _, t := range l.Tools {
			if t.Base == base && t.Kind == "builtin" {
				return t.Transport
			}
		}
	}
	b.Fatalf("tools list --instance %s lists no built-in %s:\n%s", id, base, out)
	return ""
}

// benchStdioPeer is a stdio MCP server process driven with newline JSON-RPC:
// initialized (a client that offers no capabilities) when started, its
// stdout read by a goroutine that stamps each line as it arrives.
type benchStdioPeer struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan benchLine

	mu  sync.Mutex
	err bytes.Buffer
}

type benchLine struct {
	at   time.Time
	data []byte
}

func (p *benchStdioPeer) Write(data []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err.Write(data)
}

func (p *benchStdioPeer) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err.String()
}

func startBenchStdioPeer(b *testing.B, bin string, env []string, args ...string) *benchStdioPeer {
	b.Helper()
	p := &benchStdioPeer{lines: make(chan benchLine, 64)}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env, p.cmd.Stderr = env, p
	p.in, _ = p.cmd.StdinPipe()
	out, _ := p.cmd.StdoutPipe()
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		for sc.Scan() {
			p.lines <- benchLine{at: time.Now(), data: slices.Clone(sc.Bytes())}
		}
	}()
	b.Cleanup(func() {
		p.in.Close()
		done := make(chan struct{})
		go func() {
			for range p.lines {
			}
			p.cmd.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			p.cmd.Process.Kill()
			<-done
		}
	})
	p.send(b, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	p.await(b, 1, 30*time.Second)
	p.send(b, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return p
}

func (p *benchStdioPeer) send(b *testing.B, line string) {
	b.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		b.Fatalf("write to %s: %v\n%s", p.cmd.Path, err, p.stderr())
	}
}

// await returns the response to request id, skipping notifications and
// other messages.
func (p *benchStdioPeer) await(b *testing.B, id int, timeout time.Duration) benchLine {
	b.Helper()
	return p.awaitLine(b, fmt.Sprintf("the response to request %d", id), timeout, func(msg benchMsg) bool {
		if msg.ID == nil || *msg.ID != id || msg.Method != "" {
			return false
		}
		if msg.Error != nil {
			b.Fatalf("request %d: error %s", id, msg.Error.Message)
		}
		return true
	})
}

// awaitMethod returns the next message with method, skipping others.
func (p *benchStdioPeer) awaitMethod(b *testing.B, method string, timeout time.Duration) benchLine {
	b.Helper()
	return p.awaitLine(b, method, timeout, func(msg benchMsg) bool { return msg.Method == method })
}

// benchMsg is what the waits read of a line.
type benchMsg struct {
	ID     *int   `json:"id"`
	Method string `json:"method"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// awaitLine returns the next line that is JSON and that want takes,
// skipping the others; what names it in a failure.
func (p *benchStdioPeer) awaitLine(b *testing.B, what string, timeout time.Duration, want func(benchMsg) bool) benchLine {
	b.Helper()
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				b.Fatalf("the server's stdout ended before %s:\n%s", what, p.stderr())
			}
			var msg benchMsg
			if json.Unmarshal(l.data, &msg) == nil && want(msg) {
				return l
			}
		case <-t.C:
			b.Fatalf("no %s within %v:\n%s", what, timeout, p.stderr())
		}
	}
}

// BenchmarkStoreScalePostgres times `instance list --limit 50 -o json` on
// a PostgreSQL store of 100,000 instances against the same on one of 100
// (target: within 1.5x), alternately: ms-100/median, ms-100k/median and
// the median of the per-iteration ratios 100k/100. The stores are seeded
// with copies of a real record ([seedPostgresInstances]).
//
//	go test -run '^$' -bench StoreScalePostgres -benchtime 20x -count 3 ./cmd/agentctl
func BenchmarkStoreScalePostgres(b *testing.B) {
	bin := realBinary(b)
	pg := testkit.StartPostgres(b)
	small, large := storeBenchEnv(b, pg.NewDatabase(b)), storeBenchEnv(b, pg.NewDatabase(b))
	seedPostgresInstances(b, bin, small, 100)
	seedPostgresInstances(b, bin, large, 100_000)
	list := []string{"instance", "list", "--limit", "50", "-o", "json"}
	for _, env := range [][]string{small, large} {
		benchListsN(b, bin, env, 50, list...)
	}
	b.Run("list_limit50_100k_vs_100", func(b *testing.B) {
		pairedProcesses(b, "100", func() time.Duration { return timeProcess(b, bin, small, list...) },
			"100k", func() time.Duration { return timeProcess(b, bin, large, list...) })
	})
}

// benchListsN checks that `agentctl args...` in env prints a JSON array of n
// distinct ids, so that the figures time the right command.
func benchListsN(b *testing.B, bin string, env []string, n int, args ...string) {
	b.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%v: %v\n%s", args, err, benchStderr(err))
	}
	var got []struct{ ID string }
	if err := json.Unmarshal(out, &got); err != nil {
		b.Fatalf("%v: %v\n%s", args, err, out)
	}
	ids := map[string]bool{}
	for _, g := range got {
		ids[g.ID] = true
	}
	if len(got) != n || len(ids) != n {
		b.Fatalf("%v printed %d entries (%d distinct ids), want %d", args, len(got), len(ids), n)
	}
}

// seedPostgresInstances fills the PostgreSQL store of env with n
// instances quickly: one real `instance create`, then n-1 copies of its
// row, written with COPY, each with an id of its own (ULIDs one
// millisecond apart, older than the real one, as many creates would have
// made them) put everywhere the record names its id (id, dir, client
// configuration path) and its creation time, so that each copy decodes
// as an instance of its own. Then VACUUM ANALYZE, as autovacuum would soon
// after such a load. It returns every instance's id.
func seedPostgresInstances(b *testing.B, bin string, env []string, n int) []string {
	b.Helper()
	realID := benchCreate(b, bin, env, "auggie")
	began := time.Now()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, storeBenchURL(env))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	var agent, record, status, host string
	if err := conn.QueryRow(ctx, `SELECT agent, record, status, host FROM instances WHERE id = $1`, realID).
		Scan(&agent, &record, &status, &host); err != nil {
		b.Fatal(err)
	}
	var rec struct {
		CreatedAt string `json:"created_at"`
	}
	if err := json.Unmarshal([]byte(record), &rec); err != nil || rec.CreatedAt == "" {
		b.Fatalf("the record of %s: %v\n%s", realID, err, record)
	}
	if strings.Count(record, `"`+rec.CreatedAt+`"`) != 1 {
		b.Fatalf("the record of %s names its creation time %q other than once:\n%s", realID, rec.CreatedAt, record)
	}
	ids := make([]string, 0, n)
	start := time.Now().Add(-time.Duration(n) * time.Minute)
	seeded, err := conn.CopyFrom(ctx, pgx.Identifier{"instances"},
		[]string{"id", "name", "agent", "created_at", "record", "status", "host"},
		pgx.CopyFromFunc(func() ([]any, error) {
			i := len(ids) + 1
			if i >= n {
				return nil, nil
			}
			t := start.Add(time.Duration(i) * time.Millisecond).UTC()
			id := strings.ToLower(ulid.MustNew(ulid.Timestamp(t), rand.Reader).String())
			ids = append(ids, id)
			raw := strings.Replace(strings.ReplaceAll(record, realID, id), `"`+rec.CreatedAt+`"`, `"`+t.Format(time.RFC3339Nano)+`"`, 1)
			return []any{id, nil, agent, t.Format(storeBenchTimeFormat), raw, status, host}, nil
		}))
	if err != nil {
		b.Fatal(err)
	}
	if int(seeded) != n-1 {
		b.Fatalf("seeded %d instances, want %d", seeded, n-1)
	}
	copied := time.Now()
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE instances`); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d instances in %v (COPY %v, VACUUM ANALYZE %v)", n, time.Since(began).Round(time.Millisecond),
		copied.Sub(began).Round(time.Millisecond), time.Since(copied).Round(time.Millisecond))
	return append(ids, realID)
}

// BenchmarkInbox times `agentctl instance questions` (the fleet's inbox:
// every open question of every instance) on a PostgreSQL store of 10,000
// instances with 100 open questions among 10,100 (the other 10,000
// answered, so that a read of every question would show), whole process
// (target: under 50 ms), alternately with two floors: `agentctl version`
// (the process alone) and `agentctl instance list --limit 1` on the same
// store (the process, connecting to the store and one small query).
//
//	go test -run '^$' -bench Inbox -benchtime 20x -count 3 ./cmd/agentctl
func BenchmarkInbox(b *testing.B) {
	bin := realBinary(b)
	pg := testkit.StartPostgres(b)
	env := storeBenchEnv(b, pg.NewDatabase(b))
	ids := seedPostgresInstances(b, bin, env, 10_000)
	seedPostgresQuestions(b, storeBenchURL(env), ids, 100, 10_000)
	benchListsN(b, bin, env, 100, "instance", "questions", "-o", "json")
	// Each listed with its instance's agent and host, which the questions
	// carry (set by the store's trigger as the seeding's COPY inserts them).
	cmd := exec.Command(bin, "instance", "questions", "-o", "json")
	cmd.Env = env
	out, err := cmd.Output()
	var listed []struct{ Agent, Host string }
	if err != nil || json.Unmarshal(out, &listed) != nil || len(listed) == 0 || listed[0].Agent == "" || listed[0].Host == "" {
		b.Fatalf("instance questions -o json does not name the instances' agent and host: %v\n%.300s", err, out)
	}
	inbox := func() time.Duration { return timeProcess(b, bin, env, "instance", "questions") }
	b.Run("inbox_vs_version", func(b *testing.B) {
		pairedProcesses(b, "version", func() time.Duration { return timeProcess(b, bin, env, "version") }, "inbox", inbox)
	})
	b.Run("inbox_vs_list_limit1", func(b *testing.B) {
		pairedProcesses(b, "list_limit1", func() time.Duration { return timeProcess(b, bin, env, "instance", "list", "--limit", "1") },
			"inbox", inbox)
	})
}

// seedPostgresQuestions writes open+answered questions of the instances
// ids, in time order, open ones at random places among the answered, with
// COPY; then VACUUM ANALYZE.
func seedPostgresQuestions(b *testing.B, url string, ids []string, open, answered int) {
	b.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	n := open + answered
	isOpen := make([]bool, n)
	for _, i := range mrand.Perm(n)[:open] {
		isOpen[i] = true
	}
	start := time.Now().Add(-time.Duration(n) * time.Second)
	i := 0
	seeded, err := conn.CopyFrom(ctx, pgx.Identifier{"questions"},
		[]string{"id", "instance_id", "question", "choices", "status", "asked_at", "answer", "answered_at"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i == n {
				return nil, nil
			}
			t := start.Add(time.Duration(i) * time.Second).UTC()
			id := strings.ToLower(ulid.MustNew(ulid.Timestamp(t), rand.Reader).String())
			row := []any{id, ids[mrand.N(len(ids))], fmt.Sprintf("Which database should migration %d use?", i), `["staging","production"]`,
				instance.QuestionOpen, t.Format(storeBenchTimeFormat), nil, nil}
			if !isOpen[i] {
				row[4], row[6], row[7] = instance.QuestionAnswered, "staging", t.Add(30*time.Second).Format(storeBenchTimeFormat)
			}
			i++
			return row, nil
		}))
	if err != nil {
		b.Fatal(err)
	}
	if int(seeded) != n {
		b.Fatalf("seeded %d questions, want %d", seeded, n)
	}
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE questions`); err != nil {
		b.Fatal(err)
	}
}
