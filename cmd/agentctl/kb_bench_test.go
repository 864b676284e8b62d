package main

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeKBCorpus writes n concepts of about 2 KB in 100 folders: a title, a
// heading and sentences of words drawn from a Zipf distribution over a
// 4,000-word vocabulary (as the kb package's BenchmarkKBSearch does). It
// returns a query of a middling and a rare word.
func writeKBCorpus(b *testing.B, dir string, n int) string {
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 4000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%x%c", i*7919%65536, 'a'+rune(i%26))
	}
	zipf := rand.NewZipf(rng, 1.07, 2, uint64(len(vocab)-1))
	for i := range n {
		var sb strings.Builder
		title := vocab[100+rng.IntN(3900)] + " " + vocab[zipf.Uint64()]
		fmt.Fprintf(&sb, "---\ntitle: %s\n---\n\n# %s\n\n", title, title)
		for sb.Len() < 2<<10 {
			for range 12 {
				sb.WriteString(vocab[zipf.Uint64()])
				sb.WriteByte(' ')
			}
			sb.WriteString(".\n")
		}
		p := filepath.Join(dir, fmt.Sprintf("area%02d", i%100), fmt.Sprintf("topic%05d.md", i))
		if i < 100 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	// Older than the racy window, as a folder checked out a while ago is.
	old := time.Now().Add(-time.Hour)
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			err = os.Chtimes(p, old, old)
		}
		return err
	})
	return vocab[300] + " " + vocab[2500]
}

// BenchmarkKBProcess measures the knowledge-base search index through the
// built binary, each run a whole process, with `agentctl version` (process
// start and exit) as the floor in the same run:
//
//	go test -run '^$' -bench KBProcess -benchtime 10x ./cmd/agentctl
//
// first_search_fresh and first_search_stale are `kb search DIR QUERY` in a
// new process, the index built by an earlier one: fresh (reconciled within
// the refresh interval, so no walk) and stale (interval 1ns: the stat walk
// of every file, nothing changed, is part of every run). index_build is `kb
// index DIR` with no index yet, with its peak RSS ("MiB-maxrss"), against
// read_files, reading every file once (the floor: what any index must do).
func BenchmarkKBProcess(b *testing.B) {
	bin := realBinary(b)
	for _, n := range []int{10_000, 50_000} {
		b.Run(fmt.Sprintf("concepts=%d", n), func(b *testing.B) {
			env, state := benchEnv(b)
			dir := filepath.Join(b.TempDir(), "kb")
			query := writeKBCorpus(b, dir, n)
			indexDir := filepath.Join(state, "kb")
			b.Run("baseline_version", func(b *testing.B) { runProcess(b, bin, env, "version") })
			b.Run("read_files", func(b *testing.B) {
				var ds []time.Duration
				for b.Loop() {
					start := time.Now()
					err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
						if err == nil && !d.IsDir() {
							_, err = os.ReadFile(p)
						}
						return err
					})
					ds = append(ds, time.Since(start))
					if err != nil {
						b.Fatal(err)
					}
				}
				reportMedian(b, ds)
			})
			b.Run("index_build", func(b *testing.B) {
				var ds []time.Duration
				var rss int64
				for b.Loop() {
					if err := os.RemoveAll(indexDir); err != nil {
						b.Fatal(err)
					}
					cmd := exec.Command(bin, "kb", "index", dir)
					cmd.Env = env
					start := time.Now()
					if out, err := cmd.CombinedOutput(); err != nil {
						b.Fatalf("%v\n%s", err, out)
					}
					ds = append(ds, time.Since(start))
					rss = max(rss, maxRSSKiB(cmd.ProcessState))
				}
				reportMedian(b, ds)
				b.ReportMetric(float64(rss)/1024, "MiB-maxrss")
			})
			b.Run("first_search_fresh", func(b *testing.B) {
				runProcess(b, bin, append(env, "AGENTCTL_KB_REFRESH_INTERVAL=1h"), "kb", "search", dir, query)
			})
			b.Run("first_search_stale", func(b *testing.B) {
				runProcess(b, bin, append(env, "AGENTCTL_KB_REFRESH_INTERVAL=1ns"), "kb", "search", dir, query)
			})
		})
	}
}
