package main

// FuzzLaneVersusSDK: the fast lane and the SDK path must answer a client's
// message alike. It drives the built binary, like the conformance corpus,
// but keeps one `agentctl mcp serve` of each kind running for the whole
// fuzzing process (starting two endpoints and their servers per input
// would cost some 100 ms): each input is one client line, sent to both,
// and what each answers is compared by value with the corpus' own
// normalisation (sameMessages, normaliseNotes).
//
//	go test ./cmd/agentctl -run FuzzLaneVersusSDK                     # the seeds
//	go test ./cmd/agentctl -run '^$' -fuzz FuzzLaneVersusSDK -parallel 1 -fuzztime 10m
//
// The seeds are every client line of testdata/conformance (the session's
// opening lines left out), plus testdata/fuzz/FuzzLaneVersusSDK.
//
// What one input may do is bounded so that the comparison is not timing:
//
//   - a line that names a tool whose behaviour is time or state (slow,
//     crash, change_tools: anywhere in it, once decoded) is not sent: the
//     corpus pins those with awaited progress;
//   - a line holding a newline is not one message; one over 64 KiB is
//     the guard's size limit's business, pinned elsewhere;
//   - a line that names notifications/cancelled is sent while a slow call
//     of the harness's (id "c1", as in the corpus' cancel seeds, with a
//     progress token) is running on both paths, so that the lane has a
//     call to match it against; the harness then cancels that call itself.
//     Neither path may answer it.
//
// Besides the corpus' normalisation, the names in go-sdk's "unexpected
// additional properties [...]" are compared sorted: the test server lists
// them in Go's map order, differently on each call. The known differences,
// each with its reason, are [laneKnownDifferences].

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"
)

// laneKnownDifferences are the inputs on which the two paths may answer
// differently, each with why that is accepted: a test of the input, and
// the reason. Keep it short: every entry is a promise of the README broken.
var laneKnownDifferences = []struct {
	applies func(line []byte) bool
	reason  string
}{
	// None today. The last one (a cancellation with an id of its own, or
	// its requestId key written with escapes) went when the guard learned
	// to decode keys and to refuse the first as an invalid request.
}

// fuzzMaxLine bounds a fuzzed line: the size limit has its own tests.
const fuzzMaxLine = 64 << 10

// fuzzWait bounds each wait for an answer: only a real hang runs it out
// (20 s was run out on a loaded 2-core runner).
const fuzzWait = 2 * time.Minute

// answerWait is fuzzWait, but in a fuzzing worker, which Go's fuzzing ends
// without a word ("deadlocked") once an input has run 10 s: there a wait
// ends sooner, so that a hang fails with the harness's message.
func answerWait() time.Duration {
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		return 7 * time.Second
	}
	return fuzzWait
}

// fuzzPeer is one running endpoint and what it writes.
type fuzzPeer struct {
	path   string // "lane" or "sdk"
	cmd    *exec.Cmd
	stdin  interface{ Write([]byte) (int, error) }
	lines  chan []byte
	stderr *lockedBuffer
	next   int
	// last is the answer until found last.
	last string
	// lanes counts the calls the lane took (see laneCalls).
	lanes int
	// wait bounds each wait for an answer (0: answerWait()).
	wait time.Duration
	// abandoned are the harness's requests whose answers it stopped
	// waiting for (their input failed), by id as written, each with what
	// marks its progress (nil: nothing). Their answer and progress may
	// still come: they are no later input's, and are dropped.
	abandoned map[string][]byte
	// answered are the ids of FuzzLaneVersusSDKUpstream's requests
	// answered so far, which it never reuses: an answer to one of them
	// that comes again was written twice.
	answered map[string]bool
}

