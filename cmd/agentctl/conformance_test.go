package main

// The conformance corpus: testdata/conformance/*.txtar, each a client's
// messages written as the bytes to send, run through the real binary twice,
// with the fast lane (the default) and with --fast-lane=false (every message
// through go-sdk), and compared with one golden: what the SDK path answers.
// The lane must answer exactly as the SDK does; where it does not today, the
// file says so message by message (@known-difference), and that list is the
// work list for making the lane hand such messages to the SDK.
//
// # File format
//
// The archive's comment says what the case checks. Its files:
//
//	-- upstream --
//	    The flags of the test upstream (testdata/upstream), split at spaces,
//	    e.g. "-tools 0 -crash-after 2". The instance is created for codex
//	    with that server mounted as "up", prefix "up", so its tools are
//	    up__echo, up__fail, up__crash, up__slow, up__change_tools, up__tool_i.
//	-- client --
//	    One message per line, sent exactly as written plus a newline (so odd
//	    encodings can be written: escapes, duplicate keys, batches, broken
//	    JSON). Blank lines and lines starting with # are not sent; lines
//	    starting with @ are directives for the next message:
//	      @answers N     the message gets N answers (lines from the endpoint
//	                     that are not its own requests or notifications); the
//	                     runner waits for them before sending the next. The
//	                     default is 1 for a JSON object with a "method" and a
//	                     non-null "id" (as encoding/json reads it, the last of
//	                     duplicate keys), else 0: a notification is not waited
//	                     for, and a message expected to get no answer says so
//	                     with @answers 0.
//	      @await progress TOKEN
//	                     before sending the message, wait until a
//	                     notifications/progress with this progressToken (JSON;
//	                     numbers compared as float64, so that a path that
//	                     rounds the token ends the wait too) has arrived: the
//	                     call with that token is running upstream.
//	      @lane          the fast lane must take the message (a tools/call of
//	                     an external tool, a tools/list): the lane path's
//	                     stderr must hold exactly as many "lane=fast" debug
//	                     lines (one per call forwarded or list answered) as
//	                     the file has @lane messages, and the SDK path's none.
//	      @lane-maybe    the fast lane may take the message or leave it to the
//	                     SDK, and which is timing: a session's first tools/list,
//	                     which the lane answers only once the external server's
//	                     first start is over (the SDK waits for it). Its
//	                     answers are compared all the same; it may add one
//	                     "lane=fast" line.
//	      @ends          the message ends the endpoint by itself: the runner
//	                     waits for its output to end, input still open; no
//	                     message may follow.
//	      @known-difference [lane-answers=N] TEXT
//	                     the lane answers the message differently today (TEXT
//	                     says how): its answers to this message are logged, not
//	                     compared, and the runner waits for N of them on the
//	                     lane path (default: as many as the SDK's). On a message
//	                     marked @ends it also means the lane path does not end
//	                     there: after its N answers the input is closed, and
//	                     the lane's exit is logged, not compared.
//	      @known-difference-notifications TEXT
//	                     (anywhere) the lane's notifications differ today: they
//	                     are logged, not compared.
//	      @eof           the end of input (optional; implicit at the end):
//	                     directives before it apply to what arrives after the
//	                     runner closes the endpoint's input.
//	-- answers --, -- notifications --, -- exit --
//	    The golden, written by -update from the SDK path: each message's
//	    answers under a "# N ..." header (N counts the client's messages from
//	    1; "# eof" for what came after the input ended), the distinct
//	    notifications sorted, and the exit code with the "agentctl: " error
//	    lines of stderr.
//
// A file that marks @lane messages first sends a tools/list (@lane-maybe): the
// first one waits for the external server's first start, and until the server
// is up the lane leaves its calls to the SDK (which waits too), so which path
// took an early call would be timing. Nothing that needs the server may follow
// a crash: when it is back is timing too. Calls still running when the input
// ends get an error after the endpoint's drain bound (10 s): one file (eof)
// has them; elsewhere they are cancelled first.
//
// Every wait (an answer, a progress notification, the end of the output, the
// process's exit) is bounded by confWait; a wait that runs out fails the case
// with what had arrived, and the endpoint is killed. A known difference that
// no longer differs is logged, not failed: some (what the lane writes while
// stopping) differ only some of the time.
//
// # What is normalised, and why
//
// Only what must differ between two runs or between the two paths:
//
//   - Values are compared as JSON values, not bytes: object key order,
//     white space, string escapes ("a\u0062c" is "abc") and the spelling of
//     numbers (1e3 is 1000; numbers compare exactly, as decimals, so 1.5 is
//     not 1 and 12345678901234567890 is not -9223372036854775808). The lane
//     relays the bytes it got; go-sdk decodes and encodes again. But an
//     answer's id and a progress notification's token are compared as
//     written: agentctl gives the client's back byte for byte on both paths
//     (its input guard maps them for the SDK).
//   - The instance id (a fresh ULID per run) reads $INSTANCE, and the test's
//     temporary directories $WORK and $BIN, in answers and notifications.
//   - Notifications are compared apart from answers, as a set of distinct
//     messages: when they arrive relative to the answers, and how many, is
//     timing. In notifications/progress the fields "progress" and "message"
//     are dropped (they count the upstream's 50 ms ticks; the token and total
//     stay). notifications/tools/list_changed is dropped: the endpoint sends
//     it when an external server (re)connects, timed by that server's start
//     and go-sdk's debouncing, not by the client's messages.
//
// The server's version is not normalised: realBinary builds without
// -ldflags, so it is "dev" on both paths and in every run.
//
// Run with -update to rewrite the goldens from the SDK path; the lane is
// then compared with the new golden as usual.

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"
)

