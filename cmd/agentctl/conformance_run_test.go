package main

// Running one path of a conformance case, and comparing JSON values: see
// conformance_test.go for the corpus and its file format.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// runConfPath runs `agentctl mcp serve` once, sends the case's messages and
// collects everything the endpoint writes.
func runConfPath(c *confCase, bin string, env []string, dir, id string, lane bool, norm *strings.Replacer) *confResult {
	r := &confResult{path: "sdk", answers: map[string][][]byte{}}
	args := []string{"mcp", "serve", "--instance", id, "--log-level", "debug"}
	if lane {
		r.path = "lane"
	} else {
		args = append(args, "--fast-lane=false")
	}
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Dir = env, dir
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		r.failures = append(r.failures, err.Error())
		return r
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		r.failures = append(r.failures, err.Error())
		return r
	}
	if err := cmd.Start(); err != nil {
		r.failures = append(r.failures, err.Error())
		return r
	}
	// Everything on stdout, line by line; the channel closes at its end.
	lines := make(chan []byte, 256)
	go func() {
		defer close(lines)
		br := bufio.NewReaderSize(stdout, 1<<20)
		for {
			l, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(l)) > 0 {
				lines <- bytes.TrimRight(l, "\r\n")
			}
			if err != nil {
				return
			}
		}
	}()
	// Wait closes stdout: only once it has been read to its end.
	readDone := make(chan struct{})
	closeRead := sync.OnceFunc(func() { close(readDone) })
	exited := make(chan struct{})
	go func() {
		<-readDone
		_ = cmd.Wait()
		close(exited)
	}()
	defer func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			for range lines { // what is left, up to the end the kill brings
			}
			closeRead()
			<-exited
		}
		r.stderr = stderr.String()
		r.exit = "exit " + strconv.Itoa(cmd.ProcessState.ExitCode())
		for l := range strings.Lines(r.stderr) {
			if strings.HasPrefix(l, "agentctl: ") {
				r.exit += "\n" + strings.TrimSpace(norm.Replace(l))
			}
		}
	}()
	var (
		answers [][]byte
		notes   [][]byte
		tokens  []any // progress tokens seen
		ended   bool
	)
	take := func(l []byte) {
		if isServerMessage(l) {
			notes = append(notes, l)
			var p struct {
				Method string `json:"method"`
				Params struct {
					Token json.RawMessage `json:"progressToken"`
				} `json:"params"`
			}
			if json.Unmarshal(l, &p) == nil && p.Method == "notifications/progress" {
				if tok, err := decodeJSON(p.Params.Token); err == nil {
					tokens = append(tokens, tok)
				}
			}
			return
		}
		answers = append(answers, l)
	}
	// wait reads stdout until done() holds or the output ends; false after
	// confWait.
	wait := func(done func() bool) bool {
		timer := time.NewTimer(confWait)
		defer timer.Stop()
		for !done() && !ended {
			select {
			case l, ok := <-lines:
				if !ok {
					ended = true
					closeRead()
					continue
				}
				take(l)
			case <-timer.C:
				return false
			}
		}
		return true
	}
	// write sends a line; a write that blocks for confWait (an endpoint
	// that stopped reading) is a failure.
	write := func(b []byte) error {
		done := make(chan error, 1)
		go func() {
			_, err := stdin.Write(b)
			done <- err
		}()
		select {
		case err := <-done:
			return err
		case <-time.After(confWait):
			_ = cmd.Process.Kill()
			return fmt.Errorf("the write did not complete within %s", confWait)
		}
	}

	want := 0        // answers expected so far
	var counts []int // answers attributed to each step
	for _, s := range c.steps {
		if s.await != nil {
			if !wait(func() bool { return slices.ContainsFunc(tokens, func(t any) bool { return sameToken(t, s.await) }) }) {
				r.failures = append(r.failures, fmt.Sprintf("before message %s: no progress with token %s within %s", s.label(), encodeJSON(s.await), confWait))
				return r
			}
			if ended {
				r.failures = append(r.failures, fmt.Sprintf("before message %s: the output ended while waiting for progress", s.label()))
				return r
			}
		}
		if s.n == 0 { // the end of input: everything else, until the output ends
			counts = append(counts, -1)
			break
		}
		if ended {
			r.failures = append(r.failures, fmt.Sprintf("the endpoint's output ended before message %d (mark the message that ends it @ends)", s.n))
			return r
		}
		if err := write(append(slices.Clip(s.line), '\n')); err != nil {
			r.failures = append(r.failures, fmt.Sprintf("message %d: write: %v", s.n, err))
			return r
		}
		if s.ends && !(lane && s.known != "") {
			counts = append(counts, -1)
			if !wait(func() bool { return false }) {
				r.failures = append(r.failures, fmt.Sprintf("message %d is marked @ends, but the endpoint's output did not end within %s", s.n, confWait))
				return r
			}
			break
		}
		n := s.answers
		if lane && s.known != "" && s.laneAnswers >= 0 {
			n = s.laneAnswers
		}
		counts = append(counts, n)
		want += n
		if !wait(func() bool { return len(answers) >= want }) {
			r.failures = append(r.failures, fmt.Sprintf("message %d: %d of %d answers within %s; answers so far:\n%s", s.n, len(answers), want, confWait, bytes.Join(answers, []byte("\n"))))
			return r
		}
		if ended && len(answers) < want {
			r.failures = append(r.failures, fmt.Sprintf("message %d: the output ended after %d of %d answers (mark the message that ends the endpoint @ends)", s.n, len(answers), want))
			return r
		}
	}
	// The end of input: the endpoint must end by itself.
	_ = stdin.Close()
	if !wait(func() bool { return false }) {
		r.failures = append(r.failures, fmt.Sprintf("the output did not end within %s of the input's end", confWait))
		return r
	}
	select {
	case <-exited:
	case <-time.After(confWait):
		r.failures = append(r.failures, fmt.Sprintf("the endpoint did not exit within %s after its output ended", confWait))
		return r
	}

	// Attribute the answers to their messages, in order; the last takes
	// whatever is left (the end of input, or a message marked @ends).
	i := 0
	for k, s := range c.steps[:len(counts)] {
		n := counts[k]
		if n < 0 || i+n > len(answers) || k == len(counts)-1 {
			n = len(answers) - i
		}
		for _, a := range answers[i : i+n] {
			r.answers[s.label()] = append(r.answers[s.label()], []byte(norm.Replace(string(a))))
		}
		i += n
	}
	r.notes = normaliseNotes(notes, norm)
	return r
}

