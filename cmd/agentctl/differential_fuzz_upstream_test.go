package main

// FuzzLaneVersusSDKUpstream: the fast lane and the SDK path must pass an
// external server's answer on alike, and exactly. FuzzLaneVersusSDK fuzzes
// what a client writes; this fuzzes what the server writes back. The test
// server (testdata/upstream, with -craft -craft-file FILE) answers a call
// of echo with the text "craft:file" with the bytes of FILE: the fuzzer's
// input, with $ID replaced by the call's id upstream as written, $TOKEN by
// its progress token, and (here, in the harness) $PAD by pad bytes "x";
// then with an answer of its own, "craft:file answered nothing", which is
// the answer when the input's did not answer the call (and a second answer,
// dropped, when it did). One `agentctl mcp serve` of each kind runs for the
// whole fuzzing process, as in FuzzLaneVersusSDK; each input is one call
// sent to both (with a progress token), then a call of "sync" through the
// same server, whose answer says that agentctl has read everything the
// server wrote for the input and that the server was kept. With viaSDK
// the call's id is a number over 2^53, which the lane leaves to the SDK:
// the lane's endpoint then forwards it through go-sdk's client session,
// over the lane's reading of the server's output, a third path that must
// answer as the other two.
//
//	go test ./cmd/agentctl -run FuzzLaneVersusSDKUpstream                     # the seeds
//	go test ./cmd/agentctl -run '^$' -fuzz FuzzLaneVersusSDKUpstream -parallel 1 -fuzztime 10m
//
// The seeds are [upstreamSeeds] and testdata/fuzz/FuzzLaneVersusSDKUpstream.
//
// What is checked, for every input:
//
//   - both paths answer the call alike, by value, with the corpus'
//     normalisation (sameMessages), and write the same notifications
//     (compared by value, as a set: progress in full, since the server's
//     values are the input's; tools/list_changed left out, as in the corpus);
//   - neither path restarts the server: the sync call is answered by it;
//   - the lane took the call on the lane path (its debug log says
//     lane=fast for each call), so that the comparison is not of the SDK
//     with itself, or left it to the SDK with viaSDK;
//   - where the input is one answer to the call, valid JSON in valid UTF-8
//     with only the members JSON-RPC defines, both paths are exact to it
//     ([exactToUpstream]): a result reaches the client with every value the
//     client gets equal to the server's (numbers as written: 12345678901234567890
//     stays that, 1e400 is not refused), members MCP does not define dropped
//     alike; an error with its code, message and data.
//
// The harness sends an input only when $ID and $TOKEN stand where the
// server's id and a progress token go ("id":$ID, "progressToken":$TOKEN),
// $ID as a message's own member, followed by the member's end: the two
// paths send different ids and tokens upstream (the lane
// "agentctl-call-12", go-sdk 7), so the same input echoing them elsewhere
// (in a result's text or a content item's "id"), or spelling the id on
// ($ID00), is not the same answer on both. For the same reason an input
// should not answer under an id of its own that happens to be one the SDK
// path uses upstream (small integers): the seeds use strings.
//
// The known differences, each with its reason, are
// [laneUpstreamKnownDifferences].

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// laneUpstreamKnownDifferences are the server answers that may reach the
// client differently on the two paths (paths), or alike on both but not
// exactly as the server wrote them (inexact), each with why that is
// accepted: a test of the input (as the server writes it, $PAD expanded),
// and the reason. An inexact entry excuses only the comparison with the
// server's answer; the paths must still agree. Every entry is a promise of
// the README broken.
var laneUpstreamKnownDifferences = []struct {
	applies func(answer []byte) bool
	inexact bool
	reason  string
}{
	{
		applies: func(a []byte) bool { return len(a) > maxLine-64 && len(a) < maxLine+64 },
		reason: "the server writes a different id on each path (the lane's \"agentctl-call-12\", go-sdk's 7), " +
			"so an answer within a few bytes of the 16 MiB line limit is under it on one path and over it on the other",
	},
	{
		applies: emptyDefined,
		inexact: true,
		reason: "go-sdk's types leave out members MCP defines when they are empty (json omitempty): a resource " +
			"link's empty title, description, mimeType, uri or name, a resource's empty text or mimeType, an " +
			"annotation's empty audience or lastModified and a priority of 0, an icon's empty mimeType, sizes or " +
			"theme, empty icons; agentctl's server session writes what go-sdk read, on both paths",
	},
	{
		applies: func(a []byte) bool { return anyNumber(a, "priority", notFloat64) },
		inexact: true,
		reason: "an annotation's priority is a float64 in go-sdk's types (mcp.Annotations), and agentctl's " +
			"server session writes what go-sdk read: a priority a float64 does not hold exactly (0.1000000000000000000001) " +
			"reaches the client as the nearest float64, on both paths",
	},
	{
		applies: func(a []byte) bool { return anyString(a, []string{"data", "blob"}, notCanonicalBase64) },
		inexact: true,
		reason: "image and audio data and a resource's blob are bytes in go-sdk's types, written back as " +
			"standard base64: base64 with stray bits in its last character (aGVsbG9=) reaches the client " +
			"canonical (aGVsbG8=), the same bytes, on both paths",
	},
}

// memberValue finds a member named name and its value's first bytes.
var memberValue = regexp.MustCompile(`"(priority|data|blob)"\s*:\s*("(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*)`)

// anyNumber reports whether answer has a member named name whose value is
// a number for which bad holds.
func anyNumber(answer []byte, name string, bad func(string) bool) bool {
	for _, m := range memberValue.FindAllSubmatch(answer, -1) {
		if string(m[1]) == name && m[2][0] != '"' && bad(string(m[2])) {
			return true
		}
	}
	return false
}

