package main

import (
	"context"
	"slices"
)

// minShortID is the fewest characters of an instance id a table shows: a
// ULID's first 8 characters are its creation time to about a second, so
// that ids made apart look apart.
const minShortID = 8

// idSource lists every instance id with its label ([instance.Store.IDs]).
type idSource interface {
	IDs(ctx context.Context) (map[string]string, error)
}

// shortIDs gives each of ids the shortest prefix of it, of at least
// [minShortID] characters, that `instance show` takes for it: unique among
// every instance in the store (not only those listed), read in one query,
// and no other instance's label (a reference names the instance with that
// label first). A store that cannot be read gives whole ids.
func shortIDs(ctx context.Context, st idSource, ids []string) map[string]string {
	out := make(map[string]string, len(ids))
	stored, err := st.IDs(ctx)
	if err != nil {
		for _, id := range ids {
			out[id] = id
		}
		return out
	}
	all := make([]string, 0, len(stored)+len(ids))
	labels := make(map[string]string, len(stored)) // label → id
	for id, label := range stored {
		all = append(all, id)
		if label != "" {
			labels[label] = id
		}
	}
	all = append(all, ids...) // listed ids deleted since still get a prefix
	slices.Sort(all)
	all = slices.Compact(all)
	for _, id := range ids {
		i, _ := slices.BinarySearch(all, id)
		n := minShortID
		if i > 0 {
			n = max(n, commonPrefixLen(id, all[i-1])+1)
		}
		if i+1 < len(all) {
			n = max(n, commonPrefixLen(id, all[i+1])+1)
		}
		for n < len(id) {
			if owner, ok := labels[id[:n]]; !ok || owner == id {
				break
			}
			n++
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