// sameToken compares progress tokens, numbers as float64.
func sameToken(a, b any) bool {
	na, oka := a.(json.Number)
	nb, okb := b.(json.Number)
	if oka && okb {
		fa, erra := na.Float64()
		fb, errb := nb.Float64()
		return erra == nil && errb == nil && fa == fb
	}
	return equalJSON(a, b)
}

// isServerMessage reports whether a line from the endpoint is its own
// notification or request (it has a method) rather than an answer.
func isServerMessage(line []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return false
	}
	_, ok := m["method"]
	return ok
}

// normaliseNotes returns the distinct notifications, normalised (see the
// file comment), sorted by their encoding.
func normaliseNotes(notes [][]byte, norm *strings.Replacer) [][]byte {
	var out [][]byte
	var vals []any
	for _, l := range notes {
		v, err := decodeJSON([]byte(norm.Replace(string(l))))
		if err != nil {
			out = append(out, l)
			continue
		}
		m, _ := v.(map[string]any)
		switch m["method"] {
		case "notifications/tools/list_changed":
			continue
		case "notifications/progress":
			if p, ok := m["params"].(map[string]any); ok {
				delete(p, "progress")
				delete(p, "message")
				if _, tok := exactParts(l); tok != nil {
					p["progressToken"] = tok // as written: see sameMessages
				}
			}
		}
		if slices.ContainsFunc(vals, func(w any) bool { return equalJSON(v, w) }) {
			continue
		}
		vals = append(vals, v)
		out = append(out, encodeJSON(v))
	}
	slices.SortFunc(out, bytes.Compare)
	return out
}