// anyString reports whether answer has a member named one of names whose
// value is a string for which bad holds.
func anyString(answer []byte, names []string, bad func(string) bool) bool {
	for _, m := range memberValue.FindAllSubmatch(answer, -1) {
		var v string
		if slices.Contains(names, string(m[1])) && m[2][0] == '"' && json.Unmarshal(m[2], &v) == nil && bad(v) {
			return true
		}
	}
	return false
}

// notFloat64 reports whether the number n is not exactly a float64.
func notFloat64(n string) bool {
	f, err := strconv.ParseFloat(n, 64)
	return err != nil || numberKey(strconv.FormatFloat(f, 'g', -1, 64)) != numberKey(n)
}

// notCanonicalBase64 reports whether s is base64 that encodes back
// differently.
func notCanonicalBase64(s string) bool {
	b, err := base64.StdEncoding.DecodeString(s)
	return err == nil && base64.StdEncoding.EncodeToString(b) != s
}

// fuzzMaxAnswer bounds a fuzzed answer before $PAD is expanded.
const (
	fuzzMaxAnswer = 64 << 10
)

// maxLine is the limit of a server's line, on both paths (wire.MaxLine).
const maxLine = 16 << 20

// upstreamSeed is one seed: the server's answer, and the length of $PAD.
type upstreamSeed struct {
	answer string
	pad    uint32
}