var updateConformance = flag.Bool("update", false, "rewrite testdata/conformance goldens from the SDK path (--fast-lane=false)")

// confWait bounds each wait for an answer, a notification or the end of the
// output: far beyond what any machine needs, so only a real hang fails.
const confWait = 30 * time.Second

// confDir holds the corpus.
var confDir = filepath.Join("..", "..", "testdata", "conformance")

// confStep is one client message, or the end of input.
type confStep struct {
	n       int    // message number from 1; 0 for the end of input
	line    []byte // the bytes to send, without the newline
	answers int    // answers the SDK path gives it
	lane    bool   // the lane must take it
	mayLane bool   // the lane may take it
	ends    bool   // it ends the endpoint
	// await: before sending it, wait for progress with this token (nil: no wait).
	await any
	// known describes a known difference of the lane's answers; laneAnswers
	// is how many the lane gives (-1: as many as the SDK).
	known       string
	laneAnswers int
}

func (s confStep) label() string {
	if s.n == 0 {
		return "eof"
	}
	return strconv.Itoa(s.n)
}

// confCase is one txtar file.
type confCase struct {
	name, path string
	archive    *txtar.Archive
	upstream   []string
	steps      []confStep // the messages, then the end of input
	laneCount  int        // @lane messages
	maybeCount int        // @lane-maybe messages
	// knownNotes describes a known difference of the lane's notifications.
	knownNotes string
	// The golden, if the file has one.
	golden      map[string][][]byte // answers by step label
	goldenNotes [][]byte
	goldenExit  string
	hasGolden   bool
}

func TestConformance(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(confDir, "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/conformance/*.txtar")
	}
	bin := realBinary(t)
	up := serverBin(t)
	for _, file := range files {
		c, err := loadConfCase(file)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runConfCase(t, c, bin, up)
		})
	}
}