func FuzzLaneVersusSDK(f *testing.F) {
	for _, line := range fuzzSeeds(f) {
		f.Add(line)
	}
	for _, line := range issueSeeds() {
		f.Add([]byte(line))
	}
	bin, up := realBinary(f), serverBin(f)
	root, err := os.MkdirTemp("", "agentctl-fuzz-")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.RemoveAll(root) })
	env := fuzzEnv(f, root)
	spec, err := json.Marshal(map[string]any{"command": up, "args": []string{"-tools", "0", "-echo-meta"}, "tool_prefix": "up", "timeout": "5m"})
	if err != nil {
		f.Fatal(err)
	}
	work := filepath.Join(root, "work")
	create := exec.Command(bin, "instance", "create", "--agent", "codex", "--workspace", work, "--mcp-json", "up="+string(spec))
	create.Env, create.Dir = env, work
	out, err := create.Output()
	if err != nil {
		f.Fatalf("instance create: %v", err)
	}
	id := strings.TrimSpace(string(out))
	norm := strings.NewReplacer(id, "$INSTANCE", root, "$WORK", filepath.Dir(bin), "$BIN")
	lane := startFuzzPeer(f, bin, env, work, id, true)
	sdk := startFuzzPeer(f, bin, env, work, id, false)

	var mu sync.Mutex // one input at a time on the shared endpoints
	f.Fuzz(func(t *testing.T, line []byte) {
		if !fuzzable(line) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		var held string
		if bytes.Contains(line, []byte("cancelled")) {
			held = "c1"
		}
		type result struct {
			answers, notes [][]byte
			err            error
		}
		results := make([]result, 2)
		var wg sync.WaitGroup
		for i, p := range []*fuzzPeer{lane, sdk} {
			wg.Go(func() {
				a, n, err := p.exchange(line, held)
				results[i] = result{a, n, err}
			})
		}
		wg.Wait()
		for i, p := range []*fuzzPeer{lane, sdk} {
			if results[i].err != nil {
				t.Fatalf("%s path, line %s: %v\nstderr:\n%s", p.path, line, results[i].err, tail(p.stderr.String(), 3000))
			}
		}
		la, sa := normaliseAll(results[0].answers, norm), normaliseAll(results[1].answers, norm)
		if !sameMessages(sa, la) && sameMessages(sortedProperties(sa), sortedProperties(la)) {
			la = sa
		}
		ln, sn := normaliseNotes(results[0].notes, norm), normaliseNotes(results[1].notes, norm)
		if sameMessages(sa, la) && sameMessages(sn, ln) {
			return
		}
		for _, k := range laneKnownDifferences {
			if k.applies(line) {
				t.Logf("known difference (%s)", k.reason)
				return
			}
		}
		t.Errorf("line %s\nanswers:\n lane: %s\n  sdk: %s\nnotifications:\n lane: %s\n  sdk: %s",
			line, showLines(la), showLines(sa), showLines(ln), showLines(sn))
	})
}

// fuzzable says whether the harness sends line (see the file comment).
func fuzzable(line []byte) bool {
	if len(line) == 0 || len(line) > fuzzMaxLine || bytes.ContainsAny(line, "\n\r") {
		return false
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return false // a blank line is no message: the guard skips it
	}
	text := strings.ToLower(string(line))
	if v, err := decodeJSON(line); err == nil {
		text = strings.ToLower(string(encodeJSON(v)) + fmt.Sprint(keysOf(v)))
	}
	for _, w := range []string{"slow", "crash", "change_tools", "fuzz-"} {
		if strings.Contains(text, w) {
			return false
		}
	}
	return true
}

// keysOf lists every object key in a decoded value (encodeJSON shows keys
// with escapes undone, but a key may still hide a word in its spelling).
func keysOf(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, w := range v {
			out = append(out, k)
			out = append(out, keysOf(w)...)
		}
	case []any:
		for _, w := range v {
			out = append(out, keysOf(w)...)
		}
	}
	return out
}

// unexpectedProperties is go-sdk's jsonschema error naming the arguments a
// tool's schema does not allow, in Go's map order: a different order on
// each call, whichever path forwarded it.
var unexpectedProperties = regexp.MustCompile(`unexpected additional properties \[[^\]]*\]`)