// upstreamSeeds are the cases issue 22 names, and the craft kinds of the
// test server's.
func upstreamSeeds() []upstreamSeed {
	res := func(result string) string { return `{"jsonrpc":"2.0","id":$ID,"result":` + result + `}` }
	text := func(t string) string { return `{"content":[{"type":"text","text":` + t + `}]}` }
	deep := func(n int) string {
		return res(`{"content":[],"structuredContent":{"d":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}}`)
	}
	var out []upstreamSeed
	for _, a := range []string{
		// Numbers, as written.
		res(`{"content":[{"type":"text","text":"n"}],"structuredContent":{"n":12345678901234567890},"extra":1}`),
		res(`{"content":[{"type":"text","text":"n"}],"structuredContent":{"n":12345678901234567890}}`),
		res(`{"content":[],"structuredContent":{"big":12345678901234567890,"huge":1e400,"neg":-0,"one":1.0,"tenth":0.1,"sum":0.30000000000000004,"tiny":1e-400}}`),
		res(`{"content":[],"structuredContent":{"n":1},"_meta":{"big":12345678901234567890,"huge":1e400,"neg":-0,"one":1.0}}`),
		res(`{"content":[{"type":"text","text":"m","_meta":{"big":12345678901234567890}}]}`),
		res(`{"content":[{"type":"text","text":"p","annotations":{"priority":0.30000000000000004,"audience":["user"]}}]}`),
		res(`{"content":[{"type":"text","text":"p","annotations":{"priority":0.1000000000000000000001}}]}`),
		res(`{"content":[{"type":"resource_link","uri":"file:///a","name":"a","size":12345678901234567890}]}`),
		res(`{"content":[{"type":"resource_link","uri":"file:///a","name":"a","size":1.0}]}`),
		res(`{"content":[],"structuredContent":[1,2.50,3e2]}`),
		res(`{"content":[],"structuredContent":"a string"}`),
		res(`{"content":[],"structuredContent":12345678901234567890}`),
		// Nesting.
		deep(10), deep(990), deep(1100),
		// Members MCP does not define, at the top and inside content.
		res(`{"content":[{"type":"text","text":"unknown members","extra":{"a":1}}],"extra":[1,2],"_meta":{"x-trace":"t"}}`),
		res(`{"content":[{"type":"text","text":"t","extra":12345678901234567890}],"isError":false,"x":null}`),
		res(`{"content":[{"type":"image","data":"aGVsbG8=","mimeType":"image/png","extra":true}]}`),
		res(`{"content":[{"type":"image","data":"aGVsbG9=","mimeType":"image/png"}]}`),
		res(`{"content":[{"type":"audio","data":"","mimeType":"audio/wav"}]}`),
		res(`{"content":[{"type":"resource","resource":{"uri":"file:///r","text":"r","extra":1,"_meta":{"n":12345678901234567890}}}]}`),
		res(`{"content":[{"type":"resource","resource":{"uri":"file:///r","blob":"AAEC"}}]}`),
		res(`{"content":[{"type":"tool_use","id":"x","name":"y","input":{}}]}`),
		// Every member MCP defines, and the empty ones go-sdk leaves out.
		res(`{"content":[{"type":"resource_link","uri":"file:///a","name":"a","title":"T","description":"D","mimeType":"text/plain","size":0,` +
			`"icons":[{"src":"data:,x","mimeType":"image/png","sizes":["48x48"],"theme":"dark"}],` +
			`"annotations":{"priority":1,"audience":["user","assistant"],"lastModified":"2025-01-12T15:00:58Z"},"_meta":{}}],"isError":false,"_meta":{}}`),
		res(`{"content":[{"type":"text","text":"","annotations":{"priority":0,"audience":[],"lastModified":""}}]}`),
		res(`{"content":[{"type":"resource_link","uri":"","name":"","title":"","description":"","mimeType":"","icons":[{"src":"x","sizes":[],"theme":"","mimeType":""}]}]}`),
		res(`{"content":[{"type":"resource","resource":{"uri":"file:///r","mimeType":"","text":""}}]}`),
		// A content item of a type go-sdk does not know, and none.
		res(`{"content":[{"type":"video","url":"x"}]}`),
		res(`{"content":[{"text":"no type"}]}`),
		res(`{"content":[null]}`),
		// isError, and odd spellings of the plain shape.
		res(`{"content":[{"type":"text","text":"upstream says no"}],"isError":true}`),
		res(`{"content":[{"type":"text","text":"no"}],"isError":false}`),
		res(`{"content":[{"type":"text","text":"no"}],"isError":"yes"}`),
		res(`{"content":[{"type":"text","text":"dup"}],"content":[{"type":"text","text":"second"}]}`),
		res(`{"content":[{"type":"text","text":"key"}],"structured\u0043ontent":{"n":12345678901234567890}}`),
		res(`{"cont\u0065nt":[{"type":"text","text":"escaped key"}]}`),
		res(`{"Content":[{"type":"text","text":"case"}],"IsError":true}`),
		res(`{"content":[{"type":"text","text":"sc null"}],"structuredContent":null}`),
		res(`{"content":[{"type":"text","text":"a \u00e9 \u2028 <&> \/ \"q\""}]}`),
		// Results that are no object.
		res(`null`), res(`"a string"`), res(`[]`), res(`12345678901234567890`), res(`true`), res(`{}`),
		// Not UTF-8, and lone surrogates.
		res(text("\"bad \xff\xfe utf-8 \xc3\"")),
		res(`{"content":[{"type":"text","text":"ok"}],"structuredContent":{"s":"bad \xff"}}`),
		res(text(`"lone \ud800 surrogate"`)),
		res(text(`"lone \udfff and a pair \ud83d\ude00"`)),
		res(`{"content":[{"type":"text","text":"k"}],"structuredContent":{"\ud800":1}}`),
		// An error instead of a result.
		`{"jsonrpc":"2.0","id":$ID,"error":{"code":-32602,"message":"bad params","data":{"n":12345678901234567890}}}`,
		`{"jsonrpc":"2.0","id":$ID,"error":{"code":-1,"message":"x","data":1e400,"extra":true}}`,
		`{"jsonrpc":"2.0","id":$ID,"error":{"code":1.0,"message":"fraction"}}`,
		`{"jsonrpc":"2.0","id":$ID,"error":{"code":12345678901234567890,"message":"big"}}`,
		`{"jsonrpc":"2.0","id":$ID,"error":{"code":-32001,"message":"transport code"}}`,
		`{"jsonrpc":"2.0","id":$ID,"error":{"message":"no code"}}`,
		`{"jsonrpc":"2.0","id":$ID,"error":"a string"}`,
		`{"jsonrpc":"2.0","id":$ID,"error":null,"result":{"content":[{"type":"text","text":"error null"}]}}`,
		`{"jsonrpc":"2.0","id":$ID,"error":{"code":1,"message":"both"},"result":{"content":[]}}`,
		// Ids: one that does not match, none, escaped, duplicated.
		`{"jsonrpc":"2.0","id":"not-this-call","result":{"content":[{"type":"text","text":"other"}]}}`,
		`{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"no id"}]}}`,
		`{"jsonrpc":"2.0","id":null,"result":{"content":[{"type":"text","text":"null id"}]}}`,
		`{"jsonrpc":"2.0","id":$ID,"id":"not-this-call","result":{"content":[{"type":"text","text":"dup id"}]}}`,
		`{"jsonrpc":"2.0","id":"not-this-call","id":$ID,"result":{"content":[{"type":"text","text":"dup id last"}]}}`,
		`{"jsonrpc":"1.0","id":$ID,"result":{"content":[{"type":"text","text":"version"}]}}`,
		`{"id":$ID,"result":{"content":[{"type":"text","text":"no version"}]}}`,
		`{"jsonrpc":"2.0","id":$ID,"result":{"content":[{"type":"text","text":"extra member"}]},"extra":1}`,
		`{"jsonrpc":"2.0","i\u0064":$ID,"result":{"content":[{"type":"text","text":"escaped id key"}]}}`,
		`{"jsonrpc":"2.0","ID":$ID,"result":{"content":[{"type":"text","text":"ID"}]}}`,
		`{"jsonrpc":"2.0","id":$ID}`,
		`{"jsonrpc":"2.0","id":$ID,"method":"","result":{"content":[{"type":"text","text":"method"}]}}`,
		`{"jsonrpc":"2.0","id":$ID,"params":{},"result":{"content":[{"type":"text","text":"params"}]}}`,
		// Lines that are no answer, before the answer or instead of it.
		"this is not JSON\n" + res(text(`"after garbage"`)),
		`{"jsonrpc":"2.0","id":$ID,"result":{"content":[{"type":"text","text":"cut`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":$TOKEN,"progress":12345678901234567890,"total":1e400,"message":"p","extra":1}}` + "\n" +
			res(text(`"after progress"`)),
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":$TOKEN,"progress":0.5,"_meta":{"n":1}}}` + "\n" + res(text(`"progress meta"`)),
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":{"n":12345678901234567890}}}` + "\n" + res(text(`"after log"`)),
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n" + res(text(`"after list_changed"`)),
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}  ` + "\t\n" + res(text(`"after white space"`)),
		`{"jsonrpc":"2.0","id":"srv-1","method":"ping"}` + "\n" + res(text(`"after ping"`)),
		`{"jsonrpc":"2.0","id":"srv-2","method":"roots/list"}` + "\n" + res(text(`"after roots"`)),
		res(text(`"first"`)) + "\n" + res(text(`"second"`)),
		"[" + res(text(`"batch"`)) + "]",
		"\n\n" + res(text(`"after blank lines"`)) + "\r",
		"\ufeff" + res(text(`"byte-order mark"`)),
	} {
		out = append(out, upstreamSeed{answer: a})
	}
	// Huge strings: one of a MiB, one just over the 16 MiB line limit, its
	// id after it (one just under the limit costs seconds: the fuzzer tries
	// those).
	out = append(out,
		upstreamSeed{res(text(`"$PAD"`)), 1<<28 + 1},
		upstreamSeed{`{"jsonrpc":"2.0","result":` + text(`"$PAD"`) + `,"id":$ID}`, 255 << 8},
	)
	return out
}

func FuzzLaneVersusSDKUpstream(f *testing.F) {
	for _, s := range upstreamSeeds() {
		f.Add([]byte(s.answer), s.pad, false)
		if !strings.Contains(s.answer, "$PAD") {
			f.Add([]byte(s.answer), s.pad, true)
		}
	}
	h := newUpstreamHarness(f)
	peers, answerFile, norm, sizes := h.peers, h.answerFile, h.norm, h.sizes

	var mu sync.Mutex // one input at a time on the shared endpoints and file
	n := 0
	// How many inputs were sent, not skipped, is written every 100 to the
	// file AGENTCTL_FUZZ_COUNT names, if set, with the process id after a
	// dot (a fuzzing worker's output is not shown; it may be killed).
	countFile := os.Getenv("AGENTCTL_FUZZ_COUNT")
	if countFile != "" {
		countFile += "." + strconv.Itoa(os.Getpid())
	}
	f.Fuzz(func(t *testing.T, answer []byte, pad uint32, viaSDK bool) {
		if !upstreamFuzzable(answer) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		answer = expandPad(answer, pad)
		if err := os.WriteFile(answerFile, answer, 0o644); err != nil {
			t.Fatal(err)
		}
		n++
		if countFile != "" && n%100 == 0 {
			_ = os.WriteFile(countFile, fmt.Appendf(nil, "%d\n", n), 0o644)
		}
		type result struct {
			answer      []byte
			others      [][]byte
			notes       [][]byte
			lane        int
			err         error
			syncAnswer  []byte
			syncOthers  [][]byte
			syncFailure error
		}
		results := make([]result, 2)
		var wg sync.WaitGroup
		for i, p := range peers {
			wg.Go(func() {
				r := &results[i]
				// A panic here would end a fuzzing worker without a word
				// (its output goes nowhere): make it the input's failure.
				defer func() {
					if v := recover(); v != nil {
						r.err = fmt.Errorf("panic: %v\n%s", v, debug.Stack())
					}
				}()
				// A numeric id over 2^53 is one the lane leaves to the SDK.
				id := fmt.Sprintf(`"call-%d"`, n)
				if viaSDK {
					id = fmt.Sprintf("%d", 9007199254740993+2*n)
				}
				// The calls logged so far, an input's the harness gave up
				// on too, are not this one's.
				before := p.laneCallsWithin(0, 0)
				r.others, r.notes, r.err = p.upstreamCall(id, "craft:file", true)
				r.answer = []byte(p.last)
				if r.err != nil {
					return
				}
				others, notes, err := p.upstreamCall(fmt.Sprintf(`"sync-%d"`, n), "sync", false)
				r.syncAnswer, r.syncOthers, r.notes, r.syncFailure = []byte(p.last), others, append(r.notes, notes...), err
				want := 0
				switch {
				case p.path == "lane" && viaSDK:
					want = 1 // the sync call
				case p.path == "lane":
					want = 2
				}
				r.lane = p.laneCallsWithin(before+want, answerWait()) - before
			})
		}
		wg.Wait()
		shown := preview(answer)
		for i, p := range peers {
			r := results[i]
			switch {
			case r.err != nil:
				t.Fatalf("%s path, answer %q: %v\nstderr:\n%s", p.path, shown, r.err, tail(p.stderr.String(), 3000))
			case r.syncFailure != nil:
				t.Fatalf("%s path, answer %q: the sync call after it: %v\nstderr:\n%s", p.path, shown, r.syncFailure, tail(p.stderr.String(), 3000))
			case !bytes.Contains(r.syncAnswer, []byte(`"structuredContent":{"text":"sync"}`)) || len(r.syncOthers) > 0:
				t.Fatalf("%s path, answer %q: the server was not kept: the sync call was answered %s (and %s)\nstderr:\n%s",
					p.path, shown, r.syncAnswer, showLines(r.syncOthers), tail(p.stderr.String(), 3000))
			case p.path == "lane" && viaSDK && r.lane != 1:
				t.Fatalf("lane path, answer %q: the lane took %d calls, want 1: the sync call, not the call it leaves to the SDK (lane=fast in its log)\nstderr:\n%s", shown, r.lane, tail(p.stderr.String(), 3000))
			case p.path == "lane" && !viaSDK && r.lane != 2:
				t.Fatalf("lane path, answer %q: the lane took %d of the 2 calls (lane=fast in its log)\nstderr:\n%s", shown, r.lane, tail(p.stderr.String(), 3000))
			case p.path == "sdk" && r.lane != 0:
				t.Fatalf("sdk path: --fast-lane=false, yet the lane took %d calls", r.lane)
			}
		}
		la := normaliseAll(append([][]byte{results[0].answer}, results[0].others...), sizes)
		sa := normaliseAll(append([][]byte{results[1].answer}, results[1].others...), sizes)
		ln, sn := upstreamNotes(results[0].notes, norm), upstreamNotes(results[1].notes, norm)
		var differ, inexact []string
		if !slices.EqualFunc(sa, la, bytes.Equal) && !sameMessages(sa, la) {
			differ = append(differ, fmt.Sprintf("answers differ:\n lane: %s\n  sdk: %s", showLines(la), showLines(sa)))
		}
		if !sameMessages(sn, ln) {
			differ = append(differ, fmt.Sprintf("notifications differ:\n lane: %s\n  sdk: %s", showLines(ln), showLines(sn)))
		}
		for i, p := range peers {
			if len(answer) > 1<<20 {
				break // a huge answer is about the size limit (and its check would take seconds)
			}
			if err := exactToUpstream(answer, results[i].answer); err != nil {
				inexact = append(inexact, fmt.Sprintf("%s path is not exact to the server's answer: %v\n answer: %s", p.path, err, showLines([][]byte{results[i].answer})))
			}
		}
		for _, k := range laneUpstreamKnownDifferences {
			if (len(differ) > 0 && !k.inexact || len(inexact) > 0 && k.inexact) && k.applies(answer) {
				t.Logf("known difference (%s)", k.reason)
				if k.inexact {
					inexact = nil
				} else {
					differ, inexact = nil, nil
				}
			}
		}
		if problems := append(differ, inexact...); len(problems) > 0 {
			t.Errorf("server's answer %q:\n%s", shown, strings.Join(problems, "\n"))
		}
	})
}

// TestUpstreamFuzzLateAnswer: an input whose call the harness gave up on
// (a fuzzing worker waits 7 s; a loaded machine, or an answer near the 16
// MiB limit, takes longer) leaves its answer to come late; the next input
// must not take it for one of its own. The fuzzer once reported exactly
// that as the lane relaying "an earlier call's answer a second time"
// (testdata/fuzz/FuzzLaneVersusSDKUpstream/8e33ab2a0621a9c9): Go's
// minimization re-runs a failing input in the same worker, and reports the
// last run's failure, not the first.
func TestUpstreamFuzzLateAnswer(t *testing.T) {
	h := newUpstreamHarness(t)
	lane := h.peers[0]
	first := `{"jsonrpc":"2.0","id":$ID,"result":{"content":[{"type":"text","text":"first"}]}}`
	if err := os.WriteFile(h.answerFile, []byte(first), 0o644); err != nil {
		t.Fatal(err)
	}
	lane.wait = time.Nanosecond // the harness gives up at once
	_, _, err := lane.upstreamCall("9007199254741213", "craft:file", true)
	lane.wait = 0
	if err == nil {
		t.Fatal("the call was answered within a nanosecond")
	}
	deadline := time.Now().Add(fuzzWait)
	for len(lane.lines) == 0 { // its answer has come, and waits to be read
		if time.Now().After(deadline) {
			t.Fatal("no late answer")
		}
		time.Sleep(5 * time.Millisecond)
	}
	kept := `{"jsonrpc":"2.0","method":"notifications/prog}`
	if err := os.WriteFile(h.answerFile, []byte(kept), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range h.peers {
		others, _, err := p.upstreamCall("9007199254741215", "craft:file", true)
		if err != nil || len(others) > 0 {
			t.Errorf("%s path: the next input's call: %v; answered %s and also %s", p.path, err, p.last, showLines(others))
		}
	}
}

// TestFuzzPeerLateAndTwice: the answer and progress of a call the harness
// gave up on are dropped when they come; an answer that comes twice fails.
func TestFuzzPeerLateAndTwice(t *testing.T) {
	p := &fuzzPeer{path: "lane", lines: make(chan []byte, 8), stdin: io.Discard, wait: time.Nanosecond}
	if _, _, err := p.upstreamCall("1", "craft:file", true); err == nil {
		t.Fatal("answered with nothing to read")
	}
	p.wait = 0
	for _, l := range []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p-1","progress":1}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":2,"result":{}}`,
		`{"jsonrpc":"2.0","id":2,"result":{}}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
	} {
		p.lines <- []byte(l)
	}
	if others, notes, err := p.upstreamCall("2", "craft:file", true); err != nil || len(others)+len(notes) > 0 {
		t.Errorf("call 2: %v; also read %s", err, showLines(append(others, notes...)))
	}
	if _, _, err := p.upstreamCall("3", "craft:file", true); err == nil || !strings.Contains(err.Error(), "the answer to 2 came a second time") {
		t.Errorf("call 3: %v, want the answer to 2 written twice", err)
	}
}

