package testkit

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

func TestBuffer(t *testing.T) {
	b := NewBuffer("ready")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { fmt.Fprintf(b, "w%d ", i) })
	}
	wg.Wait()
	select {
	case <-b.Seen():
		t.Fatal("Seen before the text was written")
	default:
	}
	fmt.Fprint(b, "rea")
	fmt.Fprint(b, "dy")
	<-b.Seen() // written in two parts: seen once whole
	if got := b.Rewrite(func(s string) string { return "kept" }); len(got) != 8*3+5 {
		t.Errorf("Rewrite returned %q", got)
	}
	if b.String() != "kept" {
		t.Errorf("after Rewrite: %q", b.String())
	}
}

func TestEventually(t *testing.T) {
	n := 0
	Eventually(t, "three polls", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Errorf("polled %d times", n)
	}
}

func TestBuild(t *testing.T) {
	path := Build(t, "minimal", "CGO_ENABLED=0")
	if fi, err := os.Stat(path); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("built %s: %v", path, err)
	}
}
