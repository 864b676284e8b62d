package kb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestTempFiles(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		t.Run(fmt.Sprint("read-only=", readOnly), func(t *testing.T) {
			stale := ".a.md" + tempMarker + "0011"
			fresh := ".a.md" + tempMarker + "2233"
			kb, dir := openTest(t, "docs", map[string]string{
				"a.md": "alpha", "sub/" + stale: "half a write", stale: "half", fresh: "in flight",
			}, Options{ReadOnly: readOnly})
			old := time.Now().Add(-2 * defaultStaleTempAge)
			for _, p := range []string{stale, "sub/" + stale} {
				if err := os.Chtimes(filepath.Join(dir, p), old, old); err != nil {
					t.Fatal(err)
				}
			}
			l, err := kb.List(context.Background(), "", "", 0)
			if err != nil || len(l.Concepts) != 1 || l.Concepts[0].ID != "a" {
				t.Fatalf("list %v %v", l, err)
			}
			if s, _ := kb.Search(context.Background(), "half write flight", 10); len(s.Results) != 0 {
				t.Fatalf("temporary files searched: %v", s.Results)
			}
			for p, wantGone := range map[string]bool{stale: !readOnly, "sub/" + stale: !readOnly, fresh: false} {
				_, err := os.Stat(filepath.Join(dir, p))
				if gone := errors.Is(err, os.ErrNotExist); gone != wantGone {
					t.Errorf("%s: removed=%v, want %v", p, gone, wantGone)
				}
			}
		})
	}
}