// sortedProperties is lines with the names in unexpectedProperties sorted.
func sortedProperties(lines [][]byte) [][]byte {
	out := make([][]byte, len(lines))
	for i, l := range lines {
		out[i] = unexpectedProperties.ReplaceAllFunc(l, func(m []byte) []byte {
			open := bytes.IndexByte(m, '[')
			names := strings.Fields(string(m[open+1 : len(m)-1]))
			slices.Sort(names)
			return append(slices.Clip(m[:open+1]), strings.Join(names, " ")+"]"...)
		})
	}
	return out
}

func normaliseAll(lines [][]byte, norm interface{ Replace(string) string }) [][]byte {
	out := make([][]byte, len(lines))
	for i, l := range lines {
		out[i] = []byte(norm.Replace(string(l)))
	}
	return out
}

// fuzzSeeds are the corpus' client lines but a session's opening ones.
func fuzzSeeds(tb testing.TB) [][]byte {
	files, err := filepath.Glob(filepath.Join(confDir, "*.txtar"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no corpus in %s: %v", confDir, err)
	}
	var out [][]byte
	seen := map[string]bool{}
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		for _, f := range ar.Files {
			if f.Name != "client" {
				continue
			}
			for l := range strings.Lines(string(f.Data)) {
				l = strings.TrimRight(l, "\r\n")
				t := strings.TrimSpace(l)
				if t == "" || t[0] == '#' || t[0] == '@' || seen[l] ||
					strings.Contains(l, `"initialize"`) || strings.Contains(l, `"notifications/initialized"`) {
					continue
				}
				seen[l] = true
				out = append(out, []byte(l))
			}
		}
	}
	return out
}

// issueSeeds are the differences issue 9 lists, as single lines.
func issueSeeds() []string {
	deep := func(n int) string {
		return `{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"name":"up__echo","arguments":{"text":"x","n":` +
			strings.Repeat("[", n) + strings.Repeat("]", n) + `}}}`
	}
	call := func(meta string) string {
		return `{"jsonrpc":"2.0","id":"m","method":"tools/call","params":{"name":"up__echo_meta","arguments":{},"_meta":` + meta + `}}`
	}
	return []string{
		deep(990), deep(996), deep(997), deep(998), deep(999), deep(1000), deep(2000),
		call(`{}`), call(`{"progressToken":"a","progressToken":"b"}`), call(`{"progress\u0054oken":"esc"}`),
		call(`{"progressToken":1e3}`), call(`{"progressToken":1.0}`), call(`{"progressToken":12345678901234567890}`),
		call(`{"progressToken":"a","progress\u0054oken":"b"}`), call(`{"progress\u0054oken":"a","progressToken":"b"}`),
		call(`{"progressToken":{}}`), call(`{"progressToken":[1]}`), call(`{"progressToken":""}`),
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"request\u0049d":"c1","reason":"x"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c\u0031"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"notifications/cancelled","params":{"requestId":"c1"}}`,
	}
}

// fuzzEnv is an isolated environment under root, as rcEnv's cliEnv.
func fuzzEnv(tb testing.TB, root string) []string {
	tb.Helper()
	dirs := map[string]string{"state": "", "home": "", "config": "", "work": "", "xdg-state": "", "xdg-cache": "", "xdg-data": ""}
	for d := range dirs {
		dirs[d] = filepath.Join(root, d)
		if err := os.MkdirAll(dirs[d], 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	return append(cleanEnviron(),
		"AGENTCTL_STATE_DIR="+dirs["state"], "HOME="+dirs["home"], "XDG_CONFIG_HOME="+dirs["config"],
		"XDG_STATE_HOME="+dirs["xdg-state"], "XDG_CACHE_HOME="+dirs["xdg-cache"], "XDG_DATA_HOME="+dirs["xdg-data"], "NO_COLOR=1")
}

// startFuzzPeer starts one endpoint (with the extra flags of `mcp serve`)
// and opens a 2025-11-25 session in it.
func startFuzzPeer(f testing.TB, bin string, env []string, dir, id string, lane bool, extra ...string) *fuzzPeer {
	p := &fuzzPeer{path: "sdk", lines: make(chan []byte, 256), stderr: &lockedBuffer{}}
	args := append([]string{"mcp", "serve", "--instance", id}, extra...)
	if lane {
		p.path = "lane"
	} else {
		args = append(args, "--fast-lane=false")
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env, p.cmd.Dir, p.cmd.Stderr = env, dir, p.stderr
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		f.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		f.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		f.Fatal(err)
	}
	p.stdin = stdin
	go func() {
		defer close(p.lines)
		br := bufio.NewReaderSize(stdout, 1<<20)
		for {
			l, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(l)) > 0 {
				p.lines <- bytes.TrimRight(l, "\r\n")
			}
			if err != nil {
				return
			}
		}
	}()
	f.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() {
			for range p.lines {
			}
			_ = p.cmd.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(fuzzWait):
			_ = p.cmd.Process.Kill()
			<-done
		}
	})
	for _, l := range []string{
		`{"jsonrpc":"2.0","id":"fuzz-open-1","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"fuzz-open-2","method":"tools/list"}`,
	} {
		if _, err := io2(p.stdin, l); err != nil {
			f.Fatal(err)
		}
		if strings.Contains(l, `"id"`) {
			if _, _, err := p.until(idOf(l)); err != nil {
				f.Fatalf("%s path: opening the session: %v", p.path, err)
			}
		}
	}
	return p
}

