package main

import (
	"context"
	"errors"
	"slices"

	"github.com/agentctl/agentctl/instance"
)

// minShortID is the fewest characters of an instance id a table shows: a
// ULID's first 8 characters are its creation time to about a second, so
// that ids made apart look apart.
const minShortID = 8

// resolver finds the instance a reference names, as every command that
// takes an instance does ([instance.Store.Get]).
type resolver interface {
	Get(ctx context.Context, ref string) (*instance.Record, error)
}

// shortIDs gives each of ids the shortest prefix of it, of at least
// [minShortID] characters, that `instance show` takes for it: unique among
// every instance in the store (not only those listed) and no instance's
// label. The listed ids give the first guess (the shortest prefix unique
// among them); the store then resolves each guess as a command would,
// lengthening it while it names another instance, or several. A prefix
// that cannot be checked (the store failed, the instance was deleted
// meanwhile) is the whole id. The cost is a lookup per id, and more for
// ids that share a long prefix with one not listed.
func shortIDs(ctx context.Context, st resolver, ids []string) map[string]string {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	out := make(map[string]string, len(sorted))
	for i, id := range sorted {
		n := minShortID
		if i > 0 {
			n = max(n, commonPrefixLen(id, sorted[i-1])+1)
		}
		if i+1 < len(sorted) {
			n = max(n, commonPrefixLen(id, sorted[i+1])+1)
		}
		for n < len(id) {
			r, err := st.Get(ctx, id[:n])
			if err == nil && r.ID == id {
				break
			}
			if err == nil {
				n++ // the label of another instance
				continue
			}
			amb, ok := errors.AsType[*instance.AmbiguousError](err)
			if !ok {
				n = len(id)
				break
			}
			longer := n + 1
			for _, m := range amb.Matches {
				if m != id {
					longer = max(longer, commonPrefixLen(id, m)+1)
				}
			}
			n = longer
		}
		out[id] = id[:min(n, len(id))]
	}
	return out
}

// commonPrefixLen is the length of the longest common prefix of a and b,
// in bytes (ids are ASCII).
func commonPrefixLen(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
