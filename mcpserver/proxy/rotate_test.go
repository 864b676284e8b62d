package proxy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func readLog(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

func TestRotatingFileRotatesPastItsBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "upstreams.log")
	os.WriteFile(path, []byte("old 1\n"), 0o600) // appended to, its size counted
	r, err := OpenRotatingFile(path, 20)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := 2; i <= 7; i++ {
		fmt.Fprintf(r, "line %d\n", i) // 7 bytes each
	}
	// 6+7+7 = 20; line 4 would pass 20: rotate. Line 6 likewise: the first .1 is gone.
	if got, want := readLog(t, path+".1"), "line 4\nline 5\n"; got != want {
		t.Errorf("upstreams.log.1 = %q; want %q", got, want)
	}
	if got, want := readLog(t, path), "line 6\nline 7\n"; got != want {
		t.Errorf("upstreams.log = %q; want %q", got, want)
	}
	r.Close()
	if _, err := r.Write([]byte("x\n")); err == nil {
		t.Error("Write after Close succeeded")
	}
}

// Several servers' stderr copiers write at once: every line lands whole,
// and neither file passes the bound.
func TestRotatingFileConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "upstreams.log")
	const max = 1000
	r, err := OpenRotatingFile(path, max)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 200 {
				fmt.Fprintf(r, "[server%d] line %03d\n", w, i)
			}
		})
	}
	wg.Wait()
	for _, p := range []string{path, path + ".1"} {
		got := readLog(t, p)
		if len(got) > max || len(got) == 0 {
			t.Errorf("%s has %d bytes; want 1 to %d", filepath.Base(p), len(got), max)
		}
		for l := range strings.Lines(got) {
			if !strings.HasPrefix(l, "[server") || len(l) != len("[server0] line 000\n") {
				t.Errorf("%s: torn line %q", filepath.Base(p), l)
			}
		}
	}
}