// decodeJSON decodes one JSON value, numbers kept as written.
func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// encodeJSON encodes a decoded value with sorted keys, numbers as written.
func encodeJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimSpace(b.Bytes())
}

// equalJSON compares decoded values; numbers by their exact value.
func equalJSON(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, va := range a {
			vb, ok := b[k]
			if !ok || !equalJSON(va, vb) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !equalJSON(a[i], b[i]) {
				return false
			}
		}
		return true
	case json.RawMessage:
		b, ok := b.(json.RawMessage)
		return ok && bytes.Equal(a, b)
	case json.Number:
		b, ok := b.(json.Number)
		return ok && numberKey(string(a)) == numberKey(string(b))
	default:
		return a == b
	}
}

// numberKey is a JSON number's exact value, written one way: the digits
// without leading or trailing zeros and the power of ten, so that two
// numbers are equal exactly when their keys are (1.0 and 1e0, -0 and 0;
// an exponent past what a big.Rat holds, 1e901234567890, too).
func numberKey(n string) string {
	sign := ""
	if strings.HasPrefix(n, "-") {
		sign, n = "-", n[1:]
	}
	mant, exp, _ := strings.Cut(strings.ToLower(n), "e")
	whole, frac, _ := strings.Cut(mant, ".")
	e, ok := new(big.Int).SetString(strings.TrimPrefix(exp, "+"), 10)
	if exp == "" {
		e, ok = new(big.Int), true
	}
	if !ok {
		return "invalid:" + sign + n
	}
	digits := strings.TrimLeft(whole+frac, "0")
	e.Sub(e, big.NewInt(int64(len(frac))))
	if digits == "" {
		return "0"
	}
	trimmed := strings.TrimRight(digits, "0")
	e.Add(e, big.NewInt(int64(len(digits)-len(trimmed))))
	return sign + trimmed + "e" + e.String()
}

// sameMessages compares two lists of lines by JSON value (lines that are
// not JSON, byte for byte), but for ids and progress tokens, which
// agentctl gives back exactly as the client wrote them: those are compared
// as written (see exactParts).
func sameMessages(want, got [][]byte) bool {
	if len(want) != len(got) {
		return false
	}
	for i := range want {
		w, werr := decodeJSON(want[i])
		g, gerr := decodeJSON(got[i])
		if werr != nil || gerr != nil {
			if !bytes.Equal(want[i], got[i]) {
				return false
			}
			continue
		}
		if !equalJSON(w, g) {
			return false
		}
		wantID, wantTok := exactParts(want[i])
		gotID, gotTok := exactParts(got[i])
		if !bytes.Equal(wantID, gotID) || !bytes.Equal(wantTok, gotTok) {
			return false
		}
	}
	return true
}

// exactParts are a message's id and params.progressToken as written (nil
// where it has none).
func exactParts(line []byte) (id, token json.RawMessage) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil {
		return nil, nil
	}
	var p struct {
		Token json.RawMessage `json:"progressToken"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return m.ID, nil
	}
	return m.ID, p.Token
}

// preview is the start of a message, for headers and errors.
func preview(line []byte) string {
	n := 100
	if len(line) <= n {
		return string(line)
	}
	for n > 0 && !utf8.RuneStart(line[n]) {
		n--
	}
	return string(line[:n]) + "…"
}

func showLines(ls [][]byte) string {
	if len(ls) == 0 {
		return "(nothing)"
	}
	var b strings.Builder
	for i, l := range ls {
		if i > 0 {
			b.WriteString("\n      ")
		}
		if len(l) > 1500 {
			l = append(slices.Clip(l[:1500]), "…"...)
		}
		b.Write(l)
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
