package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkNotifyLatency measures how long a question takes to reach a
// [[notify]] receiver (issue 25 item 2: "within a second"): an `agentctl
// mcp serve` process of an Auggie instance that asks through the store,
// driven over stdio, is sent ask_user_question; the receiver, a local
// HTTP server, stamps the signed POST's arrival. Alternately, as the
// floor, the same endpoint's report_progress round trip: a tool call that
// writes the store and answers. Reported: ms-question-to-hook/median, /p90
// and ms-progress-call/median. Each question is answered through the store
// afterwards, timer stopped.
//
//	go test -run '^$' -bench NotifyLatency -benchtime 20x -count 3 ./cmd/agentctl
func BenchmarkNotifyLatency(b *testing.B) {
	bin := realBinary(b)
	hooks := make(chan time.Time, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		io.Copy(io.Discard, r.Body)
		if r.Header.Get("X-Agentctl-Signature") == "" {
			http.Error(w, "unsigned", http.StatusBadRequest)
			return
		}
		hooks <- at
	}))
	b.Cleanup(srv.Close)
	env, _ := benchEnv(b)
	cfgDir := filepath.Join(envValue(env, "XDG_CONFIG_HOME"), "agentctl")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		b.Fatal(err)
	}
	cfg := fmt.Sprintf("[[notify]]\nurl = %q\nevents = [\"question\"]\nsecret = \"bench-secret\"\n", srv.URL)
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := []string{"instance", "create", "--agent", "auggie", "--ask-via", "store", "--workspace", b.TempDir(), "-o", "json", "--jq", ".id"}
	out, err := runOutput(bin, env, cmd...)
	if err != nil {
		b.Fatalf("instance create: %v\n%s", err, out)
	}
	id := strings.Trim(strings.TrimSpace(out), `"`)
	ask := benchToolName(b, bin, env, id, "ask_user_question")
	progress := benchToolName(b, bin, env, id, "report_progress")
	st := openBenchStore(b, env)
	b.Cleanup(func() { st.Close() })
	peer := startBenchStdioPeer(b, bin, env, "mcp", "serve", "--instance", id)
	var toHook, call []time.Duration
	next := 100
	for i := 0; b.Loop(); i++ {
		for j := range 2 {
			next++
			if (i+j)%2 == 0 {
				start := time.Now()
				peer.send(b, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"message":"step %d"}}}`, next, progress, next))
				l := peer.await(b, next, 30*time.Second)
				call = append(call, l.at.Sub(start))
				continue
			}
			start := time.Now()
			peer.send(b, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"question":"Ship %d?"}}}`, next, ask, next))
			select {
			case at := <-hooks:
				toHook = append(toHook, at.Sub(start))
			case <-time.After(30 * time.Second):
				b.Fatalf("no notification within 30s:\n%s", peer.stderr())
			}
			b.StopTimer()
			qs, err := st.Questions(context.Background(), id, false)
			if err != nil || len(qs) != 1 {
				b.Fatalf("open questions: %v %d", err, len(qs))
			}
			if _, err := st.Answer(context.Background(), id, qs[0].ID, "yes", true); err != nil {
				b.Fatal(err)
			}
			peer.await(b, next, 30*time.Second)
			b.StartTimer()
		}
	}
	b.ReportMetric(benchQuantileMs(toHook, 0.5), "ms-question-to-hook/median")
	b.ReportMetric(benchQuantileMs(toHook, 0.9), "ms-question-to-hook/p90")
	b.ReportMetric(benchQuantileMs(call, 0.5), "ms-progress-call/median")
}

// envValue is the value of variable k in env.
func envValue(env []string, k string) string {
	v := ""
	for _, kv := range env {
		if s, ok := strings.CutPrefix(kv, k+"="); ok {
			v = s
		}
	}
	return v
}

// runOutput runs bin with args in env and returns its stdout.
func runOutput(bin string, env []string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return string(out) + string(benchStderr(err)), err
	}
	return string(out), nil
}
