package kb

import (
	"fmt"
	"slices"
	"testing"
)

func TestIndexCompaction(t *testing.T) {
	x := newIndex()
	an := newAnalyzer()
	x.add("keep", 1, 1, an.analyze([]byte("# Keep\nsteady words")))
	for i := range 3000 {
		x.add(fmt.Sprintf("churn%d", i%3), 1, 1, an.analyze([]byte(fmt.Sprintf("round%d common", i))))
		x.maybeCompact()
	}
	if x.live != 4 || len(x.docs) > 1100 || len(x.byID) != 4 {
		t.Fatalf("live %d, docs %d: tombstones not compacted", x.live, len(x.docs))
	}
	hits := x.search([]string{"common", "steady", "round2999"}, 10)
	var ids []string
	for _, h := range hits {
		ids = append(ids, h.id)
	}
	if !slices.Equal(ids, []string{"churn2", "keep", "churn0", "churn1"}) || hits[1].title != "Keep" {
		t.Fatalf("after compaction: %+v", hits)
	}
	if h := x.search([]string{"round5"}, 10); len(h) != 0 {
		t.Fatalf("removed content still found: %+v", h)
	}
}