// upstreamHarness is FuzzLaneVersusSDKUpstream's two endpoints (the
// lane's, then the SDK path's) and the file their server answers from.
type upstreamHarness struct {
	peers      []*fuzzPeer
	answerFile string
	norm       *strings.Replacer
	sizes      replacerFunc
}

// newUpstreamHarness starts the endpoints and waits for their server.
func newUpstreamHarness(tb testing.TB) *upstreamHarness {
	bin, up := realBinary(tb), serverBin(tb)
	root, err := os.MkdirTemp("", "agentctl-fuzz-up-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(root) })
	env := fuzzEnv(tb, root)
	h := &upstreamHarness{answerFile: filepath.Join(root, "answer")}
	if err := os.WriteFile(h.answerFile, nil, 0o644); err != nil {
		tb.Fatal(err)
	}
	spec, err := json.Marshal(map[string]any{"command": up, "args": []string{"-tools", "0", "-craft", "-craft-file", h.answerFile}, "tool_prefix": "up", "timeout": "5m"})
	if err != nil {
		tb.Fatal(err)
	}
	work := filepath.Join(root, "work")
	create := exec.Command(bin, "instance", "create", "--agent", "codex", "--workspace", work, "--mcp-json", "up="+string(spec))
	create.Env, create.Dir = env, work
	out, err := create.Output()
	if err != nil {
		tb.Fatalf("instance create: %v", err)
	}
	id := strings.TrimSpace(string(out))
	h.norm = strings.NewReplacer(id, "$INSTANCE", root, "$WORK", filepath.Dir(bin), "$BIN")
	// The size of an answer over the limit, in its error, counts the id
	// the server wrote, which differs by path ("agentctl-call-12", 7).
	h.sizes = replacerFunc(func(s string) string {
		return overLimit.ReplaceAllString(h.norm.Replace(s), "sent an answer of N bytes")
	})
	h.peers = []*fuzzPeer{
		startFuzzPeer(tb, bin, env, work, id, true, "--log-level", "debug"),
		startFuzzPeer(tb, bin, env, work, id, false, "--log-level", "debug"),
	}
	// A first call of the server's waits for the server's first start;
	// the lane takes calls once it is up.
	for _, p := range h.peers {
		for i := 0; ; i++ {
			if _, _, err := p.upstreamCall(fmt.Sprintf(`"warm-%d"`, i), "warm", false); err != nil {
				tb.Fatalf("%s path: the first call: %v\nstderr:\n%s", p.path, err, tail(p.stderr.String(), 3000))
			}
			if p.path == "sdk" || p.laneCallsWithin(1, time.Second) >= 1 {
				break
			}
		}
	}
	return h
}

// overLimit is the size in the error of an answer over the size limit.
var overLimit = regexp.MustCompile(`sent an answer of [0-9]+ bytes`)

// replacerFunc is a function as a *strings.Replacer is used.
type replacerFunc func(string) string

func (f replacerFunc) Replace(s string) string { return f(s) }

// placeholder finds $ID, $TOKEN and $PAD in an answer.
var placeholder = regexp.MustCompile(`\$(ID|TOKEN|PAD)`)

// upstreamFuzzable says whether the harness sends answer (see the file
// comment): not empty, not too long, and $ID and $TOKEN only as the value
// of a member named id or progressToken (in any case, with any escapes),
// $ID followed by the member's end and in a message's top level.
func upstreamFuzzable(answer []byte) bool {
	if len(answer) == 0 || len(answer) > fuzzMaxAnswer {
		return false
	}
	for _, m := range placeholder.FindAllIndex(answer, -1) {
		var want string
		switch string(answer[m[0]+1 : m[1]]) {
		case "ID":
			// Ended, as the two paths' ids (a string, a number) end alike
			// only where the member does.
			if after := bytes.TrimLeft(answer[m[1]:], " \t"); len(after) == 0 || after[0] != ',' && after[0] != '}' {
				return false
			}
			// A message's id, not a member inside it (a content item's
			// "id", which go-sdk reads as a string).
			line := answer[:m[0]]
			if i := bytes.LastIndexByte(line, '\n'); i >= 0 {
				line = line[i+1:]
			}
			if depth(line) != 1 {
				return false
			}
			want = "id"
		case "TOKEN":
			want = "progressToken"
		default:
			continue
		}
		if !strings.EqualFold(keyBefore(answer[:m[0]]), want) {
			return false
		}
	}
	return true
}

// depth is how many objects and arrays are open at the end of b, strings
// skipped.
func depth(b []byte) int {
	d, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString:
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			d++
		case c == '}' || c == ']':
			d--
		}
	}
	return d
}

