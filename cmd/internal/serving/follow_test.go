package serving

import (
	"slices"
	"testing"
	"time"

	"github.com/agentctl/agentctl/instance"
)

// Restart requests in quick succession are each carried out: the endpoint
// compares each server's time, not the latest request alone.
func TestRestartsDue(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	t1, t2 := t0.Add(time.Second), t0.Add(2*time.Second)
	for _, c := range []struct {
		name        string
		before, now map[string]time.Time
		all         bool
		names       []string
	}{
		{"none", nil, nil, false, nil},
		{"unchanged", map[string]time.Time{"a": t0}, map[string]time.Time{"a": t0}, false, nil},
		{"two in a row", map[string]time.Time{"a": t0}, map[string]time.Time{"a": t1, "b": t2}, false, []string{"a", "b"}},
		{"all", nil, map[string]time.Time{instance.RestartAll: t1, "b": t0}, true, []string{instance.RestartAll, "b"}},
		{"all again", map[string]time.Time{instance.RestartAll: t0}, map[string]time.Time{instance.RestartAll: t1}, true, []string{instance.RestartAll}},
	} {
		all, names := restartsDue(c.before, c.now)
		if all != c.all || !slices.Equal(names, c.names) {
			t.Errorf("%s: got %v %v, want %v %v", c.name, all, names, c.all, c.names)
		}
	}
}