func io2(w interface{ Write([]byte) (int, error) }, line string) (int, error) {
	return w.Write([]byte(line + "\n"))
}

// idOf is the id of a line the harness writes.
func idOf(line string) string {
	var m struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal([]byte(line), &m)
	return m.ID
}

// until reads lines until one is the answer to the harness's request id;
// it returns the other answers and the notifications read meanwhile.
func (p *fuzzPeer) until(id string) (answers, notes [][]byte, err error) {
	want, _ := json.Marshal(id)
	return p.untilID(want)
}

// untilID is until for the id written as want (JSON).
func (p *fuzzPeer) untilID(want []byte) (answers, notes [][]byte, err error) {
	wait := answerWait()
	if p.wait > 0 {
		wait = p.wait
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	giveUp := func() ([][]byte, [][]byte, error) {
		p.abandon(want, nil)
		return answers, notes, fmt.Errorf("no answer to %s within %s; read meanwhile: %s", want, wait, showLines(append(answers, notes...)))
	}
	for {
		// Time up comes first: an answer already read by then is late
		// too (a select would take either, at random).
		select {
		case <-timer.C:
			return giveUp()
		default:
		}
		select {
		case l, ok := <-p.lines:
			if !ok {
				return answers, notes, errors.New("the endpoint's output ended")
			}
			if isServerMessage(l) {
				if !p.lateNote(l) {
					notes = append(notes, l)
				}
				continue
			}
			id := answerID(l)
			if bytes.Equal(id, want) {
				p.last = string(l)
				return answers, notes, nil
			}
			if !p.lateAnswer(id) {
				answers = append(answers, l)
			}
		case <-timer.C:
			return giveUp()
		}
	}
}

// answerID is the id of an answer, as written (nil if it has none).
func answerID(l []byte) []byte {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(l, &m) != nil {
		return nil
	}
	return m.ID
}

// abandon notes that the harness no longer waits for the answer to its
// request id (JSON), whose progress holds mark, if not nil.
func (p *fuzzPeer) abandon(id, mark []byte) {
	if p.abandoned == nil {
		p.abandoned = map[string][]byte{}
	}
	p.abandoned[string(id)] = mark
}

// lateAnswer reports whether an answer with the id id (as written) is to
// a request the harness abandoned, which it ends.
func (p *fuzzPeer) lateAnswer(id []byte) bool {
	if _, ok := p.abandoned[string(id)]; !ok || len(id) == 0 {
		return false
	}
	delete(p.abandoned, string(id))
	return true
}

// lateNote reports whether the server's message l is progress of a
// request the harness abandoned.
func (p *fuzzPeer) lateNote(l []byte) bool {
	for _, mark := range p.abandoned {
		if mark != nil && bytes.Contains(l, mark) {
			return true
		}
	}
	return false
}

// awaitAnswers reads until n answers have come (notifications aside).
func (p *fuzzPeer) awaitAnswers(n int, answers, notes [][]byte) ([][]byte, [][]byte, error) {
	timer := time.NewTimer(answerWait())
	defer timer.Stop()
	for len(answers) < n {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return answers, notes, errors.New("the endpoint's output ended")
			}
			switch {
			case isServerMessage(l):
				notes = append(notes, l)
			case !p.lateAnswer(answerID(l)):
				answers = append(answers, l)
			}
		case <-timer.C:
			return answers, notes, fmt.Errorf("%d of %d answers within %s: %s", len(answers), n, answerWait(), showLines(answers))
		}
	}
	return answers, notes, nil
}