// keyBefore is the member name that b ends with ("name": and spaces),
// decoded; "" if it ends with none.
func keyBefore(b []byte) string {
	b = bytes.TrimRight(b, " \t\r\n")
	if !bytes.HasSuffix(b, []byte(":")) {
		return ""
	}
	b = bytes.TrimRight(b[:len(b)-1], " \t\r\n")
	if !bytes.HasSuffix(b, []byte(`"`)) {
		return ""
	}
	for i := len(b) - 2; i >= 0; i-- {
		if b[i] != '"' {
			continue
		}
		var k string
		if json.Unmarshal(b[i:], &k) == nil {
			return k
		}
	}
	return ""
}

// expandPad replaces the first $PAD in answer by bytes "x" (and any other
// by nothing): up to 1 MiB of them, or, for one pad in 256, within 128
// bytes of the 16 MiB line limit (such an input takes a second or more,
// and a fuzzing worker gives up on one that takes 10).
func expandPad(answer []byte, pad uint32) []byte {
	i := bytes.Index(answer, []byte("$PAD"))
	if i < 0 {
		return answer
	}
	n := int(pad>>8) % (1<<20 + 1)
	if pad%256 == 0 {
		n = maxLine - 128 + int(pad>>8)%256
	}
	out := make([]byte, 0, len(answer)+n)
	out = append(out, answer[:i]...)
	out = append(out, bytes.Repeat([]byte("x"), n)...)
	return append(out, bytes.ReplaceAll(answer[i+4:], []byte("$PAD"), nil)...)
}

