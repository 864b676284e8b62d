package webui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentctl/agentctl/instance"
)

// outputTailBytes is how much of a run's output an instance's page shows
// at first; the live stream adds what comes after.
const outputTailBytes = 64 << 10

// outputChunk bounds what one message of the live stream carries of a
// run's output.
const outputChunk = 32 << 10

// sessionRecheck is how often a live stream checks that its session is
// still in force (a log out, a revoked token, its expiry end it).
const sessionRecheck = 30 * time.Second

// heartbeat is how often a live stream sends a comment, so that a proxy
// or the browser does not take a quiet stream for a dead one.
const heartbeat = 15 * time.Second

// sharedOutput says whether the page reads rec's run output from the
// store (another host's instance in a shared store) rather than from
// run.log in its directory.
func sharedOutput(st *instance.Store, rec *instance.Record) bool {
	return st.Foreign(rec) && st.SharesLogs()
}

// outputTail is the end of rec's run output as the page first shows it,
// the cursor the live stream goes on from (a byte offset in run.log, or
// the store's chunk sequence number) and whether older output was cut.
func (u *UI) outputTail(r *http.Request, rec *instance.Record) (string, int64, bool, error) {
	st := u.o.Store
	if sharedOutput(st, rec) {
		chunks, err := st.RunLog(r.Context(), rec.ID, 0)
		if err != nil {
			return "", 0, false, err
		}
		var cursor int64
		var data []byte
		for _, c := range chunks {
			data = append(data, c.Data...)
			cursor = c.Seq
		}
		text, cut := tail(data)
		return text, cursor, cut, nil
	}
	f, err := os.Open(filepath.Join(rec.Dir, instance.RunLogFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, nil // unreadable: shown as empty, the stream says more
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, false, nil
	}
	start := max(0, fi.Size()-outputTailBytes)
	data := make([]byte, fi.Size()-start)
	n, _ := f.ReadAt(data, start)
	data = data[:n]
	data = data[:completeUTF8(data)]
	cursor := start + int64(len(data))
	if start > 0 { // from the first whole line
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return outputText(data), cursor, start > 0, nil
}

// tail is data's last outputTailBytes as text, from a line's start when
// cut.
func tail(data []byte) (string, bool) {
	cut := false
	if len(data) > outputTailBytes {
		data, cut = data[len(data)-outputTailBytes:], true
	}
	if cut {
		if i := strings.IndexByte(string(data), '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return outputText(data), cut
}

// ansiRE matches terminal escape sequences (colours, cursor moves): the
// page shows the text without them.
var ansiRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])`)
})

// outputText is a client's output as the page shows it: valid UTF-8,
// without terminal escapes and carriage-return rewrites of a line.
func outputText(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if strings.IndexByte(s, 0x1b) >= 0 {
		s = ansiRE().ReplaceAllString(s, "")
	}
	return strings.ReplaceAll(s, "\r\n", "\n")
}

// completeUTF8 is the length of b without an incomplete UTF-8 sequence at
// its end (the rest of it is still being written).
func completeUTF8(b []byte) int {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < 0x80 {
			return len(b)
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(b[len(b)-i:]) {
				return len(b)
			}
			return len(b) - i
		}
	}
	return len(b)
}

// cursor is where a live stream is: the last event sent and the position
// in the run output. It is each message's id, so that a browser
// reconnecting (Last-Event-ID) goes on where it was.
type cursor struct {
	after int64 // event sequence number
	log   int64 // run.log offset, or the store's chunk sequence number
}

func (c cursor) String() string { return itoa64(c.after) + "." + itoa64(c.log) }

func parseCursor(r *http.Request) cursor {
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		a, l, ok := strings.Cut(id, ".")
		ai, err1 := strconv.ParseInt(a, 10, 64)
		li, err2 := strconv.ParseInt(l, 10, 64)
		if ok && err1 == nil && err2 == nil && ai >= 0 && li >= 0 {
			return cursor{ai, li}
		}
	}
	q := r.URL.Query()
	a, _ := strconv.ParseInt(q.Get("after"), 10, 64)
	l, _ := strconv.ParseInt(q.Get("log"), 10, 64)
	return cursor{max(a, 0), max(l, 0)}
}

// sse writes one stream's messages.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// send writes one message (data may hold line breaks) and flushes it.
// A browser ends a stream's line at "\r\n", "\n" or a lone "\r": each is a
// data line's end here, so that nothing in data (an agent's text, which
// html/template leaves "\r" in) can start a field of its own (event:, id:)
// or end the message early. event and id are agentctl's own words.
func (s *sse) send(event, id, data string) error {
	var b strings.Builder
	if event != "" {
		b.WriteString("event: " + event + "\n")
	}
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	data = strings.ReplaceAll(strings.ReplaceAll(data, "\r\n", "\n"), "\r", "\n")
	for line := range strings.SplitSeq(data, "\n") {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
	if _, err := io.WriteString(s.w, b.String()); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *sse) comment(text string) error {
	if _, err := io.WriteString(s.w, ": "+text+"\n\n"); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *sse) sendJSON(event, id string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.send(event, id, string(b))
}

// liveQuestion is a question as the stream sends it: the script puts its
// HTML in place of the one with its id, unless that shows the same status.
type liveQuestion struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	HTML   string `json:"html"`
}

// liveRun is the latest run's summary as the stream sends it.
type liveRun struct {
	Sig  string `json:"sig"`
	HTML string `json:"html"`
}

// liveStream is GET /ui/instances/{id}/events: server-sent events of the
// instance, from the cursor its page (or Last-Event-ID) gives, until the
// browser leaves, the session ends, the instance is deleted or the daemon
// stops. Messages: progress (an event's HTML), output (run output, a JSON
// string), output-reset (run.log started again), question (a question
// whose status the page may not show yet), run (the latest run's
// summary), gone (the instance was deleted) and logout (the session
// ended).
func (u *UI) liveStream(w http.ResponseWriter, r *http.Request) {
	sess, err := u.currentSession(r)
	if err != nil {
		u.log.Error("web page: reading the session failed", "error", err)
		http.Error(w, "Service Unavailable: the store did not answer", http.StatusServiceUnavailable)
		return
	}
	if sess == nil {
		securityHeaders(w.Header())
		http.Error(w, "Unauthorized: log in first (agentctl ui prints a login URL)", http.StatusUnauthorized)
		return
	}
	st := u.o.Store
	id := r.PathValue("id")
	rec, err := st.Get(r.Context(), id)
	if err != nil || rec.ID != id {
		securityHeaders(w.Header())
		http.Error(w, "Not Found: no instance "+id, http.StatusNotFound)
		return
	}
	ctx, cancel := u.stopped(r.Context())
	defer cancel()
	securityHeaders(w.Header())
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	out := &sse{w: w, rc: http.NewResponseController(w)}
	// A browser that lost the stream tries again after 2 s.
	if _, err := io.WriteString(w, "retry: 2000\n\n"); err != nil {
		return
	}
	f := &follower{ui: u, st: st, rec: rec, out: out, cur: parseCursor(r), csrf: sess.CSRF, shared: sharedOutput(st, rec),
		questions: map[string]string{}}
	if err := f.run(ctx, sess.id); err != nil && ctx.Err() == nil {
		u.log.Debug("web page: a live stream ended", "instance", id, "error", err)
	}
}

// follower is one live stream's state.
type follower struct {
	ui     *UI
	st     *instance.Store
	rec    *instance.Record
	out    *sse
	cur    cursor
	csrf   string
	shared bool
	// questions are the statuses of the questions sent, by id; runSig
	// the run summary's.
	questions map[string]string
	runSig    string
}

func (f *follower) run(ctx context.Context, sessionID string) error {
	st := f.st
	evWake, stopEv := st.WatchEvents(ctx, f.rec.ID)
	defer stopEv()
	var logWake <-chan struct{}
	if f.shared {
		var stopLog func()
		logWake, stopLog = st.WatchRunLog(ctx, f.rec.ID)
		defer stopLog()
	}
	tick := time.NewTicker(f.ui.o.PollInterval)
	defer tick.Stop()
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	recheck := time.NewTicker(sessionRecheck)
	defer recheck.Stop()
	for {
		gone, err := f.round(ctx)
		if err != nil {
			if f.st.Transient(err) {
				// The store went away: the page says so, the stream
				// goes on and tries again.
				_ = f.out.comment("the store does not answer; trying again")
			} else {
				return err
			}
		}
		if gone {
			return f.out.send("gone", "", "This instance was deleted: nothing more will come.")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		case <-evWake:
		case <-logWake:
		case <-beat.C:
			if err := f.out.comment("ping"); err != nil {
				return err
			}
		case <-recheck.C:
			if _, err := st.UISession(ctx, sessionID); errors.Is(err, instance.ErrNotAuthorized) {
				return f.out.send("logout", "", "Your session ended: log in again to follow this instance.")
			}
		}
	}
}

// round sends what is new: events, run output, questions and the run's
// summary. It reports gone when the instance no longer exists.
func (f *follower) round(ctx context.Context) (gone bool, err error) {
	st := f.st
	rec, err := st.Get(ctx, f.rec.ID)
	var nf *instance.NotFoundError
	if errors.As(err, &nf) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	f.rec = rec
	evs, err := st.Events(ctx, rec.ID, f.cur.after)
	if err != nil {
		return false, err
	}
	for _, e := range evs {
		f.cur.after = e.Seq
		html, err := fragment("event", eventView{e})
		if err != nil {
			return false, err
		}
		if err := f.out.send("progress", f.cur.String(), html); err != nil {
			return false, err
		}
	}
	if err := f.output(ctx); err != nil {
		return false, err
	}
	qs, err := st.Questions(ctx, rec.ID, true)
	if err != nil {
		return false, err
	}
	open, closed := splitQuestions(qs, rec.ID, f.csrf)
	for _, q := range append(open, closed...) {
		if f.questions[q.ID] == q.Status {
			continue
		}
		f.questions[q.ID] = q.Status
		html, err := fragment("question", q)
		if err != nil {
			return false, err
		}
		if err := f.out.sendJSON("question", "", liveQuestion{ID: q.ID, Status: q.Status, HTML: html}); err != nil {
			return false, err
		}
	}
	if rv := newRunView(rec.LastRun); rv.Sig != f.runSig {
		f.runSig = rv.Sig
		html, err := fragment("run", rv)
		if err != nil {
			return false, err
		}
		if err := f.out.sendJSON("run", "", liveRun{Sig: rv.Sig, HTML: html}); err != nil {
			return false, err
		}
	}
	return false, nil
}

// output sends the run output written since the cursor.
func (f *follower) output(ctx context.Context) error {
	if f.shared {
		chunks, err := f.st.RunLog(ctx, f.rec.ID, f.cur.log)
		if err != nil {
			return err
		}
		for _, c := range chunks {
			f.cur.log = c.Seq
			if err := f.out.sendJSON("output", f.cur.String(), outputText(c.Data)); err != nil {
				return err
			}
		}
		return nil
	}
	path := filepath.Join(f.rec.Dir, instance.RunLogFile)
	file, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		if f.cur.log > 0 { // removed: it starts again
			f.cur.log = 0
			return f.out.send("output-reset", f.cur.String(), "")
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the run output: %w", err)
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return err
	}
	if fi.Size() < f.cur.log {
		f.cur.log = 0
		if err := f.out.send("output-reset", f.cur.String(), ""); err != nil {
			return err
		}
	}
	for f.cur.log < fi.Size() {
		buf := make([]byte, min(outputChunk, fi.Size()-f.cur.log))
		n, err := file.ReadAt(buf, f.cur.log)
		if n == 0 {
			if err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			return nil
		}
		keep := completeUTF8(buf[:n])
		if keep == 0 {
			return nil // a rune still being written
		}
		f.cur.log += int64(keep)
		if err := f.out.sendJSON("output", f.cur.String(), outputText(buf[:keep])); err != nil {
			return err
		}
	}
	return nil
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