// exchange sends line (with the harness's slow call held, if held is
// set) and returns what the endpoint answered to it.
//
// A request (a JSON object with a method and an id that is not null, the
// corpus' rule) is awaited until its answer; then, for every line, a ping
// of the harness's goes after it, and its answer is awaited too, so that
// what the endpoint writes about line before reading the ping is caught.
// The lane answers a forwarded call from the server, perhaps after the
// ping: hence the wait for the request's own answer first.
func (p *fuzzPeer) exchange(line []byte, held string) (answers, notes [][]byte, err error) {
	if held != "" {
		call := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"up__slow","arguments":{"ms":600000},"_meta":{"progressToken":%q}}}`, held, held)
		if _, err := io2(p.stdin, call); err != nil {
			return nil, nil, err
		}
		if err := p.awaitProgress(held); err != nil {
			return nil, nil, err
		}
	}
	if _, err := p.stdin.Write(append(bytes.Clone(line), '\n')); err != nil {
		return nil, nil, err
	}
	// The corpus' rule, on the line as the guard reads it: without a
	// byte-order mark in front.
	msg := bytes.TrimPrefix(line, []byte("\ufeff"))
	want := 0
	if isCall(msg) || !json.Valid(msg) {
		want = 1
	}
	if len(bytes.TrimSpace(msg)) == 0 {
		want = 0 // a blank line (a byte-order mark alone) is skipped, as by a JSON decoder
	}
	if answers, notes, err = p.awaitAnswers(want, nil, nil); err != nil {
		return answers, notes, err
	}
	p.next++
	ping := fmt.Sprintf(`{"jsonrpc":"2.0","id":"fuzz-ping-%d","method":"ping"}`, p.next)
	if _, err := io2(p.stdin, ping); err != nil {
		return answers, notes, err
	}
	a, n, err := p.until(idOf(ping))
	answers, notes = append(answers, a...), append(notes, n...)
	if err != nil || held == "" {
		return answers, notes, err
	}
	cancel := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%q}}`, held)
	if _, err := io2(p.stdin, cancel); err != nil {
		return answers, notes, err
	}
	// The held call gets no answer on either path (whichever cancel ended
	// it): what comes before the answer to a ping after the cancel is
	// compared as the input's.
	after := strings.Replace(ping, "ping-", "ping-after-", 1)
	if _, err := io2(p.stdin, after); err != nil {
		return answers, notes, err
	}
	a, n, err = p.until(idOf(after))
	answers, notes = append(answers, a...), append(notes, n...)
	// The held call's progress comes on both paths, as timing allows.
	notes = slices.DeleteFunc(notes, func(l []byte) bool { return bytes.Contains(l, []byte(`"`+held+`"`)) })
	return answers, notes, err
}

// awaitProgress waits for progress of the harness's held call; what else
// arrives meanwhile is the previous input's business and was checked.
func (p *fuzzPeer) awaitProgress(tok string) error {
	return p.awaitLine([]byte(`"progressToken":"`+tok+`"`), "progress of "+tok)
}

// awaitLine reads the endpoint's output until a line holding want comes;
// what is the error's name for it.
func (p *fuzzPeer) awaitLine(want []byte, what string) error {
	timer := time.NewTimer(answerWait())
	defer timer.Stop()
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return errors.New("the endpoint's output ended")
			}
			if bytes.Contains(l, want) {
				return nil
			}
		case <-timer.C:
			return fmt.Errorf("no %s within %s", what, answerWait())
		}
	}
}