// upstreamCall calls the server's echo with text, under the request id id
// (JSON), with a progress token "p-N" if progress, and returns the other
// answers and the notifications read until its answer (which is p.last).
func (p *fuzzPeer) upstreamCall(id, text string, progress bool) (others, notes [][]byte, err error) {
	meta := ""
	if progress {
		meta = fmt.Sprintf(`,"_meta":{"progressToken":"p-%s"}`, strings.Trim(id, `"`))
	}
	line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":%q}%s}}`, id, text, meta)
	if _, err := io2(p.stdin, line); err != nil {
		return nil, nil, err
	}
	others, notes, err = p.untilID([]byte(id))
	if err != nil {
		if progress {
			p.abandon([]byte(id), []byte(`"p-`+strings.Trim(id, `"`)+`"`))
		}
		return others, notes, err
	}
	// The harness's ids are new for each call: one answered before that
	// comes again was written twice (no late answer of an abandoned call).
	if p.answered == nil {
		p.answered = map[string]bool{}
	}
	p.answered[id] = true
	for _, l := range others {
		if a := answerID(l); p.answered[string(a)] {
			return others, notes, fmt.Errorf("the answer to %s came a second time: %s", a, preview(l))
		}
	}
	return others, notes, nil
}

// laneCallsWithin is how many calls the lane has taken so far (the
// lane=fast lines of the endpoint's debug log), once it is at least want
// or wait has passed: the log reaches the harness after the answers. It
// keeps only the tail of the log, for messages.
func (p *fuzzPeer) laneCallsWithin(want int, wait time.Duration) int {
	deadline := time.Now().Add(wait)
	for {
		s := p.stderr.Rewrite(func(s string) string {
			return strings.ReplaceAll(tail(s, 8000), "lane=fast", "lane=counted")
		})
		p.lanes += strings.Count(s, "lane=fast")
		if p.lanes >= want || time.Now().After(deadline) {
			return p.lanes
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// upstreamNotes are the distinct notifications, normalised as the
// corpus' but for progress, which is kept whole (its values are the
// server's, from the input, not ticks of a clock), sorted.
func upstreamNotes(notes [][]byte, norm *strings.Replacer) [][]byte {
	var out [][]byte
	seen := map[string]bool{}
	for _, l := range notes {
		l = []byte(norm.Replace(string(l)))
		v, err := decodeJSON(l)
		if err != nil {
			out = append(out, l)
			continue
		}
		if m, _ := v.(map[string]any); m["method"] == "notifications/tools/list_changed" {
			continue
		}
		// Distinct by value, numbers as decimals (1.0 is 1).
		key := string(encodeJSON(canonicalNumbers(v)))
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, l)
	}
	sortLines(out)
	return out
}

// canonicalNumbers is v with each number written as its exact value (a
// fraction), so that equal values encode alike.
func canonicalNumbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, w := range v {
			out[k] = canonicalNumbers(w)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, w := range v {
			out[i] = canonicalNumbers(w)
		}
		return out
	case json.Number:
		return "number:" + numberKey(string(v))
	}
	return v
}

// sortLines sorts lines by their value, numbers by their exact value.
func sortLines(ls [][]byte) {
	key := func(l []byte) string {
		if v, err := decodeJSON(l); err == nil {
			return string(encodeJSON(canonicalNumbers(v)))
		}
		return string(l)
	}
	slices.SortFunc(ls, func(a, b []byte) int { return strings.Compare(key(a), key(b)) })
}

// exactToUpstream checks a path's answer (got) against the server's
// (answer, as written, with $ID in place of the id), where the server's is
// one answer to the call, valid JSON in valid UTF-8 with only JSON-RPC's
// members; for anything else it has nothing to say. A result must reach
// the client with every value the client gets equal to the server's at the
// same place (numbers by exact value; members the server left out or set
// to null may be added, members MCP does not define dropped), unless
// agentctl refused it as no tools/call result (then the paths' agreement
// is all there is to check); an error must reach it with the server's
// code, message and data.
func exactToUpstream(answer, got []byte) error {
	line := bytes.TrimSpace(answer)
	if bytes.ContainsAny(line, "\n\r") || !utf8.Valid(line) || !bytes.Contains(line, []byte(`"id":$ID`)) {
		return nil
	}
	line = bytes.ReplaceAll(line, []byte("$ID"), []byte(`"$ID"`))
	line = bytes.ReplaceAll(line, []byte("$TOKEN"), []byte(`"$TOKEN"`))
	var up map[string]json.RawMessage
	if !json.Valid(line) || json.Unmarshal(line, &up) != nil || string(up["jsonrpc"]) != `"2.0"` || string(up["id"]) != `"$ID"` {
		return nil
	}
	// Only JSON-RPC's members, each written once, plainly.
	keys := 0
	var dup bool
	for _, k := range []string{`"jsonrpc"`, `"id"`, `"result"`, `"error"`} {
		c := bytes.Count(line, []byte(k+":"))
		dup = dup || c > 1
		if c == 1 {
			keys++
		}
	}
	if dup || keys != len(up) || len(up) != 3 {
		return nil
	}
	var client struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(got, &client); err != nil {
		return fmt.Errorf("the answer is no JSON-RPC answer: %v", err)
	}
	if e, ok := up["error"]; ok {
		// Its members by their exact names, as go-sdk reads them.
		var members map[string]json.RawMessage
		if json.Unmarshal(e, &members) != nil || members == nil {
			return nil // no JSON-RPC error object: the paths' agreement is all
		}
		var message string
		code := string(members["code"])
		if !plainInteger(code) || json.Unmarshal(members["message"], &message) != nil || string(members["message"]) == "null" {
			return nil
		}
		wantV := map[string]any{"code": json.Number(code), "message": message}
		if data, ok := members["data"]; ok && string(data) != "null" {
			v, err := decodeJSON(data)
			if err != nil {
				return nil
			}
			wantV["data"] = v
		}
		if client.Error == nil {
			return fmt.Errorf("the server's error became %s", got)
		}
		gotV, err := decodeJSON(client.Error)
		if err != nil || !equalJSON(wantV, gotV) {
			return fmt.Errorf("the server's error %s became %s", e, client.Error)
		}
		return nil
	}
	r, err := decodeJSON(up["result"])
	if err != nil {
		return nil
	}
	if _, ok := r.(map[string]any); !ok {
		return nil // no tools/call result: the paths' agreement is all
	}
	if client.Result == nil {
		return fmt.Errorf("the server's result became %s", got)
	}
	g, err := decodeJSON(client.Result)
	if err != nil {
		return fmt.Errorf("the result is not JSON: %v", err)
	}
	if refused(g) {
		return nil
	}
	if err := sameWhereBoth(r, g, "result"); err != nil {
		return err
	}
	return keptDefined(r, g)
}

// definedMembers are the members MCP (2025-11-25) defines in a tools/call
// result and what it holds, by where they are: "result", a content item by
// its type ("item:text"), "resource", "annotations" and "icon".
var definedMembers = map[string][]string{
	"result":             {"content", "structuredContent", "isError", "_meta"},
	"item:text":          {"type", "text", "annotations", "_meta"},
	"item:image":         {"type", "data", "mimeType", "annotations", "_meta"},
	"item:audio":         {"type", "data", "mimeType", "annotations", "_meta"},
	"item:resource_link": {"type", "uri", "name", "title", "description", "mimeType", "size", "annotations", "icons", "_meta"},
	"item:resource":      {"type", "resource", "annotations", "_meta"},
	"resource":           {"uri", "mimeType", "text", "blob", "_meta"},
	"annotations":        {"audience", "lastModified", "priority"},
	"icon":               {"src", "mimeType", "sizes", "theme"},
}

// eachDefined calls f with each member MCP defines in the result r (a
// decoded value), where it is and its value; where is as in
// definedMembers, and path names the member for messages.
func eachDefined(r any, f func(where, path string, key string, v any, in map[string]any)) {
	var walk func(where, path string, v any)
	walk = func(where, path string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for _, k := range definedMembers[where] {
			w, ok := m[k]
			if !ok {
				continue
			}
			f(where, path+"."+k, k, w, m)
			switch k {
			case "content":
				items, _ := w.([]any)
				for i, it := range items {
					im, _ := it.(map[string]any)
					typ, _ := im["type"].(string)
					walk("item:"+typ, fmt.Sprintf("%s.content[%d]", path, i), it)
				}
			case "resource", "annotations":
				walk(k, path+"."+k, w)
			case "icons":
				icons, _ := w.([]any)
				for i, ic := range icons {
					walk("icon", fmt.Sprintf("%s.icons[%d]", path, i), ic)
				}
			}
		}
	}
	walk("result", "result", r)
}

// keptDefined checks that every member MCP defines in the server's result
// want (not null; isError false and an empty _meta, which mean what their
// absence means, aside) is in the client's got.
func keptDefined(want, got any) error {
	var missing []string
	paths := map[string]bool{}
	eachDefined(got, func(_, path, _ string, _ any, _ map[string]any) { paths[path] = true })
	eachDefined(want, func(_, path, k string, v any, _ map[string]any) {
		switch {
		case v == nil, k == "isError" && v == false:
			return
		case k == "_meta":
			if m, ok := v.(map[string]any); ok && len(m) == 0 {
				return
			}
		}
		if !paths[path] {
			missing = append(missing, path)
		}
	})
	if len(missing) > 0 {
		return fmt.Errorf("members MCP defines were dropped: %s", strings.Join(missing, ", "))
	}
	return nil
}

// emptyDefined reports whether answer, one answer with a result, has a
// member MCP defines that go-sdk's types leave out when it is empty (their
// json tags say omitempty): an empty string, list or zero priority.
func emptyDefined(answer []byte) bool {
	line := bytes.ReplaceAll(bytes.TrimSpace(answer), []byte("$ID"), []byte(`"$ID"`))
	var a struct {
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(line, &a) != nil {
		return false
	}
	r, err := decodeJSON(a.Result)
	if err != nil {
		return false
	}
	found := false
	eachDefined(r, func(where, _, k string, v any, _ map[string]any) {
		switch v := v.(type) {
		case string:
			found = found || v == "" && k != "type" && k != "data" && k != "src" &&
				!(k == "text" && where == "item:text") && !(k == "mimeType" && (where == "item:image" || where == "item:audio")) &&
				!(k == "uri" && where == "resource")
		case []any:
			found = found || len(v) == 0 && k != "content"
		case json.Number:
			found = found || k == "priority" && numberKey(string(v)) == "0"
		}
	})
	return found
}

// refused reports whether a result is agentctl's tool error for an answer
// it could not read or pass on (proxy.AnswerUnreadable).
func refused(v any) bool {
	m, _ := v.(map[string]any)
	content, _ := m["content"].([]any)
	if m["isError"] != true || len(content) != 1 {
		return false
	}
	item, _ := content[0].(map[string]any)
	text, _ := item["text"].(string)
	return strings.HasPrefix(text, `MCP server "up" sent`)
}

// plainInteger reports whether s is an integer written without fraction or
// exponent that an int64 holds (a JSON-RPC error code as go-sdk reads it).
func plainInteger(s string) bool {
	var b big.Int
	if _, ok := b.SetString(s, 10); !ok {
		return false
	}
	return b.IsInt64()
}

// sameWhereBoth compares the server's value want with the client's got:
// equal by value wherever both have a member (numbers exactly); a member
// want lacks or has as null may be in got, and one got lacks may be in
// want (dropped, as MCP does not define it).
func sameWhereBoth(want, got any, at string) error {
	if want == nil {
		return nil
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %s became %s", at, encodeJSON(want), encodeJSON(got))
		}
		for k, wv := range w {
			if gv, ok := g[k]; ok {
				if err := sameWhereBoth(wv, gv, at+"."+k); err != nil {
					return err
				}
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("%s: %s became %s", at, encodeJSON(want), encodeJSON(got))
		}
		for i := range w {
			if err := sameWhereBoth(w[i], g[i], fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if !equalJSON(want, got) {
		return fmt.Errorf("%s: %s became %s", at, encodeJSON(want), encodeJSON(got))
	}
	return nil
}

// TestNumberKey: numbers compare by exact value, however written.
func TestNumberKey(t *testing.T) {
	for _, eq := range [][]string{
		{"1", "1.0", "1e0", "10e-1", "0.1e1", "1E+0"},
		{"0", "-0", "0.000", "0e99"},
		{"12345678901234567890", "1.234567890123456789e19"},
		{"1234567e901234567890", "1.234567e901234567896"},
		{"-2.50", "-25e-1"},
	} {
		for _, n := range eq[1:] {
			if numberKey(n) != numberKey(eq[0]) {
				t.Errorf("%s and %s: keys %s, %s", eq[0], n, numberKey(eq[0]), numberKey(n))
			}
		}
	}
	for _, ne := range [][2]string{{"1", "-1"}, {"12345678901234567890", "12345678901234567000"}, {"0.1", "0.1000000000000000000001"}, {"1e400", "1e401"}} {
		if numberKey(ne[0]) == numberKey(ne[1]) {
			t.Errorf("%s and %s have one key, %s", ne[0], ne[1], numberKey(ne[0]))
		}
	}
}