// loadConfCase parses a corpus file.
func loadConfCase(path string) (*confCase, error) {
	ar, err := txtar.ParseFile(path)
	if err != nil {
		return nil, err
	}
	c := &confCase{name: strings.TrimSuffix(filepath.Base(path), ".txtar"), path: path, archive: ar}
	var client []byte
	seen := map[string]bool{}
	for _, f := range ar.Files {
		if seen[f.Name] {
			return nil, fmt.Errorf("two sections %q", f.Name)
		}
		seen[f.Name] = true
		switch f.Name {
		case "upstream":
			c.upstream = strings.Fields(string(f.Data))
		case "client":
			client = f.Data
		case "answers", "notifications", "exit":
			c.hasGolden = true
		default:
			return nil, fmt.Errorf("unknown section %q", f.Name)
		}
	}
	if client == nil {
		return nil, errors.New("no client section")
	}
	if err := c.parseClient(client); err != nil {
		return nil, err
	}
	if c.hasGolden {
		if err := c.parseGolden(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// parseClient reads the client section's messages and directives.
func (c *confCase) parseClient(data []byte) error {
	next := confStep{answers: -1, laneAnswers: -1}
	pending := false // directives wait for their message
	eof := false
	n := 0
	lines := strings.Split(string(data), "\n")
	for i, raw := range lines {
		where := fmt.Sprintf("client line %d", i+1)
		trimmed := strings.TrimSpace(raw)
		switch {
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			continue
		case eof:
			return fmt.Errorf("%s: nothing may follow @eof", where)
		case len(c.steps) > 0 && c.steps[len(c.steps)-1].ends:
			return fmt.Errorf("%s: nothing may follow a message marked @ends", where)
		case strings.HasPrefix(raw, "@"):
			verb, arg, _ := strings.Cut(strings.TrimSpace(raw[1:]), " ")
			arg = strings.TrimSpace(arg)
			switch verb {
			case "answers":
				v, err := strconv.Atoi(arg)
				if err != nil || v < 0 {
					return fmt.Errorf("%s: @answers wants a count, got %q", where, arg)
				}
				next.answers = v
			case "await":
				tok, ok := strings.CutPrefix(arg, "progress ")
				v, err := decodeJSON([]byte(tok))
				if !ok || err != nil || v == nil {
					return fmt.Errorf("%s: want @await progress TOKEN (a JSON string or number), got %q", where, arg)
				}
				next.await = v
			case "lane":
				next.lane = true
			case "lane-maybe":
				next.mayLane = true
			case "ends":
				next.ends = true
			case "known-difference":
				if rest, ok := strings.CutPrefix(arg, "lane-answers="); ok {
					num, text, _ := strings.Cut(rest, " ")
					v, err := strconv.Atoi(num)
					if err != nil || v < 0 {
						return fmt.Errorf("%s: lane-answers wants a count, got %q", where, num)
					}
					next.laneAnswers, arg = v, strings.TrimSpace(text)
				}
				if arg == "" {
					return fmt.Errorf("%s: @known-difference must say what differs", where)
				}
				next.known = arg
			case "known-difference-notifications":
				if arg == "" {
					return fmt.Errorf("%s: @known-difference-notifications must say what differs", where)
				}
				c.knownNotes = arg
				continue
			case "eof":
				if next.lane || next.mayLane || next.ends || next.answers >= 0 {
					return fmt.Errorf("%s: @lane, @lane-maybe, @ends and @answers are for messages, not for the end of input", where)
				}
				eof = true
				continue
			default:
				return fmt.Errorf("%s: unknown directive @%s", where, verb)
			}
			pending = true
		default:
			n++
			next.n = n
			next.line = []byte(raw)
			if next.answers < 0 {
				next.answers = 0
				if isCall([]byte(raw)) {
					next.answers = 1
				}
			}
			if next.lane && next.mayLane {
				return fmt.Errorf("%s: @lane or @lane-maybe, not both", where)
			}
			if next.lane {
				c.laneCount++
			}
			if next.mayLane {
				c.maybeCount++
			}
			c.steps = append(c.steps, next)
			next = confStep{answers: -1, laneAnswers: -1}
			pending = false
		}
	}
	if pending && !eof {
		return errors.New("client: directives at the end name no message (use @eof for the end of input)")
	}
	if n == 0 {
		return errors.New("client: no messages")
	}
	if !c.steps[len(c.steps)-1].ends {
		next.n, next.answers = 0, 0
		c.steps = append(c.steps, next)
	} else if next.known != "" || next.await != nil {
		return errors.New("client: @eof directives after a message marked @ends")
	}
	return nil
}

// isCall reports whether line is a JSON object with a method and a non-null
// id: a request, which gets one answer.
func isCall(line []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return false
	}
	id, hasID := m["id"]
	_, hasMethod := m["method"]
	return hasMethod && hasID && string(id) != "null"
}

// parseGolden reads the answers, notifications and exit sections.
func (c *confCase) parseGolden() error {
	c.golden = map[string][][]byte{}
	for _, f := range c.archive.Files {
		switch f.Name {
		case "answers":
			group := ""
			for _, l := range bytes.Split(f.Data, []byte("\n")) {
				if len(bytes.TrimSpace(l)) == 0 {
					continue
				}
				if rest, ok := bytes.CutPrefix(l, []byte("# ")); ok {
					label, _, _ := bytes.Cut(rest, []byte(" "))
					group = string(label)
					if _, dup := c.golden[group]; dup {
						return fmt.Errorf("answers: two groups # %s", group)
					}
					c.golden[group] = nil
					continue
				}
				if group == "" {
					return fmt.Errorf("answers: %q before any # N header", l)
				}
				c.golden[group] = append(c.golden[group], l)
			}
		case "notifications":
			for _, l := range bytes.Split(f.Data, []byte("\n")) {
				if len(bytes.TrimSpace(l)) > 0 {
					c.goldenNotes = append(c.goldenNotes, l)
				}
			}
		case "exit":
			c.goldenExit = strings.TrimSpace(string(f.Data))
		}
	}
	for label := range c.golden {
		if !slices.ContainsFunc(c.steps, func(s confStep) bool { return s.label() == label }) {
			return fmt.Errorf("answers: group # %s names no message", label)
		}
	}
	return nil
}

// confResult is what one path did.
type confResult struct {
	path     string              // "lane" or "sdk"
	answers  map[string][][]byte // by step label, normalised
	notes    [][]byte            // distinct, normalised, sorted
	exit     string
	stderr   string
	failures []string // the run itself went wrong (a hang, a write error)
}

// runConfCase creates the case's instance and runs both paths against it.
func runConfCase(t *testing.T, c *confCase, bin, up string) {
	e := newRCEnv(t)
	spec, err := json.Marshal(map[string]any{"command": up, "args": c.upstream, "tool_prefix": "up", "timeout": "5m"})
	if err != nil {
		t.Fatal(err)
	}
	create := exec.Command(bin, "instance", "create", "--agent", "codex", "--workspace", e.work, "--mcp-json", "up="+string(spec))
	create.Env, create.Dir = e.cliEnv(), e.work
	out, err := create.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("instance create: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("instance create: %v", err)
	}
	id := strings.TrimSpace(string(out))
	norm := strings.NewReplacer(id, "$INSTANCE", e.root, "$WORK", filepath.Dir(bin), "$BIN")

	results := make(chan *confResult, 2)
	for _, lane := range []bool{true, false} {
		go func() { results <- runConfPath(c, bin, e.cliEnv(), e.work, id, lane, norm) }()
	}
	var laneRes, sdkRes *confResult
	for range 2 {
		r := <-results
		if r.path == "lane" {
			laneRes = r
		} else {
			sdkRes = r
		}
	}
	for _, r := range []*confResult{sdkRes, laneRes} {
		for _, f := range r.failures {
			t.Errorf("%s path: %s\nstderr:\n%s", r.path, f, tail(r.stderr, 4000))
		}
	}
	if len(sdkRes.failures) > 0 || len(laneRes.failures) > 0 {
		return
	}
	if *updateConformance {
		if err := c.writeGolden(sdkRes); err != nil {
			t.Fatal(err)
		}
		var err error
		if c, err = loadConfCase(c.path); err != nil {
			t.Fatalf("reading back %s: %v", c.path, err)
		}
	}
	if !c.hasGolden {
		t.Fatalf("%s has no golden: run go test -run 'Conformance/%s$' -update", c.path, c.name)
	}
	c.compare(t, sdkRes)
	c.compare(t, laneRes)
}

// compare checks one path's result against the golden.
func (c *confCase) compare(t *testing.T, r *confResult) {
	t.Helper()
	for _, s := range c.steps {
		label := s.label()
		want, got := c.golden[label], r.answers[label]
		same := sameMessages(want, got)
		if r.path == "lane" && s.known != "" {
			if same {
				t.Logf("message %s: known difference (%s), but the lane answered as the SDK this time", label, s.known)
			} else {
				t.Logf("message %s: known difference: %s\n lane: %s\n  sdk: %s", label, s.known, showLines(got), showLines(want))
			}
			continue
		}
		if !same {
			t.Errorf("%s path, message %s %s:\n got: %s\nwant: %s", r.path, label, preview(s.line), showLines(got), showLines(want))
		}
	}
	if !sameMessages(c.goldenNotes, r.notes) {
		if r.path == "lane" && c.knownNotes != "" {
			t.Logf("notifications: known difference: %s\n lane: %s\n  sdk: %s", c.knownNotes, showLines(r.notes), showLines(c.goldenNotes))
		} else {
			t.Errorf("%s path, notifications (distinct, normalised):\n got: %s\nwant: %s", r.path, showLines(r.notes), showLines(c.goldenNotes))
		}
	} else if r.path == "lane" && c.knownNotes != "" {
		t.Logf("notifications: known difference (%s), but the lane's were as the SDK's this time", c.knownNotes)
	}
	ender := c.steps[len(c.steps)-1]
	if r.path == "lane" && ender.ends && ender.known != "" {
		t.Logf("exit: known difference at message %d: lane: %q; sdk: %q", ender.n, r.exit, c.goldenExit)
	} else if r.exit != c.goldenExit {
		t.Errorf("%s path: the endpoint ended with\n%s\nwant\n%s", r.path, r.exit, c.goldenExit)
	}
	laneLines := strings.Count(r.stderr, "lane=fast")
	switch {
	case r.path == "lane" && (laneLines < c.laneCount || laneLines > c.laneCount+c.maybeCount):
		want := strconv.Itoa(c.laneCount)
		if c.maybeCount > 0 {
			want = fmt.Sprintf("%d to %d", c.laneCount, c.laneCount+c.maybeCount)
		}
		t.Errorf("lane path: the lane took %d messages (lane=fast in its debug log), the file marks %s (@lane, @lane-maybe)\nstderr:\n%s", laneLines, want, tail(r.stderr, 4000))
	case r.path == "sdk" && laneLines != 0:
		t.Errorf("sdk path: --fast-lane=false, yet the lane took %d messages", laneLines)
	}
}

// writeGolden rewrites the case's file with res as its golden.
func (c *confCase) writeGolden(res *confResult) error {
	var answers bytes.Buffer
	for _, s := range c.steps {
		if s.n == 0 {
			answers.WriteString("# eof\n")
		} else {
			fmt.Fprintf(&answers, "# %d %s\n", s.n, preview(s.line))
		}
		for _, a := range res.answers[s.label()] {
			answers.Write(a)
			answers.WriteByte('\n')
		}
	}
	var notes bytes.Buffer
	for _, n := range res.notes {
		notes.Write(n)
		notes.WriteByte('\n')
	}
	ar := &txtar.Archive{Comment: c.archive.Comment}
	for _, f := range c.archive.Files {
		switch f.Name {
		case "answers", "notifications", "exit":
		default:
			ar.Files = append(ar.Files, f)
		}
	}
	ar.Files = append(ar.Files,
		txtar.File{Name: "answers", Data: answers.Bytes()},
		txtar.File{Name: "notifications", Data: notes.Bytes()},
		txtar.File{Name: "exit", Data: []byte(res.exit + "\n")},
	)
	return os.WriteFile(c.path, txtar.Format(ar), 0o644)
}
