package kb

import (
	"context"
	"io/fs"
	"time"
)

// refresh builds the index, or brings it up to date when the last refresh
// started longer than maxAge ago.
func (kb *Base) refresh(ctx context.Context, maxAge time.Duration) error {
	fresh := func() bool {
		last := kb.lastRefresh.Load()
		return last != 0 && time.Since(time.Unix(0, last)) < maxAge
	}
	if fresh() {
		return nil
	}
	kb.mu.Lock()
	defer kb.mu.Unlock()
	if kb.closed.Load() {
		return kb.usable(ctx)
	}
	if fresh() { // another search refreshed while we waited
		return nil
	}
	start := time.Now()
	files, err := kb.scan(ctx, "")
	if err != nil {
		return err
	}
	// Only refresh and Write change the index, both under kb.mu: reading
	// it here needs no idxMu.
	idx, building := kb.idx, kb.idx == nil
	if building {
		idx = newIndex()
	}
	var changed []file
	present := make(map[string]bool, len(files))
	for _, f := range files {
		if f.size > kb.opts.MaxBytes {
			continue // unreadable through agentctl: not searchable either
		}
		present[f.id] = true
		if d, ok := idx.byID[f.id]; ok && idx.docs[d].size == f.size && idx.docs[d].mtime == f.mtime {
			continue
		}
		changed = append(changed, f)
	}
	var removed []string
	for id := range idx.byID {
		if !present[id] {
			removed = append(removed, id)
		}
	}
	lock, unlock := kb.idxMu.Lock, kb.idxMu.Unlock
	if building { // not published yet
		lock, unlock = func() {}, func() {}
	}
	lock()
	for _, id := range removed {
		idx.remove(id)
	}
	unlock()

	// Read and analyse the changed files in parallel; apply each at once,
	// so the transient analyses never pile up.
	type analysed struct {
		id          string
		size, mtime int64
		doc         analysis
		gone        bool
	}
	results := make(chan analysed, 64)
	var readErr error
	go func() {
		analyzers := make([]*analyzer, workers(len(changed)))
		readErr = forEach(ctx, len(changed), func(w, i int) {
			if analyzers[w] == nil {
				analyzers[w] = newAnalyzer()
			}
			id := changed[i].id
			now := time.Now()
			data, fi, err := kb.readConcept(id)
			if err != nil {
				results <- analysed{id: id, gone: true}
				return
			}
			results <- analysed{id: id, size: fi.Size(), mtime: indexMtime(fi, now), doc: analyzers[w].analyze(data)}
		})
		close(results)
	}()
	for r := range results {
		lock()
		if r.gone {
			idx.remove(r.id)
		} else {
			idx.add(r.id, r.size, r.mtime, r.doc)
		}
		unlock()
	}
	if readErr != nil {
		return readErr
	}
	lock()
	idx.maybeCompact()
	unlock()
	if building {
		idx.trim()
		kb.idxMu.Lock()
		if kb.closed.Load() {
			kb.idxMu.Unlock()
			return kb.usable(ctx)
		}
		kb.idx = idx
		kb.idxMu.Unlock()
		if !kb.bgStarted {
			kb.bgStarted = true
			kb.bgDone.Go(kb.backgroundRefresh)
		}
	}
	kb.lastRefresh.Store(start.UnixNano())
	return nil
}

// activeWindow is how long after a search the background refresher keeps
// walking (at least twice RefreshInterval).
const activeWindow = time.Minute

// backgroundRefresh keeps the index of a knowledge base in use fresh, so
// that searches do not wait for the stat walk: while there was a search
// within activeWindow, it refreshes every RefreshInterval/2, so the index
// a search finds is never older than RefreshInterval. Once searches stop it
// idles; the next search then walks itself before answering.
func (kb *Base) backgroundRefresh() {
	every := max(kb.opts.RefreshInterval/2, time.Millisecond)
	active := max(activeWindow, 2*kb.opts.RefreshInterval)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-kb.bgCtx.Done():
			return
		case <-t.C:
		}
		if time.Since(time.Unix(0, kb.lastSearch.Load())) > active {
			continue
		}
		// An error (the folder vanished, say) leaves the index as it was;
		// the next search's own refresh reports it.
		_ = kb.refresh(kb.bgCtx, every)
	}
}

// racyWindow: a file modified this close to when it was read may be
// modified again within the file system's timestamp granularity without its
// modification time changing. Such a file is indexed with mtime -1, so the
// next refresh reads it again.
const racyWindow = time.Second

func indexMtime(fi fs.FileInfo, readAt time.Time) int64 {
	if readAt.Sub(fi.ModTime()) < racyWindow {
		return -1
	}
	return fi.ModTime().UnixNano()
}
