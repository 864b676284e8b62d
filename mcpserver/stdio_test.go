package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/agents"
	"github.com/agentctl/agentctl/internal/testkit"
	"github.com/agentctl/agentctl/mcpserver/mount"
)

// serveInput serves ep on OS pipes, as `agentctl mcp serve` is served when
// requests are piped into it: the input holds the lines and then ends. It
// returns what ServeStdio wrote, once it has returned.
func serveInput(t *testing.T, ep *Endpoint, lines ...string) []byte {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inR.Close()
	go func() {
		for _, l := range lines {
			if _, err := inW.WriteString(l + "\n"); err != nil {
				break
			}
		}
		inW.Close()
	}()
	out := &testkit.Buffer{}
	done := make(chan error, 1)
	go func() { done <- ep.ServeStdio(context.Background(), inR, out) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ServeStdio: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("ServeStdio did not return after its input ended")
	}
	return []byte(out.String())
}

// answers returns the answers in out by request id.
func answers(t *testing.T, out []byte) map[string]string {
	t.Helper()
	got := map[string]string{}
	for line := range bytes.Lines(out) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("not JSON-RPC: %q", line)
		}
		if m.Method == "" && m.ID != nil {
			got[string(m.ID)] = string(line)
		}
	}
	return got
}

const (
	initializeLine  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	initializedLine = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

func requestLine(id int, method, params string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)
}

// TestServeStdioAnswersEveryRequestReadBeforeEOF: requests piped in, then
// the end of the input. Every request is answered before ServeStdio
// returns, with the fast lane and without, also a call of an external
// server still running when the input ends. (go-sdk stops writing answers
// when its input ends: before the input guard held it open, a lone
// initialize was answered in some runs only.) Each case runs many times:
// the loss was a race.
func TestServeStdioAnswersEveryRequestReadBeforeEOF(t *testing.T) {
	t.Parallel()
	server := mount.Mount{Kind: mount.KindServer, Name: "up", Command: serverBin(t)}
	cases := []struct {
		name   string
		mounts []mount.Mount
		lines  []string
		runs   int
	}{
		{"a lone initialize", nil, []string{initializeLine}, 20},
		{"initialize, tools/list, a built-in", nil, []string{initializeLine, initializedLine,
			requestLine(2, "tools/list", `{}`), requestLine(3, "tools/call", `{"name":"get_instance","arguments":{}}`)}, 20},
		{"an external server's calls", []mount.Mount{server}, []string{initializeLine, initializedLine,
			requestLine(2, "tools/list", `{}`), requestLine(3, "tools/call", `{"name":"echo","arguments":{"text":"hi"}}`),
			requestLine(4, "tools/call", `{"name":"slow","arguments":{"ms":50}}`)}, 5},
	}
	for _, noLane := range []bool{false, true} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/noLane=%v", c.name, noLane), func(t *testing.T) {
				t.Parallel()
				for run := range c.runs {
					cfg := testConfig(agents.NamespacingSuffix, newFakeStore())
					// A backstop: every answer here comes at once.
					cfg.Mounts, cfg.NoFastLane, cfg.DrainTimeout = c.mounts, noLane, time.Minute
					ep, err := New(cfg)
					if err != nil {
						t.Fatal(err)
					}
					got := answers(t, serveInput(t, ep, c.lines...))
					var missing []string
					for _, l := range c.lines {
						if id := requestID(l); id != "" && got[id] == "" {
							missing = append(missing, id)
						}
					}
					if len(missing) > 0 {
						t.Fatalf("run %d of %d: no answer to request %s; answered %v", run+1, c.runs, strings.Join(missing, ", "), slices.Sorted(maps.Keys(got)))
					}
					if c.mounts != nil && !strings.Contains(got["4"], `slow: done after 50ms`) {
						t.Fatalf("run %d: the call running at the end of the input: %s", run+1, got["4"])
					}
				}
			})
		}
	}
}

// requestID is the id of a request line, "" for a notification.
func requestID(line string) string {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal([]byte(line), &m)
	return string(m.ID)
}

// TestServeStdioBoundsTheWaitAtEOF: a call that is still unanswered
// [Config.DrainTimeout] after the input ended (a hung server) is answered
// with an error, not dropped, and the endpoint ends; with the fast lane
// and without. (The other calls are answered before the input ends, so
// that only the hung one waits for the bound.)
func TestServeStdioBoundsTheWaitAtEOF(t *testing.T) {
	t.Parallel()
	server := mount.Mount{Kind: mount.KindServer, Name: "up", Command: serverBin(t)}
	for _, noLane := range []bool{false, true} {
		t.Run(fmt.Sprintf("noLane=%v", noLane), func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(agents.NamespacingSuffix, newFakeStore())
			cfg.Mounts, cfg.NoFastLane, cfg.DrainTimeout = []mount.Mount{server}, noLane, 300*time.Millisecond
			ep, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			inR, inW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			outR, outW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer inR.Close()
			defer outR.Close()
			done := make(chan error, 1)
			go func() {
				done <- ep.ServeStdio(context.Background(), inR, outW)
				outW.Close()
			}()
			p := newRawPeer(inW, outR)
			p.initialize(t)
			if ans, _ := p.request(t, "tools/call", `{"name":"echo","arguments":{"text":"hi"}}`); !bytes.Contains(ans, []byte(`"text":"hi"`)) {
				t.Fatalf("echo: %s", ans)
			}
			p.send(t, requestLine(99, "tools/call", `{"name":"slow","arguments":{"ms":600000}}`))
			inW.Close()
			var hung []byte
			for {
				line, err := p.r.ReadBytes('\n')
				if err != nil {
					break
				}
				if bytes.HasPrefix(line, []byte(`{"jsonrpc":"2.0","id":99,`)) {
					hung = line
				}
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("ServeStdio: %v", err)
				}
			case <-time.After(time.Minute):
				t.Fatal("ServeStdio did not return")
			}
			want := `{"jsonrpc":"2.0","id":99,"error":{"code":-32004,"message":"server is closing: no answer within 300ms after the client's input ended"}}` + "\n"
			if string(hung) != want {
				t.Fatalf("the hung call:\n got %s\nwant %s", hung, want)
			}
		})
	}
}

// TestServeStdioDoesNotWaitForWhatGetsNoAnswer: at the end of the input
// the endpoint does not wait for a request the client cancelled, nor for
// a 2026-07-28 client's subscriptions/listen (answered only when torn
// down). With a drain bound of an hour, waiting for either would hit the
// test's backstop.
func TestServeStdioDoesNotWaitForWhatGetsNoAnswer(t *testing.T) {
	t.Parallel()
	server := mount.Mount{Kind: mount.KindServer, Name: "up", Command: serverBin(t)}
	for _, noLane := range []bool{false, true} {
		t.Run(fmt.Sprintf("noLane=%v", noLane), func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(agents.NamespacingSuffix, newFakeStore())
			cfg.Mounts, cfg.NoFastLane, cfg.DrainTimeout = []mount.Mount{server}, noLane, time.Hour
			ep, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			got := answers(t, serveInput(t, ep,
				requestLine(1, "tools/list", `{`+statelessMeta+`}`),
				requestLine(2, "subscriptions/listen", `{"notifications":{"toolsListChanged":true},`+statelessMeta+`}`),
				requestLine(3, "tools/call", `{"name":"slow","arguments":{"ms":600000},`+statelessMeta+`}`),
				`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`))
			if !strings.Contains(got["1"], `"tools":[`) {
				t.Fatalf("tools/list: %s", got["1"])
			}
		})
	}
}
